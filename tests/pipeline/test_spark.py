"""The Spark path gives the plain path's rows: data sources, jobs, local[1] and local[2]."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kwire.pipeline import jobs
from kwire.pipeline.dlq import dlq_row
from kwire.pipeline.logs import iter_log_records, plan_log_slices
from kwire.pipeline.traffic import traffic_rows

from .dlq_dirs import write_dlq_dirs

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]  # one JVM per xdist worker: keep them on one

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"
ROOT = Path(__file__).resolve().parents[2]


def _canon(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=lambda b: b.hex()) for r in rows)


def _spark_rows(df: Any) -> list[dict[str, Any]]:
    return df.toArrow().to_pylist()


def test_pcap_source_sharded_by_connection_gives_the_plain_rows(spark: Any) -> None:
    plain, issues = traffic_rows([str(FIXTURES / n) for n in sorted(os.listdir(FIXTURES)) if n.endswith(".pcapng")])
    df = (spark.read.format("kwire-pcap").option("minPartitions", "8").option("targetPartitionBytes", "40000")
          .load(str(FIXTURES)))
    assert df.rdd.getNumPartitions() == 10  # three captures in three connection shards each, one whole
    assert _canon(_spark_rows(df)) == _canon(plain)
    got_issues = spark.read.format("kwire-pcap").option("table", "capture_issues").load(str(FIXTURES))
    assert _canon(_spark_rows(got_issues)) == _canon(issues)


def test_log_source_cut_at_batch_boundaries_gives_the_plain_rows(spark: Any, tmp_path: Path) -> None:
    root = write_dlq_dirs(tmp_path / "logs")
    slices, _ = plan_log_slices(root)
    plain = [dlq_row(r) for s in slices for r in iter_log_records(s)]
    df = spark.read.format("kwire-log").option("table", "dlq_records").option("targetPartitionBytes", "700").load(str(root))
    assert df.rdd.getNumPartitions() > 2
    assert _canon(_spark_rows(df)) == _canon(plain)


def test_jobs_summaries_match_the_plain_jobs(spark: Any, tmp_path: Path) -> None:
    from kwire.pipeline.spark import jobs as sjobs

    root = write_dlq_dirs(tmp_path / "logs")
    s_t = sjobs.traffic_job(spark, [str(FIXTURES)], tmp_path / "spark_t")
    p_t = jobs.traffic_job([str(FIXTURES)], tmp_path / "plain_t")
    assert s_t.summary == p_t.summary and s_t.tables == p_t.tables
    s_d = sjobs.dlq_job(spark, root, tmp_path / "spark_d")
    p_d = jobs.dlq_job(root, tmp_path / "plain_d")
    assert s_d.summary == p_d.summary and s_d.tables == p_d.tables and s_d.notes == p_d.notes
    assert (tmp_path / "spark_d" / "dlq_report.html").read_text().count("<svg") >= 3


def test_the_dlq_job_can_take_some_topics_only(spark: Any, tmp_path: Path) -> None:
    """--topic: only the named dead-letter topics' partition dirs are read, on both engines alike."""
    from kwire.pipeline.spark import jobs as sjobs

    root = write_dlq_dirs(tmp_path / "logs")
    keep = ["dlq.spring", "dlq.plain"]
    s_d = sjobs.dlq_job(spark, root, tmp_path / "spark_d", topics=keep)
    p_d = jobs.dlq_job(root, tmp_path / "plain_d", topics=keep)
    assert s_d.summary == p_d.summary and s_d.tables == p_d.tables
    assert {r["topic"] for r in p_d.summary} == set(keep)
    # the torn tail is in another topic; dlq.plain has no DLQ headers: named once, apart
    assert s_d.notes == p_d.notes == ["dlq.plain: not a dead-letter topic (1 record, none with dead-letter headers)"]


def test_both_engines_leave_transaction_markers_out_of_the_dlq(spark: Any, tmp_path: Path) -> None:
    """Control batches (COMMIT markers) are never dead letters, on Spark as in one process."""
    from kwire.pipeline.spark import jobs as sjobs

    from .dlq_dirs import write_txn_dlq_dir

    root = write_txn_dlq_dir(tmp_path / "logs")
    s_d = sjobs.dlq_job(spark, root, tmp_path / "spark_d")
    p_d = jobs.dlq_job(root, tmp_path / "plain_d")
    assert s_d.summary == p_d.summary and s_d.tables == p_d.tables and s_d.notes == p_d.notes
    assert s_d.tables["dlq_records"] == 8  # 6 dead letters + 2 records of the plain topic, no markers
    assert s_d.notes == ["events: not a dead-letter topic (2 records, none with dead-letter headers)"]


_LOCAL1 = """
import json, sys
from kwire.pipeline.spark import build_session
from kwire.pipeline.spark import jobs
spark = build_session("local[1]", shuffle_partitions=1)
t = jobs.traffic_job(spark, [sys.argv[1]], sys.argv[3] + "/t")
d = jobs.dlq_job(spark, sys.argv[2], sys.argv[3] + "/d")
print(json.dumps([spark.sparkContext.master, t.tables, d.tables]))
spark.stop()
"""


def test_local1_writes_the_same_tables_as_the_plain_path(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    root = write_dlq_dirs(tmp_path / "logs")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _LOCAL1, str(FIXTURES), str(root), str(tmp_path / "s1")],
                         capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    master, _, _ = json.loads(out.stdout.strip().splitlines()[-1])
    assert master == "local[1]"
    jobs.traffic_job([str(FIXTURES)], tmp_path / "p" / "t")
    jobs.dlq_job(root, tmp_path / "p" / "d")
    for sub, table in (("t", "wire_exchanges"), ("t", "capture_issues"), ("d", "dlq_records"), ("d", "dlq_report")):
        spark_table = pq.read_table(tmp_path / "s1" / sub / table)
        plain_table = pq.read_table(tmp_path / "p" / sub / table)
        assert _canon(spark_table.to_pylist()) == _canon(plain_table.to_pylist()), table
        # the same schema too: names, types and nullability (Spark's metadata aside)
        assert [(f.name, f.type, f.nullable) for f in spark_table.schema] == \
            [(f.name, f.type, f.nullable) for f in plain_table.schema], table


def test_conformance_job_finds_the_plain_violations(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from kwire.pipeline.spark import jobs as sjobs

    from .bad_client import write_bad_client_capture

    (tmp_path / "in").mkdir()
    write_bad_client_capture(tmp_path / "in" / "bad.pcapng")
    s = sjobs.conformance_job(spark, [str(tmp_path / "in"), str(FIXTURES)], tmp_path / "s")
    p = jobs.conformance_job([str(tmp_path / "in"), str(FIXTURES)], tmp_path / "p")
    assert s.summary == p.summary and s.tables == p.tables == {"conformance_violations": 5}
    clean = sjobs.conformance_job(spark, [str(FIXTURES / "clients.pcapng")], tmp_path / "clean")
    assert clean.tables == {"conformance_violations": 0} and clean.summary == []
    assert _canon(pq.read_table(tmp_path / "s" / "conformance_violations").to_pylist()) == _canon(
        pq.read_table(tmp_path / "p" / "conformance_violations").to_pylist())

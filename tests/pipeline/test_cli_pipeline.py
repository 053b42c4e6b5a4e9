"""``kwire pipeline``: the plain engine end to end, and no heavy import at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .dlq_dirs import write_dlq_dirs

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "captures"


def _kwire(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "kwire", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=ROOT)


def test_traffic_local_engine_writes_tables_report_and_summary(tmp_path: Path) -> None:
    out = _kwire("pipeline", "traffic", str(FIXTURES / "clients.pcapng"), "--out", str(tmp_path), "--engine", "local")
    assert out.returncode == 0, out.stderr
    assert "wire_exchanges: 23 rows" in out.stdout
    assert "fixture-producer" in out.stdout and "Produce" in out.stdout
    assert pq.read_table(tmp_path / "wire_exchanges").num_rows == 23
    assert (tmp_path / "traffic_report.html").exists()


def test_dlq_local_engine_reports_the_torn_tail(tmp_path: Path) -> None:
    root = write_dlq_dirs(tmp_path / "logs")
    out = _kwire("pipeline", "dlq", str(root), "--out", str(tmp_path / "o"), "--engine", "local")
    assert out.returncode == 0, out.stderr
    assert "dlq_records: 25 rows" in out.stdout and "torn tail:" in out.stdout
    assert pq.read_table(tmp_path / "o" / "dlq_report").num_rows == 13


def test_a_missing_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = _kwire("pipeline", "traffic", str(tmp_path / "nope.pcap"), "--out", str(tmp_path), "--engine", "local")
    assert out.returncode == 2
    errors = [line for line in out.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "no such file" in errors[0]


def test_kwire_start_up_does_not_import_the_pipeline() -> None:
    code = "import sys; from kwire.cli import main; main(['apis']); print(sorted(m for m in sys.modules if 'pyspark' in m or 'pyarrow' in m or 'kwire.pipeline' in m))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_small_input_on_local_spark_gets_a_hint_for_the_local_engine(tmp_path: Path) -> None:
    from kwire.cli.pipeline import SMALL_INPUT_BYTES, input_bytes, small_input_hint

    captures = [str(FIXTURES)]
    size = sum(p.stat().st_size for p in FIXTURES.iterdir() if p.suffix == ".pcapng")
    assert input_bytes("traffic", captures) == size
    hint = small_input_hint("traffic", captures, None)
    assert hint is not None and "--engine local" in hint and f"{size / 1e6:.1f} MB" in hint
    assert small_input_hint("traffic", captures, "spark://cluster:7077") is None  # a cluster: no advice
    root = write_dlq_dirs(tmp_path / "logs")
    assert input_bytes("dlq", [str(root)]) == sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    big = tmp_path / "big.pcap"
    with big.open("wb") as f:
        f.truncate(SMALL_INPUT_BYTES)  # sparse: the size is what counts
    assert small_input_hint("traffic", [str(big)], "local[2]") is None


def test_inputs_that_cannot_give_a_table_are_one_line_on_either_engine(tmp_path: Path) -> None:
    """Checked before an engine starts, so the Spark engine answers as fast and as briefly as the
    local one: nothing found, a file that is not a capture (named), a dlq input without
    partition directories, a dlq topic that is not there."""
    empty = tmp_path / "empty"
    empty.mkdir()
    text = tmp_path / "notes.pcapng"
    text.write_text("hello, not a capture")
    zero = tmp_path / "zero.pcap"
    zero.touch()
    logs = write_dlq_dirs(tmp_path / "logs")
    cases = [
        (["traffic", str(empty)], "no pcap/pcapng captures"),
        (["conformance", str(empty)], "no pcap/pcapng captures"),
        (["traffic", str(FIXTURES / "clients.pcapng"), str(text)], f"{text}: not a pcap or pcapng capture"),
        (["traffic", str(zero)], f"{zero}: an empty file"),
        (["dlq", str(FIXTURES)], "no partition directories"),
        (["dlq", str(tmp_path / "nope")], "is not a directory"),
        (["dlq", str(logs), "--topic", "nosuch"], "no partition directory of topic nosuch (topics here: "),
    ]
    for args, message in cases:
        for engine in ("spark", "local"):
            out = _kwire("pipeline", *args, "--out", str(tmp_path / "o"), "--engine", engine)
            assert out.returncode == 2, (args, engine, out.stderr[-500:])
            lines = out.stderr.strip().splitlines()
            assert len(lines) == 1 and message in lines[0] and "Traceback" not in out.stderr, (args, engine, lines)


def test_the_local_engine_replaces_a_table_an_earlier_run_left(tmp_path: Path) -> None:
    """A part file from an earlier run (Spark names its own) must not be read as part of the new table."""
    stale = tmp_path / "wire_exchanges" / "part-00000-0a1b-c000.snappy.parquet"
    stale.parent.mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2, 3]}), stale)
    out = _kwire("pipeline", "traffic", str(FIXTURES / "torn_tail.pcapng"), "--out", str(tmp_path), "--engine", "local")
    assert out.returncode == 0, out.stderr
    assert not stale.exists()
    assert pq.read_table(tmp_path / "wire_exchanges").num_rows == 5


def test_a_failed_spark_job_is_told_by_kwire_s_own_error() -> None:
    from kwire.cli.pipeline import spark_failure

    trace = ("An error occurred while calling o91.parquet.\n: org.apache.spark.SparkException: Job aborted\n"
             "  File \"kwire/pipeline/traffic.py\", line 3, in rows\nkwire.errors.CaptureError: x.pcap: pcapng block at 40 "
             "has an impossible length 3\n\tat org.apache.spark...")
    assert spark_failure(RuntimeError(trace)) == "x.pcap: pcapng block at 40 has an impossible length 3"
    assert spark_failure(RuntimeError("\n  Java gateway process exited\nmore")) == "Java gateway process exited"

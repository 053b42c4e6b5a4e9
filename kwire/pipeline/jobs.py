"""The pipeline jobs on the plain single-process path (``--engine local``); ``spark/jobs.py`` runs
the same jobs on Spark with the same row functions, tables and aggregations.

Each job writes Parquet tables under ``out/<table>/`` and a self-contained HTML report, and
returns a ``JobResult`` for the terminal summary.
"""

from __future__ import annotations

import shutil
import time
from array import array
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kwire.pipeline.dlq import delivery_histogram, dlq_report_rows, dlq_rows, not_dlq_notes
from kwire.pipeline.logs import iter_log_records, plan_log_slices
from kwire.pipeline.plan import expand_inputs
from kwire.pipeline.report import dlq_html, traffic_html
from kwire.pipeline.summary import TrafficSummary, sort_key, time_bucket_ns, time_series
from kwire.pipeline.traffic import iter_traffic, traffic_rows

__all__ = ["JobResult", "traffic_job", "dlq_job", "conformance_job", "violation_summary", "top_errors",
           "write_tables", "table_file"]


@dataclass(slots=True)
class JobResult:
    tables: dict[str, int] = field(default_factory=dict)  # table -> rows written
    summary: list[dict[str, Any]] = field(default_factory=list)
    report: Path | None = None
    notes: list[str] = field(default_factory=list)


def table_file(out: Path, name: str) -> Path:
    """Where a table's one Parquet file goes; what the directory held before goes first, as with
    Spark's overwrite mode (a part file left from an earlier run would be read as part of the table)."""
    d = out / name
    if d.is_dir():
        shutil.rmtree(d)
    elif d.exists():
        d.unlink()
    d.mkdir(parents=True)
    return d / "part-00000.parquet"


def write_tables(out: Path, tables: dict[str, tuple[Any, list[dict[str, Any]]]]) -> dict[str, int]:
    from kwire.pipeline.arrow import write_parquet

    return {name: write_parquet(rows, table, table_file(out, name)) for name, (table, rows) in tables.items()}


def top_errors(rows: list[dict[str, Any]], n: int = 20) -> list[tuple[str, int]]:
    c = Counter(r["error_message"] for r in rows if r["error_message"] is not None)
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def traffic_job(inputs: list[str], out: str | Path) -> JobResult:
    """Rows stream from the captures into Parquet; only the summary, the request timestamps (8
    bytes each) and the capture issues stay in memory, so a capture's size does not bound it."""
    from kwire.pipeline.arrow import write_parquet
    from kwire.pipeline.tables import CAPTURE_ISSUES, WIRE_EXCHANGES

    out = Path(out)
    paths = expand_inputs(inputs)
    issues: list[dict[str, Any]] = []
    summary = TrafficSummary()
    stamps = array("q")

    def rows() -> Iterator[dict[str, Any]]:
        for p in paths:
            for r in iter_traffic(p, issues=issues):
                summary.add(r)
                if r["request_ts_ns"] is not None:
                    stamps.append(r["request_ts_ns"])
                yield r

    res = JobResult()
    res.tables["wire_exchanges"] = write_parquet(rows(), WIRE_EXCHANGES, table_file(out, "wire_exchanges"))
    res.tables["capture_issues"] = write_parquet(issues, CAPTURE_ISSUES, table_file(out, "capture_issues"))
    res.summary = summary.rows()
    width = time_bucket_ns(min(stamps), max(stamps)) if stamps else None
    series = time_series(stamps, width) if width else []
    res.report = out / "traffic_report.html"
    res.report.write_text(traffic_html(res.summary, series, dict(Counter(i["kind"] for i in issues)),
                                       bucket_ns=width))
    return res


def violation_summary(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Violations counted per (rule, severity, api key, version)."""
    c = Counter((v["rule_id"], v["severity"], v["api_key"], v["api_version"]) for v in violations)
    rows = [{"rule_id": k[0], "severity": k[1], "api_key": k[2], "api_version": k[3], "violations": n}
            for k, n in c.items()]
    return sorted(rows, key=lambda r: sort_key(r, ("rule_id", "severity", "api_key", "api_version")))


def conformance_job(inputs: list[str], out: str | Path) -> JobResult:
    from kwire.pipeline.conformance import check_rows
    from kwire.pipeline.tables import CONFORMANCE_VIOLATIONS

    out = Path(out)
    rows, _ = traffic_rows(expand_inputs(inputs))
    violations = check_rows(rows)
    res = JobResult(tables=write_tables(out, {"conformance_violations": (CONFORMANCE_VIOLATIONS, violations)}))
    res.summary = violation_summary(violations)
    return res


def dlq_job(root: str | Path, out: str | Path, *, topics: Collection[str] | None = None) -> JobResult:
    """dlq_records and dlq_report from the partition dirs under ``root`` (of ``topics`` only, when given)."""
    from kwire.pipeline.tables import DLQ_RECORDS

    out = Path(out)
    slices, torn = plan_log_slices(root, topics=topics)
    rows = [r for s in slices for r in dlq_rows(iter_log_records(s))]
    res = JobResult(tables=write_tables(out, {"dlq_records": (DLQ_RECORDS, rows)}))
    res.summary = dlq_report_rows(rows)
    _write_report_parquet(out, res.summary)
    res.tables["dlq_report"] = len(res.summary)
    dead = [r for r in rows if r["convention"] != "none"]  # the charts: dead letters only
    stamps = [r["timestamp_ms"] for r in dead if r["timestamp_ms"] is not None and r["timestamp_ms"] >= 0]
    width = time_bucket_ns(min(stamps), max(stamps)) if stamps else None
    series = time_series(stamps, width) if width else []
    res.notes = [f"torn tail: {t.path} at byte {t.position} ({t.nbytes} bytes skipped)" for t in torn]
    res.notes += not_dlq_notes(res.summary)
    res.report = out / "dlq_report.html"
    res.report.write_text(dlq_html(res.summary, delivery_histogram(dead), series, top_errors(dead),
                                   now_ms=int(time.time() * 1000), bucket_ms=width))
    return res


def _write_report_parquet(out: Path, report: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kwire.pipeline.dlq import DLQ_REPORT_COLUMNS

    path = table_file(out, "dlq_report")
    table = pa.Table.from_pylist(report, schema=_DLQ_REPORT_SCHEMA()) if report else pa.table(
        {c: pa.array([], type=t) for c, t in zip(DLQ_REPORT_COLUMNS, _DLQ_REPORT_SCHEMA().types, strict=True)})
    pq.write_table(table, path)


def _DLQ_REPORT_SCHEMA() -> Any:  # noqa: N802 - a constant built on first use (pyarrow is optional)
    import pyarrow as pa

    s, i32, i64 = pa.string(), pa.int32(), pa.int64()
    return pa.schema([("topic", s), ("original_topic", s), ("original_partition", i32), ("group_id", s),
                      ("convention", s), pa.field("records", i64, nullable=False), ("first_offset", i64), ("last_offset", i64),
                      ("oldest_timestamp_ms", i64), ("newest_timestamp_ms", i64), ("min_original_offset", i64),
                      ("max_original_offset", i64), ("min_delivery_count", i32), ("max_delivery_count", i32)])

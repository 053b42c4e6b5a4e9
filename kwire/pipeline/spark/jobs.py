"""The pipeline jobs on Spark: read through the kwire data sources, write Parquet, aggregate in SQL.

Same tables, same aggregation columns and the same HTML reports as ``kwire.pipeline.jobs``; the
decoded tables are written first and read back for the aggregations, so nothing is decoded twice.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from kwire.pipeline.dlq import DLQ_REPORT_COLUMNS, not_dlq_notes
from kwire.pipeline.jobs import JobResult
from kwire.pipeline.plan import expand_inputs
from kwire.pipeline.report import dlq_html, traffic_html
from kwire.pipeline.summary import TRAFFIC_SUMMARY_COLUMNS, TRAFFIC_SUMMARY_KEYS, sort_key, time_bucket_ns
from kwire.pipeline.tables import CAPTURE_ISSUES, WIRE_EXCHANGES

__all__ = ["traffic_job", "dlq_job", "conformance_job", "traffic_summary_df", "dlq_report_df"]


def _rows(df: Any, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{c: r[c] for c in columns} for r in df.collect()]


def _series(df: Any, col: str) -> tuple[list[tuple[int, int]], int | None]:
    """(bucket start, count) of the non-empty buckets, and the bucket width (from the whole range)."""
    lo, hi = df.where(F.col(col).isNotNull() & (F.col(col) >= 0)).agg(F.min(col), F.max(col)).first()
    if lo is None:
        return [], None
    width = time_bucket_ns(lo, hi)
    b = (F.floor(F.col(col) / width) * width).cast("long").alias("b")
    return sorted((r["b"], r["count"]) for r in df.where(F.col(col).isNotNull() & (F.col(col) >= 0))
                  .groupBy(b).count().collect()), width


def traffic_summary_df(ex: Any) -> Any:
    return ex.where(F.col("api_key").isNotNull()).groupBy(*TRAFFIC_SUMMARY_KEYS).agg(
        F.count(F.lit(1)).alias("exchanges"),
        F.count("response_size").alias("answered"),
        F.sum(F.when(F.size("error_codes") > 0, 1).otherwise(0)).alias("with_errors"),
        F.coalesce(F.sum("latency_us"), F.lit(0)).alias("latency_us_sum"),
        F.max("latency_us").alias("latency_us_max"),
        F.coalesce(F.sum("request_size"), F.lit(0)).alias("request_bytes"),
        F.coalesce(F.sum("response_size"), F.lit(0)).alias("response_bytes"),
    )


def traffic_job(spark: Any, inputs: list[str], out: str | Path, *, min_partitions: int | None = None) -> JobResult:
    out = Path(out)
    paths = ",".join(expand_inputs(inputs))
    parts = str(min_partitions or spark.sparkContext.defaultParallelism)
    res = JobResult()
    # One decode of the captures gives both tables: the decoded rows are staged as Parquet and
    # split from there (cheap: a columnar re-read of ~100 bytes a row), instead of decoding every
    # capture twice or caching the rows in the JVM (persist cost 1.7 s of a 1 GB job's 9.4 s).
    staging = out / "_capture_rows"
    try:
        (spark.read.format("kwire-pcap").option("paths", paths).option("minPartitions", parts)
         .option("table", "capture_rows").load().write.mode("overwrite").parquet(str(staging)))
        staged = spark.read.parquet(str(staging))
        (staged.where(F.col("row_kind") == "exchange").select(*WIRE_EXCHANGES.names)
         .write.mode("overwrite").parquet(str(out / "wire_exchanges")))
        (staged.where(F.col("row_kind") == "issue")
         .select(*(F.col(f"issue_{c}").alias(c) for c in CAPTURE_ISSUES.names))
         .write.mode("overwrite").parquet(str(out / "capture_issues")))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    ex = spark.read.parquet(str(out / "wire_exchanges"))
    issues = spark.read.parquet(str(out / "capture_issues"))
    res.tables = {"wire_exchanges": ex.count(), "capture_issues": issues.count()}
    res.summary = sorted(_rows(traffic_summary_df(ex), TRAFFIC_SUMMARY_COLUMNS),
                         key=lambda r: sort_key(r, TRAFFIC_SUMMARY_KEYS))
    counts = {r["kind"]: r["count"] for r in issues.groupBy("kind").count().collect()}
    res.report = out / "traffic_report.html"
    series, width = _series(ex, "request_ts_ns")
    res.report.write_text(traffic_html(res.summary, series, counts, bucket_ns=width))
    return res


def dlq_report_df(d: Any) -> Any:
    return d.groupBy("topic", "original_topic", "original_partition", "group_id", "convention").agg(
        F.count(F.lit(1)).alias("records"), F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
        F.min("timestamp_ms").alias("oldest_timestamp_ms"), F.max("timestamp_ms").alias("newest_timestamp_ms"),
        F.min("original_offset").alias("min_original_offset"), F.max("original_offset").alias("max_original_offset"),
        F.min("delivery_count").alias("min_delivery_count"), F.max("delivery_count").alias("max_delivery_count"),
    )


def dlq_job(spark: Any, root: str | Path, out: str | Path, *, topics: Collection[str] | None = None) -> JobResult:
    from kwire.pipeline.logs import plan_log_slices

    out = Path(out)
    reader = spark.read.format("kwire-log").option("table", "dlq_records")
    if topics is not None:
        reader = reader.option("topics", json.dumps(sorted(topics)))
    reader.load(str(root)).write.mode("overwrite").parquet(str(out / "dlq_records"))
    d = spark.read.parquet(str(out / "dlq_records"))
    report_df = dlq_report_df(d)
    report_df.write.mode("overwrite").parquet(str(out / "dlq_report"))
    keys = ("topic", "original_topic", "original_partition", "group_id", "convention")
    res = JobResult(summary=sorted(_rows(report_df, DLQ_REPORT_COLUMNS), key=lambda r: sort_key(r, keys)))
    res.tables = {"dlq_records": d.count(), "dlq_report": len(res.summary)}
    dead = d.where(F.col("convention") != "none")  # the charts: dead letters only
    hist = {r["delivery_count"]: r["count"] for r in dead.groupBy("delivery_count").count().collect()}
    errors = sorted(((r["error_message"], r["count"]) for r in dead.where(F.col("error_message").isNotNull())
                     .groupBy("error_message").count().collect()), key=lambda kv: (-kv[1], kv[0]))[:20]
    res.notes = [f"torn tail: {t.path} at byte {t.position} ({t.nbytes} bytes skipped)"
                 for t in plan_log_slices(root, topics=topics)[1]]
    res.notes += not_dlq_notes(res.summary)
    res.report = out / "dlq_report.html"
    series, width = _series(dead, "timestamp_ms")
    res.report.write_text(dlq_html(res.summary, hist, series, errors, now_ms=int(time.time() * 1000),
                                   bucket_ms=width))
    return res


def conformance_job(spark: Any, inputs: list[str], out: str | Path, *, min_partitions: int | None = None) -> JobResult:
    """wire_exchanges first (staged Parquet), then the per-row rules in the executors and CR-2 as a group-by."""
    out = Path(out)
    paths = ",".join(expand_inputs(inputs))
    parts = str(min_partitions or spark.sparkContext.defaultParallelism)
    # The exchanges are an intermediate here (the plain job writes only the violations): staged,
    # then removed.
    staging = out / "_wire_exchanges"
    try:
        return _conformance(spark, paths, parts, out, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _conformance(spark: Any, paths: str, parts: str, out: Path, staging: Path) -> JobResult:
    import pyarrow as pa

    from kwire.pipeline.arrow import arrow_schema, iter_batches
    from kwire.pipeline.conformance import advertised_ranges, check_row, violation
    from kwire.pipeline.jobs import violation_summary
    from kwire.pipeline.spark.sources import spark_ddl
    from kwire.pipeline.tables import CONFORMANCE_VIOLATIONS

    (spark.read.format("kwire-pcap").option("paths", paths).option("minPartitions", parts).load()
     .write.mode("overwrite").parquet(str(staging)))
    ex = spark.read.parquet(str(staging))
    advertised = advertised_ranges(
        r.asDict() for r in ex.where(F.col("advertised_versions").isNotNull())
        .select("server", "response_ts_ns", "advertised_versions").collect())
    table = CONFORMANCE_VIOLATIONS

    def rules(batches: Any) -> Any:
        for b in batches:
            rows = pa.Table.from_batches([b]).to_pylist()
            yield from iter_batches((v for r in rows for v in check_row(r, advertised)), table)

    per_row = ex.mapInArrow(rules, spark_ddl(table))
    dup = (ex.where(F.col("api_key").isNotNull()).groupBy("source", "conn_id", "correlation_id")
           .agg(F.count(F.lit(1)).alias("n"), F.min_by(F.struct(*ex.columns), "request_offset").alias("first"))
           .where("n > 1").collect())
    dups = [violation("CR-2", "error", r["first"].asDict(), f"correlation id used by {r['n']} requests on this connection")
            for r in dup]
    if dups:
        extra = spark.createDataFrame(pa.Table.from_pylist(dups, schema=arrow_schema(table)).to_pandas(),
                                      spark_ddl(table))
        per_row = per_row.unionByName(extra)
    per_row.write.mode("overwrite").parquet(str(out / "conformance_violations"))
    v = spark.read.parquet(str(out / "conformance_violations"))
    res = JobResult(tables={"conformance_violations": v.count()})
    res.summary = violation_summary([r.asDict() for r in v.select("rule_id", "severity", "api_key", "api_version").collect()])
    return res

"""Aggregations shared by the plain and Spark paths (the Spark path computes the same columns in SQL).

``traffic_summary``: one row per (client id, client software, api, version) with counts, sums
and maxima only (integers), so both paths agree exactly; averages are taken when printing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["TRAFFIC_SUMMARY_KEYS", "TRAFFIC_SUMMARY_COLUMNS", "TrafficSummary", "traffic_summary", "time_bucket_ns",
           "time_series", "sort_key"]

TRAFFIC_SUMMARY_KEYS = ("client_id", "client_software_name", "client_software_version", "api_key", "api_name",
                        "api_version")
TRAFFIC_SUMMARY_COLUMNS = (*TRAFFIC_SUMMARY_KEYS, "exchanges", "answered", "with_errors", "latency_us_sum",
                           "latency_us_max", "request_bytes", "response_bytes")


def sort_key(row: dict[str, Any], keys: Iterable[str]) -> tuple[Any, ...]:
    """Nulls first, then by value: the order both paths print in."""
    return tuple((row[k] is not None, row[k] if row[k] is not None else 0) for k in keys)


class TrafficSummary:
    """``traffic_summary`` fed one row at a time (a job streaming rows to Parquet keeps only this)."""

    __slots__ = ("_acc",)

    def __init__(self) -> None:
        self._acc: dict[tuple[Any, ...], dict[str, Any]] = {}

    def add(self, r: dict[str, Any]) -> None:
        if r["api_key"] is None:
            return  # unpaired responses: no request to attribute them to
        key = tuple(r[k] for k in TRAFFIC_SUMMARY_KEYS)
        a = self._acc.get(key)
        if a is None:
            a = self._acc[key] = dict(zip(TRAFFIC_SUMMARY_KEYS, key, strict=True))
            a.update(exchanges=0, answered=0, with_errors=0, latency_us_sum=0, latency_us_max=None,
                     request_bytes=0, response_bytes=0)
        a["exchanges"] += 1
        if r["response_size"] is not None:
            a["answered"] += 1
            a["response_bytes"] += r["response_size"]
        a["request_bytes"] += r["request_size"] or 0
        if r["error_codes"]:
            a["with_errors"] += 1
        if r["latency_us"] is not None:
            a["latency_us_sum"] += r["latency_us"]
            m = a["latency_us_max"]
            a["latency_us_max"] = r["latency_us"] if m is None else max(m, r["latency_us"])

    def rows(self) -> list[dict[str, Any]]:
        return sorted(self._acc.values(), key=lambda r: sort_key(r, TRAFFIC_SUMMARY_KEYS))


def traffic_summary(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    summary = TrafficSummary()
    for r in rows:
        summary.add(r)
    return summary.rows()


def time_bucket_ns(lo: int, hi: int, buckets: int = 60) -> int:
    """A round bucket width (1, 2, 5 x 10^k ns) giving at most ``buckets`` buckets over [lo, hi]."""
    span = max(1, hi - lo)
    width = 1
    while True:
        for m in (1, 2, 5):
            if span // (width * m) < buckets:
                return width * m
        width *= 10


def time_series(values: Iterable[int | None], width: int) -> list[tuple[int, int]]:
    """``(bucket start, count)`` sorted, for non-null timestamps."""
    counts: dict[int, int] = {}
    for v in values:
        if v is not None:
            b = v // width * width
            counts[b] = counts.get(b, 0) + 1
    return sorted(counts.items())

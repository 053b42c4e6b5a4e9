"""Dead-letter records: where each came from, by whichever header convention wrote it.

Conventions, tried in this order (the first whose topic header is present wins):

| convention | headers | encoding |
| --- | --- | --- |
| ``kip1191`` | ``__dlq.errors.topic/partition/offset/group/delivery.count/message`` | UTF-8 text (DLQ-9) |
| ``connect`` | ``__connect.errors.topic/partition/offset``, ``.exception.class.name``, ``.exception.message`` | UTF-8 text |
| ``spring`` | ``kafka_dlt-original-topic/-partition/-offset/-consumer-group``, ``kafka_dlt-exception-fqcn/-message``, ``kafka_deliveryAttempt`` | text; partition int32 and offset int64 big-endian |
| ``x-original`` | ``x-original-topic/partition/offset/group``, ``x-delivery-count``/``x-retry-count``, ``x-exception-message``/``x-error-message`` | UTF-8 text |

A record with none of them gets convention ``none`` and its headers kept as they are.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["parse_dlq_headers", "dlq_row", "dlq_rows", "dlq_report_rows", "delivery_histogram", "DLQ_REPORT_COLUMNS",
           "split_not_dlq", "not_dlq_notes"]

_FIELDS = ("original_topic", "original_partition", "original_offset", "group_id", "delivery_count",
           "error_class", "error_message")

# convention -> field -> header keys (first present wins)
_TEXT_CONVENTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "kip1191": {
        "original_topic": ("__dlq.errors.topic",), "original_partition": ("__dlq.errors.partition",),
        "original_offset": ("__dlq.errors.offset",), "group_id": ("__dlq.errors.group",),
        "delivery_count": ("__dlq.errors.delivery.count",), "error_class": (),
        "error_message": ("__dlq.errors.message",),
    },
    "connect": {
        "original_topic": ("__connect.errors.topic",), "original_partition": ("__connect.errors.partition",),
        "original_offset": ("__connect.errors.offset",), "group_id": (), "delivery_count": (),
        "error_class": ("__connect.errors.exception.class.name",),
        "error_message": ("__connect.errors.exception.message",),
    },
    "x-original": {
        "original_topic": ("x-original-topic",), "original_partition": ("x-original-partition",),
        "original_offset": ("x-original-offset",), "group_id": ("x-original-group", "x-original-consumer-group"),
        "delivery_count": ("x-delivery-count", "x-retry-count"),
        "error_class": ("x-exception-class", "x-error-class"),
        "error_message": ("x-exception-message", "x-error-message"),
    },
}
_INTS = {"original_partition", "original_offset", "delivery_count"}


def _text(v: bytes | None) -> str | None:
    if v is None:
        return None
    return v.decode("utf-8", "replace")


def _int(v: bytes | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None


def _be_int(v: bytes | None) -> int | None:
    """Spring writes partition as int32 and offset as int64, big-endian; some ports write text."""
    if v is None:
        return None
    if len(v) == 4:
        return int(struct.unpack(">i", v)[0])
    if len(v) == 8:
        return int(struct.unpack(">q", v)[0])
    return _int(v)


def parse_dlq_headers(headers: Iterable[tuple[str, bytes | None]]) -> dict[str, Any]:
    """``convention`` plus the original coordinates and error found in a record's headers."""
    h: dict[str, bytes | None] = {}
    for k, v in headers:
        h.setdefault(k, v)  # the first occurrence, as Headers.lastHeader would not: DLQ writers add each once
    out: dict[str, Any] = dict.fromkeys(_FIELDS)
    if "kafka_dlt-original-topic" in h and "__dlq.errors.topic" not in h and "__connect.errors.topic" not in h:
        out.update(
            convention="spring",
            original_topic=_text(h.get("kafka_dlt-original-topic")),
            original_partition=_be_int(h.get("kafka_dlt-original-partition")),
            original_offset=_be_int(h.get("kafka_dlt-original-offset")),
            group_id=_text(h.get("kafka_dlt-original-consumer-group")),
            delivery_count=_be_int(h.get("kafka_deliveryAttempt")),
            error_class=_text(h.get("kafka_dlt-exception-fqcn")),
            error_message=_text(h.get("kafka_dlt-exception-message")),
        )
        return out
    for name, fields in _TEXT_CONVENTIONS.items():
        if fields["original_topic"][0] not in h:
            continue
        out["convention"] = name
        for f, keys in fields.items():
            raw = next((h[k] for k in keys if k in h), None)
            out[f] = _int(raw) if f in _INTS else _text(raw)
        return out
    out["convention"] = "none"
    return out


def dlq_row(record_row: dict[str, Any]) -> dict[str, Any]:
    """A ``dlq_records`` row from a ``log_records`` row."""
    headers = [(h["key"], h["value"]) for h in record_row["headers"]]
    row = {k: record_row[k] for k in ("source", "topic", "partition", "offset", "timestamp_ms", "key_size",
                                      "value_size", "headers")}
    row.update(parse_dlq_headers(headers))
    return row


def dlq_rows(log_rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``dlq_records`` rows from ``log_records`` rows: control records (transaction markers) are
    the log's bookkeeping, never dead letters, so they are left out (both engines call this)."""
    for r in log_rows:
        if not r["is_control"]:
            yield dlq_row(r)


def split_not_dlq(report: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``dlq_report`` rows with a DLQ convention, and the rows of records without DLQ headers."""
    return [r for r in report if r["convention"] != "none"], [r for r in report if r["convention"] == "none"]


def _records(n: int) -> str:
    return f"{n} record" if n == 1 else f"{n} records"


def not_dlq_notes(report: list[dict[str, Any]]) -> list[str]:
    """One line per topic whose records carry no dead-letter headers (listed apart, once)."""
    dlq, plain = split_not_dlq(report)
    with_headers = {r["topic"] for r in dlq}
    notes = []
    for topic in sorted({r["topic"] for r in plain}):
        n = sum(r["records"] for r in plain if r["topic"] == topic)
        if topic in with_headers:
            notes.append(f"{topic}: {_records(n)} without dead-letter headers (not counted above)")
        else:
            notes.append(f"{topic}: not a dead-letter topic ({_records(n)}, none with dead-letter headers)")
    return notes


DLQ_REPORT_COLUMNS = (
    "topic", "original_topic", "original_partition", "group_id", "convention", "records",
    "first_offset", "last_offset", "oldest_timestamp_ms", "newest_timestamp_ms",
    "min_original_offset", "max_original_offset", "min_delivery_count", "max_delivery_count",
)


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["topic"], r["original_topic"], r["original_partition"], r["group_id"], r["convention"])


def _min(values: list[Any]) -> Any:
    vals = [v for v in values if v is not None]
    return min(vals) if vals else None


def _max(values: list[Any]) -> Any:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


def dlq_report_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``dlq_report``: one row per (DLQ topic, original topic/partition, group, convention).

    Its original offset range is the replay plan: re-consume ``original_topic`` partition
    ``original_partition`` from ``min_original_offset`` to ``max_original_offset``.
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(_key(r), []).append(r)
    out = []
    for key, rs in groups.items():
        out.append(dict(zip(DLQ_REPORT_COLUMNS, (
            *key, len(rs), _min([r["offset"] for r in rs]), _max([r["offset"] for r in rs]),
            _min([r["timestamp_ms"] for r in rs]), _max([r["timestamp_ms"] for r in rs]),
            _min([r["original_offset"] for r in rs]), _max([r["original_offset"] for r in rs]),
            _min([r["delivery_count"] for r in rs]), _max([r["delivery_count"] for r in rs]),
        ), strict=True)))
    out.sort(key=lambda r: tuple((v is None, v) for v in (r["topic"], r["original_topic"], r["original_partition"],
                                                           r["group_id"], r["convention"])))
    return out


def delivery_histogram(rows: Iterable[dict[str, Any]]) -> dict[int | None, int]:
    """Records per delivery count (None: the convention does not carry one)."""
    return dict(Counter(r["delivery_count"] for r in rows))

"""The pipeline's output tables, declared once as data.

Column kinds are a small vocabulary (``string``, ``int16`` .. ``int64``, ``bool``, ``binary``,
``double``, ``list<int16>``, ``headers``) that ``kwire.pipeline.arrow`` turns into Arrow types and
``kwire.pipeline.spark`` into Spark DDL, so the plain-Python path and the Spark path write the
same Parquet schema. Timestamps are integers (``*_ns`` since the epoch for captures, ``*_ms``
for Kafka records), exactly what the sources carry.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Column", "Table", "WIRE_EXCHANGES", "CAPTURE_ISSUES", "CONFORMANCE_VIOLATIONS", "LOG_RECORDS", "DLQ_RECORDS", "TABLES"]


@dataclass(slots=True, frozen=True)
class Column:
    name: str
    kind: str


@dataclass(slots=True, frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


def _table(name: str, spec: str) -> Table:
    cols = []
    for part in spec.split(","):
        col, kind = part.split()
        cols.append(Column(col, kind))
    return Table(name, tuple(cols))


WIRE_EXCHANGES = _table(
    "wire_exchanges",
    "source string, conn_id string, client string, server string, correlation_id int32, api_key int16,"
    "api_name string, api_version int16, client_id string, client_software_name string,"
    "client_software_version string, request_offset int64, response_offset int64, request_ts_ns int64,"
    "response_ts_ns int64, latency_us int64, request_size int32, response_size int32, error_code int16,"
    "error_codes list<int16>, decode_status string, decode_error string, advertised_versions string",
)

CONFORMANCE_VIOLATIONS = _table(
    "conformance_violations",
    "rule_id string, severity string, source string, conn_id string, correlation_id int32, api_key int16,"
    "api_version int16, detail string",
)

CAPTURE_ISSUES = _table(
    "capture_issues",
    "source string, conn_id string, direction string, kind string, stream_offset int64, nbytes int64,"
    "ts_ns int64, detail string",
)

# The Spark traffic job's staging rows: one decode of a capture gives both tables (the exchanges and
# the issues met on the way), told apart by ``row_kind``; the issue columns carry an ``issue_``
# prefix. Not an output table.
CAPTURE_ROWS = Table("capture_rows", (
    Column("row_kind", "string"), *WIRE_EXCHANGES.columns,
    *(Column(f"issue_{c.name}", c.kind) for c in CAPTURE_ISSUES.columns)))

LOG_RECORDS = _table(
    "log_records",
    "source string, topic string, partition int32, batch_position int64, base_offset int64, offset int64,"
    "timestamp_ms int64, timestamp_type string, producer_id int64, is_transactional bool, is_control bool,"
    "compression string, key_size int32, value_size int32, headers headers",
)

DLQ_RECORDS = _table(
    "dlq_records",
    "source string, topic string, partition int32, offset int64, timestamp_ms int64, key_size int32,"
    "value_size int32, headers headers, convention string, original_topic string, original_partition int32,"
    "original_offset int64, group_id string, delivery_count int32, error_class string, error_message string",
)

TABLES = {t.name: t for t in (WIRE_EXCHANGES, CAPTURE_ISSUES, CONFORMANCE_VIOLATIONS, LOG_RECORDS, DLQ_RECORDS)}

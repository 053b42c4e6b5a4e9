"""Spark Python Data Sources: ``kwire-pcap``, ``kwire-log`` and ``kwire-frames``.

``partitions()`` runs on the driver and plans tasks with ``kwire.pipeline.plan`` /
``kwire.pipeline.logs`` (files packed, big captures sharded by connection, segments cut at batch
boundaries); ``read()`` runs in the Python workers, reads the files itself (no binaryFile copy
through the JVM) and yields Arrow record batches built from the same row functions the plain
path uses.

Options: ``paths`` (comma-separated; ``load(path)`` works too), ``targetPartitionBytes``,
``minPartitions`` (kwire-pcap: the tasks to aim for; captures bigger than ``targetPartitionBytes``
are connection-sharded in proportion to their share of the input, each shard walking the whole
file, so without it every capture is one task), ``table``
(kwire-pcap: ``wire_exchanges`` or ``capture_issues``; kwire-log: ``log_records`` or
``dlq_records``), ``brokerPorts`` (kwire-pcap, comma-separated).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kwire.pipeline.tables import (
    CAPTURE_ISSUES,
    CAPTURE_ROWS,
    DLQ_RECORDS,
    LOG_RECORDS,
    WIRE_EXCHANGES,
    Table,
)

__all__ = ["PcapSource", "LogSource", "FramesSource", "register_sources", "spark_ddl"]

_DDL = {
    "string": "STRING", "int16": "SMALLINT", "int32": "INT", "int64": "BIGINT", "bool": "BOOLEAN",
    "binary": "BINARY", "double": "DOUBLE", "list<int16>": "ARRAY<SMALLINT>",
    "headers": "ARRAY<STRUCT<key: STRING, value: BINARY>>",
}


def spark_ddl(table: Table) -> str:
    return ", ".join(f"`{c.name}` {_DDL[c.kind]}" for c in table.columns)


def _paths(options: dict[str, str]) -> list[str]:
    raw = options.get("paths") or options.get("path")
    if not raw:
        from kwire.errors import CaptureError

        raise CaptureError("no input: pass .load(PATH) or .option('paths', 'A,B')")
    return [p for p in raw.split(",") if p]


def _at(cwd: str, path: str) -> str:
    """A path as the driver meant it: executors on a cluster run in their own work directory, so a
    relative input is opened from the driver's directory (the ``source`` column keeps it as given)."""
    return os.path.join(cwd, path)


class _PcapReader(DataSourceReader):
    def __init__(self, options: dict[str, str], table: Table) -> None:
        self.options = {k.lower(): v for k, v in options.items()}  # Spark lower-cases option names
        self.table = table
        self.cwd = os.getcwd()  # built on the driver, pickled to the executors

    def partitions(self) -> list[InputPartition]:
        from kwire.pipeline.plan import DEFAULT_CAPTURE_TARGET_BYTES, expand_inputs, plan_captures

        target = int(self.options.get("targetpartitionbytes", DEFAULT_CAPTURE_TARGET_BYTES))
        tasks = plan_captures(expand_inputs(_paths(self.options)), target,
                              min_tasks=int(self.options.get("minpartitions", 1)))
        return [InputPartition(t.pieces) for t in tasks] or [InputPartition(())]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from kwire.capture.kafka import DEFAULT_BROKER_PORTS
        from kwire.pipeline.arrow import iter_batches
        from kwire.pipeline.traffic import capture_issue_rows, iter_traffic

        ports = DEFAULT_BROKER_PORTS
        if self.options.get("brokerports"):
            ports = frozenset(int(p) for p in self.options["brokerports"].split(","))
        want_issues = self.table.name == CAPTURE_ISSUES.name  # the reader is pickled: compare by name
        staged = self.table.name == CAPTURE_ROWS.name

        def rows() -> Iterator[dict[str, Any]]:
            for path, k, n in partition.value:
                local = _at(self.cwd, path)
                if want_issues:
                    yield from capture_issue_rows(local, source=path, shard=(k, n), broker_ports=ports)
                elif staged:  # one decode, both tables (the traffic job splits them)
                    issues: list[dict[str, Any]] = []
                    for row in iter_traffic(local, source=path, shard=(k, n), broker_ports=ports, issues=issues):
                        row["row_kind"] = "exchange"
                        yield row
                    for issue in issues:
                        yield {"row_kind": "issue", **{f"issue_{c}": v for c, v in issue.items()}}
                else:
                    yield from iter_traffic(local, source=path, shard=(k, n), broker_ports=ports)

        yield from iter_batches(rows(), self.table)


class PcapSource(DataSource):
    """``spark.read.format("kwire-pcap").load("captures/*.pcapng")`` -> ``wire_exchanges`` rows."""

    @classmethod
    def name(cls) -> str:
        return "kwire-pcap"

    def _table(self) -> Table:
        table = self.options.get("table")
        if table == "capture_rows":
            return CAPTURE_ROWS
        return CAPTURE_ISSUES if table == "capture_issues" else WIRE_EXCHANGES

    def schema(self) -> str:
        return spark_ddl(self._table())

    def reader(self, schema: Any) -> DataSourceReader:
        return _PcapReader(dict(self.options), self._table())


class _LogReader(DataSourceReader):
    def __init__(self, options: dict[str, str], table: Table) -> None:
        self.options = {k.lower(): v for k, v in options.items()}  # Spark lower-cases option names
        self.table = table
        self.cwd = os.getcwd()  # built on the driver, pickled to the executors

    def partitions(self) -> list[InputPartition]:
        from kwire.pipeline.logs import DEFAULT_TARGET_BYTES, pack, plan_log_slices

        target = int(self.options.get("targetpartitionbytes", DEFAULT_TARGET_BYTES))
        topics = json.loads(self.options["topics"]) if "topics" in self.options else None
        slices = []
        for root in _paths(self.options):
            slices.extend(plan_log_slices(root, target, topics=topics)[0])
        tasks = pack(slices, target)
        return [InputPartition(tuple(t)) for t in tasks] or [InputPartition(())]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from kwire.pipeline.arrow import iter_batches
        from kwire.pipeline.dlq import dlq_rows
        from kwire.pipeline.logs import iter_log_records

        dlq = self.table.name == DLQ_RECORDS.name

        def rows() -> Iterator[dict[str, Any]]:
            for piece in partition.value:
                records = iter_log_records(dataclasses.replace(piece, path=_at(self.cwd, piece.path)),
                                           source=str(PurePath(piece.path).parent))
                yield from dlq_rows(records) if dlq else records

        yield from iter_batches(rows(), self.table)


class LogSource(DataSource):
    """``spark.read.format("kwire-log").option("table", "dlq_records").load(LOG_DIR)``."""

    @classmethod
    def name(cls) -> str:
        return "kwire-log"

    def _table(self) -> Table:
        return DLQ_RECORDS if self.options.get("table") == "dlq_records" else LOG_RECORDS

    def schema(self) -> str:
        return spark_ddl(self._table())

    def reader(self, schema: Any) -> DataSourceReader:
        return _LogReader(dict(self.options), self._table())


class _FramesReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = {k.lower(): v for k, v in options.items()}
        self.cwd = os.getcwd()

    def partitions(self) -> list[InputPartition]:
        # recordings are small: one task per export directory
        return [InputPartition(p) for p in _paths(self.options)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from kwire.pipeline.arrow import iter_batches
        from kwire.pipeline.frames import recording_rows

        yield from iter_batches(recording_rows(_at(self.cwd, partition.value), source=partition.value), WIRE_EXCHANGES)


class FramesSource(DataSource):
    """``kwire-frames``: kwire's own recordings (``kwire.recording.export_exchanges`` directories)
    as ``wire_exchanges`` rows (no timestamps: recordings keep none per frame)."""

    @classmethod
    def name(cls) -> str:
        return "kwire-frames"

    def schema(self) -> str:
        return spark_ddl(WIRE_EXCHANGES)

    def reader(self, schema: Any) -> DataSourceReader:
        return _FramesReader(dict(self.options))


def register_sources(spark: Any) -> None:
    for src in (PcapSource, LogSource, FramesSource):
        spark.dataSource.register(src)

"""kwire.records: record batches (v2 and legacy), compression, control records, log segments.

Names resolve lazily on first use, so ``import kwire.records`` loads nothing heavy. The layer
imports only ``kwire.errors`` from kwire (plus crc32c, cramjam, construct and the stdlib).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    # batch
    "Record",
    "Header",
    "RecordBatch",
    "BatchBuilder",
    "BatchInfo",
    "BatchIterator",
    "TimestampType",
    "iter_batches",
    "validate_and_assign",
    "validate_and_assign_all",
    "set_log_append_time",
    "speedups_enabled",
    # compression
    "Compression",
    "compress",
    "decompress",
    # control
    "ControlRecordType",
    "ControlType",
    "EndTxnMarker",
    "build_control_batch",
    "parse_control_key",
    "parse_control_record",
    # legacy
    "LegacyBatch",
    "LegacyMessageSetBuilder",
    "iter_legacy_messages",
    "upconvert_to_v2",
    # segment
    "SegmentWriter",
    "SegmentReader",
    "PartitionReader",
    "TornTail",
    "OffsetIndexEntry",
    "TimeIndexEntry",
    "write_segment",
    "read_segment",
    "iter_partition_dir",
    "list_segments",
    "segment_filename",
    "partition_dir_name",
    "parse_partition_dir_name",
    "read_offset_index",
    "read_time_index",
    # checksums
    "crc32c",
    "crc32",
]

_WHERE = {
    **dict.fromkeys(
        [
            "Record",
            "Header",
            "RecordBatch",
            "BatchBuilder",
            "BatchInfo",
            "TimestampType",
            "validate_and_assign",
            "validate_and_assign_all",
            "set_log_append_time",
            "speedups_enabled",
        ],
        "batch",
    ),
    **dict.fromkeys(["Compression", "compress", "decompress"], "compression"),
    **dict.fromkeys(
        [
            "ControlRecordType",
            "ControlType",
            "EndTxnMarker",
            "build_control_batch",
            "parse_control_key",
            "parse_control_record",
        ],
        "control",
    ),
    **dict.fromkeys(["LegacyBatch", "LegacyMessageSetBuilder"], "legacy"),
    **dict.fromkeys(["BatchIterator", "iter_batches", "iter_legacy_messages", "upconvert_to_v2"], "message_set"),
    **dict.fromkeys(
        [
            "SegmentWriter",
            "SegmentReader",
            "PartitionReader",
            "TornTail",
            "OffsetIndexEntry",
            "TimeIndexEntry",
            "write_segment",
            "read_segment",
            "iter_partition_dir",
            "list_segments",
            "segment_filename",
            "partition_dir_name",
            "parse_partition_dir_name",
            "read_offset_index",
            "read_time_index",
        ],
        "segment",
    ),
    **dict.fromkeys(["crc32c", "crc32"], "crc"),
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kwire.records' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kwire.records.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from .batch import (
        BatchBuilder,
        BatchInfo,
        Header,
        Record,
        RecordBatch,
        TimestampType,
        set_log_append_time,
        speedups_enabled,
        validate_and_assign,
        validate_and_assign_all,
    )
    from .compression import Compression, compress, decompress
    from .control import (
        ControlRecordType,
        ControlType,
        EndTxnMarker,
        build_control_batch,
        parse_control_key,
        parse_control_record,
    )
    from .crc import crc32, crc32c
    from .legacy import LegacyBatch, LegacyMessageSetBuilder
    from .message_set import BatchIterator, iter_batches, iter_legacy_messages, upconvert_to_v2
    from .segment import (
        OffsetIndexEntry,
        PartitionReader,
        SegmentReader,
        SegmentWriter,
        TimeIndexEntry,
        TornTail,
        iter_partition_dir,
        list_segments,
        parse_partition_dir_name,
        partition_dir_name,
        read_offset_index,
        read_segment,
        read_time_index,
        segment_filename,
        write_segment,
    )

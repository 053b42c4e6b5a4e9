"""The public surface is pinned, and the records layer imports nothing of kwire but errors."""

from __future__ import annotations

import ast
from pathlib import Path

import kwire.records as records

PUBLIC = {
    "Record", "Header", "RecordBatch", "BatchBuilder", "BatchInfo", "BatchIterator", "TimestampType",
    "iter_batches", "validate_and_assign", "validate_and_assign_all", "set_log_append_time", "speedups_enabled",
    "Compression", "compress", "decompress",
    "ControlRecordType", "ControlType", "EndTxnMarker", "build_control_batch", "parse_control_key",
    "parse_control_record",
    "LegacyBatch", "LegacyMessageSetBuilder", "iter_legacy_messages", "upconvert_to_v2",
    "SegmentWriter", "SegmentReader", "PartitionReader", "TornTail", "OffsetIndexEntry", "TimeIndexEntry",
    "write_segment", "read_segment", "iter_partition_dir", "list_segments", "segment_filename",
    "partition_dir_name", "parse_partition_dir_name", "read_offset_index", "read_time_index",
    "crc32c", "crc32",
}


def test_all_is_pinned_and_every_name_resolves() -> None:
    assert set(records.__all__) == PUBLIC
    for name in records.__all__:
        assert getattr(records, name) is not None


def test_records_imports_only_errors_from_kwire() -> None:
    root = Path(records.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert not node.module.startswith("kwire") or node.module == "kwire.errors", (path.name, node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("kwire"), (path.name, alias.name)

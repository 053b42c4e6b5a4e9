"""Control records: the transaction markers a coordinator writes (KIP-98, broker-semantics 3.4).

A control batch has attributes transactional|control (0x30), the producer's id and epoch, base
sequence -1 and one record whose

* key is ``version int16 (0) | type int16`` (:class:`ControlRecordType`), and
* value, for COMMIT/ABORT, is ``version int16 (0) | coordinator_epoch int32`` (:class:`EndTxnMarker`).

Its CRC is computed like any batch's: a CRC of 0 there is rejected by real clients.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from kwire.errors import RecordDecodeError, RecordEncodeError

from .batch import BatchBuilder, Record

__all__ = [
    "ControlRecordType",
    "ControlType",
    "EndTxnMarker",
    "build_control_batch",
    "parse_control_key",
    "parse_control_record",
    "CONTROL_KEY_VERSION",
    "END_TXN_MARKER_VERSION",
]

_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")
CONTROL_KEY_VERSION = 0  # ControlRecordType.CURRENT_CONTROL_RECORD_KEY_VERSION
END_TXN_MARKER_VERSION = 0  # EndTransactionMarker.CURRENT_END_TXN_MARKER_VERSION


class ControlRecordType(IntEnum):
    """Control record key types (wire ids)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


ControlType = ControlRecordType


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """A parsed COMMIT/ABORT marker."""

    type: ControlRecordType
    coordinator_epoch: int
    version: int = END_TXN_MARKER_VERSION

    @property
    def is_commit(self) -> bool:
        return self.type is ControlRecordType.COMMIT


def control_key(kind: ControlRecordType | int) -> bytes:
    """The 4-byte control record key."""
    return _KEY.pack(CONTROL_KEY_VERSION, int(kind))


def build_control_batch(
    marker: ControlRecordType | int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp_ms: int | None = None,
    *,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A one-record control batch holding a COMMIT or ABORT marker, CRC included."""
    try:
        kind = ControlRecordType(marker)
    except ValueError:
        raise RecordEncodeError(f"unknown control record type {marker}") from None
    if kind not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        raise RecordEncodeError(f"{kind.name} is not a transaction marker")
    if producer_id == -1:  # MemoryRecordsBuilder.appendEndTxnMarker (any other value is written as given)
        raise RecordEncodeError("a transaction marker needs a producer id")
    try:
        value = _END_TXN_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)
    except struct.error:
        raise RecordEncodeError(f"coordinator epoch {coordinator_epoch} out of int32 range") from None
    builder = BatchBuilder(
        base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
    builder.append(value, control_key(kind), (), timestamp_ms)
    return builder.build()


def parse_control_key(key: bytes | bytearray | memoryview | None) -> tuple[int, ControlRecordType | int]:
    """``(version, type)`` of a control record key; unknown types stay plain ints."""
    if key is None or len(key) < 4:
        raise RecordDecodeError("control record key must be at least 4 bytes")
    version, kind = _KEY.unpack_from(key)
    if version < 0:
        raise RecordDecodeError(f"invalid control record key version {version}")
    try:
        return version, ControlRecordType(kind)
    except ValueError:
        return version, kind


def parse_control_record(record: Record | tuple[bytes | None, bytes | None]) -> EndTxnMarker:
    """Parse a transaction marker from a control record (or a ``(key, value)`` pair).

    Raises:
        RecordDecodeError: not a COMMIT/ABORT marker, or malformed key/value.
    """
    if isinstance(record, Record):
        key, value = record.key, record.value
    else:
        key, value = record
    _, kind = parse_control_key(key)
    if kind not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        raise RecordDecodeError(f"control record type {kind!r} is not a transaction marker")
    if value is None or len(value) < 6:
        raise RecordDecodeError("transaction marker value must be at least 6 bytes")
    version, epoch = _END_TXN_VALUE.unpack_from(value)
    if version < 0:
        raise RecordDecodeError(f"invalid transaction marker version {version}")
    return EndTxnMarker(ControlRecordType(kind), epoch, version)

"""The whole typed error tree of kwire.

``DecodeError`` is for bytes a peer sent (the peer misbehaved); ``EncodeError`` is
for a message the caller built wrong. ``KafkaProtocolError`` subclasses carry the
Kafka error code a broker answers with, so a handler maps them without a table.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "KwireError",
    "ProtocolError",
    "DecodeError",
    "EncodeError",
    "UnsupportedVersionError",
    "UnknownApiKeyError",
    "UnknownErrorCodeError",
    "FrameTooLargeError",
    "RecordError",
    "CorruptBatchError",
    "RecordDecodeError",
    "RecordEncodeError",
    "CompressionError",
    "SegmentError",
    "KafkaError",
    "RecordErrorsError",
    "KafkaProtocolError",
    "ConfigError",
    "CaptureError",
]


class KwireError(Exception):
    """Base of every error kwire raises."""


class ProtocolError(KwireError):
    """Base of codec errors."""


class DecodeError(ProtocolError):
    """Bytes that do not decode as the message they claim to be.

    ``offset`` is the byte offset within the decoded buffer where decoding failed.
    """

    def __init__(
        self,
        reason: str,
        *,
        offset: int | None = None,
        field: str | None = None,
        message: str | None = None,
        api_key: int | None = None,
        api_version: int | None = None,
    ) -> None:
        self.reason = reason
        self.offset = offset
        self.field = field
        self.message = message
        self.api_key = api_key
        self.api_version = api_version
        super().__init__(reason)

    def __str__(self) -> str:
        parts = []
        if self.message is not None:
            where = self.message
            if self.api_version is not None:
                where += f" v{self.api_version}"
            parts.append(where)
        if self.field is not None:
            parts.append(f"field {self.field}")
        if self.offset is not None:
            parts.append(f"offset {self.offset}")
        prefix = ", ".join(parts)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class EncodeError(ProtocolError):
    """A message that cannot be encoded as asked (wrong type, field absent in that version...)."""

    def __init__(
        self,
        reason: str,
        *,
        field: str | None = None,
        message: str | None = None,
        api_version: int | None = None,
    ) -> None:
        self.reason = reason
        self.field = field
        self.message = message
        self.api_version = api_version
        super().__init__(reason)

    def __str__(self) -> str:
        parts = []
        if self.message is not None:
            parts.append(self.message + (f" v{self.api_version}" if self.api_version is not None else ""))
        if self.field is not None:
            parts.append(f"field {self.field}")
        prefix = ", ".join(parts)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class UnsupportedVersionError(ProtocolError):
    """An API version outside the range the codec knows."""

    def __init__(self, api_key: int, api_version: int, name: str | None = None) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.name = name
        label = name or f"api key {api_key}"
        super().__init__(f"{label} has no version {api_version}")


class UnknownApiKeyError(ProtocolError):
    """An API key that the pinned spec set does not define."""

    def __init__(self, api_key: int, message: str | None = None) -> None:
        self.api_key = api_key
        super().__init__(message or f"unknown api key {api_key}")


class UnknownErrorCodeError(ProtocolError):
    """An error code (or name) that Kafka's error table does not define."""


class FrameTooLargeError(ProtocolError):
    """A size prefix larger than the configured limit (socket.request.max.bytes)."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")


class RecordError(KwireError):
    """Base of record-layer errors."""


class RecordDecodeError(RecordError):
    """Record or batch bytes that do not parse."""

    def __init__(self, reason: str, *, offset: int | None = None, base_offset: int | None = None) -> None:
        self.reason = reason
        self.offset = offset
        self.base_offset = base_offset
        super().__init__(reason)

    def __str__(self) -> str:
        parts = []
        if self.base_offset is not None:
            parts.append(f"batch at base offset {self.base_offset}")
        if self.offset is not None:
            parts.append(f"byte {self.offset}")
        prefix = ", ".join(parts)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class CorruptBatchError(RecordDecodeError):
    """A batch whose CRC does not match its bytes."""

    def __init__(self, base_offset: int, expected_crc: int, actual_crc: int, *, offset: int | None = None) -> None:
        self.expected_crc = expected_crc
        self.actual_crc = actual_crc
        super().__init__(
            f"CRC mismatch: header says 0x{expected_crc:08x}, bytes give 0x{actual_crc:08x}",
            offset=offset,
            base_offset=base_offset,
        )


class RecordEncodeError(RecordError):
    """Records that cannot be encoded as asked."""


class CompressionError(RecordError):
    """A compressed payload that does not decompress, or an unknown codec."""


class SegmentError(RecordError):
    """A log segment file or partition directory that cannot be read or written."""


class CaptureError(KwireError):
    """A capture file (pcap/pcapng) or pipeline input that cannot be read."""


class ConfigError(KwireError):
    """A configuration value that is invalid."""


class KafkaError(KwireError):
    """A Kafka error code with a message: what the broker core raises when a request cannot be served.

    The core raises it; the request's handler (or, for a whole request, the core's dispatcher)
    turns ``code`` into the response's error code and ``message`` into its error message where
    the response has one. ``code`` is an ``ErrorCode`` value (int, so the protocol layer stays
    independent of this module).
    """

    def __init__(self, code: int, message: str | None = None) -> None:
        self.code = int(code)
        self.message = message
        super().__init__(message if message else _code_name(self.code))

    @property
    def error_code(self) -> int:
        return self.code


class RecordErrorsError(KafkaError):
    """A batch refused because of some of its records (Produce v8+ RecordErrors): ``record_errors``
    lists (batch index, message) for each, as Kafka's LogValidator reports them."""

    def __init__(self, code: int, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors


def _code_name(code: int) -> str:
    try:
        from kwire.protocol.error_codes import ErrorCode

        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


class KafkaProtocolError(KafkaError):
    """A ``KafkaError`` whose code is fixed by its class (``error_code`` class attribute)."""

    error_code: ClassVar[int] = -1  # type: ignore[assignment]  # UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "") -> None:
        super().__init__(type(self).error_code, message)


class WireClientError(KwireError):
    """kwire's blocking wire client could not complete a request (connection, versions, bad answer)."""


class ConformanceError(KwireError):
    """A real-client conformance run that could not be carried out (client crashed, timed out, bad reply)."""


__all__.append("ConformanceError")
__all__.append("WireClientError")

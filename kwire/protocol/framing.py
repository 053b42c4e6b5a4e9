"""Size-prefixed frames and the request/response headers around every message.

A frame is an int32 size followed by that many bytes. ``FrameBuffer`` takes bytes as they
arrive and hands back whole frames; sizes above the limit are rejected before anything is
allocated for them (a real broker closes the connection).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kwire.errors import DecodeError, FrameTooLargeError
from kwire.protocol.registry import (
    api_info,
    request_header_version,
    response_header_version,
    schema_class,
)
from kwire.protocol.splice import FramePieces, SpliceBuffer

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "FrameBuffer",
    "RequestFrame",
    "ResponseFrame",
    "frame",
    "peek_request_header",
    "encode_request",
    "decode_request",
    "encode_response",
    "encode_response_frame",
    "decode_response",
]

# socket.request.max.bytes defaults to 100 MiB on a Kafka broker.
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024

_API_VERSIONS = 18
_SIZE = struct.Struct(">i")
_HEADER_PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id


def frame(payload: bytes | bytearray) -> bytes:
    """Prefix ``payload`` with its int32 size."""
    return _SIZE.pack(len(payload)) + bytes(payload)


class FrameBuffer:
    """Bytes in, whole frames out (sans-I/O).

    Consumed bytes are not cut off the front of the buffer on every frame (that moves all that
    follows); a read position advances instead and the buffer is compacted when drained or
    when the consumed prefix grows large. A large frame (a produce request, say) is assembled
    in a buffer of its own as its bytes arrive, and that buffer is the payload handed out:
    one copy from the socket, none after. ``receive_buffer``/``received`` let the I/O edge
    receive straight into it. Payloads are bytearrays, so a broker may rewrite a batch's
    offsets in place.

    The frame's own buffer grows with the bytes that actually arrive (doubling, up to the
    claimed size), so a size prefix alone pins at most ``_DIRECT_AT`` bytes: a client that
    claims 100 MiB and sends 14 bytes costs 64 KiB, not 100 MiB.
    """

    __slots__ = ("_buf", "_pos", "_big", "_big_fill", "_big_size", "max_frame_bytes")

    # Compact once this many consumed bytes sit in front of unread ones.
    _COMPACT_AT = 1 << 20
    # Frames at least this large that have not fully arrived get a buffer of their own.
    _DIRECT_AT = 64 * 1024

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._big: bytearray | None = None
        self._big_fill = 0
        self._big_size = 0  # the claimed size of the frame being assembled
        self.max_frame_bytes = max_frame_bytes

    def _grow(self, big: bytearray, need: int) -> None:
        """Make room for ``need`` more bytes (capacity doubles, never past the frame's size)."""
        want = min(self._big_size, max(2 * len(big), self._big_fill + need))
        if want > len(big):
            big.extend(bytes(want - len(big)))

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        big = self._big
        if big is not None:
            n = min(self._big_size - self._big_fill, len(data))
            if self._big_fill + n > len(big):
                self._grow(big, n)
            with memoryview(data) as view:
                big[self._big_fill : self._big_fill + n] = view[:n]
                self._big_fill += n
                if n < len(data):
                    self._buf += view[n:]
            return
        self._buf += data

    def receive_buffer(self) -> memoryview | None:
        """Room for the rest of a large frame, to receive into directly; None if there is none.

        The view must be released before the next call (the buffer may grow then)."""
        big = self._big
        if big is None or self._big_fill == self._big_size:
            return None
        if self._big_fill == len(big):
            self._grow(big, 1)
        return memoryview(big)[self._big_fill :]

    def received(self, n: int) -> None:
        """``n`` bytes were written into the last ``receive_buffer()``."""
        if self._big is None or n < 0 or self._big_fill + n > len(self._big):
            raise ValueError(f"received({n}) does not fit the frame being assembled")
        self._big_fill += n

    @property
    def pending(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        n = len(self._buf) - self._pos
        if self._big is not None:
            n += 4 + self._big_fill
        return n

    @property
    def allocated(self) -> int:
        """Bytes this buffer holds on to (for memory accounting and tests)."""
        return len(self._buf) + (len(self._big) if self._big is not None else 0)

    def next_frame(self) -> bytearray | None:
        """The next whole frame's payload (without the size), or None if more bytes are needed."""
        big = self._big
        if big is not None:
            if self._big_fill < self._big_size:
                return None
            self._big = None
            self._big_fill = self._big_size = 0
            return big
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            self._compact()
            return None
        (size,) = _SIZE.unpack_from(buf, pos)
        if size < 0:
            raise DecodeError(f"negative frame size {size}", offset=pos)
        if size > self.max_frame_bytes:
            raise FrameTooLargeError(size, self.max_frame_bytes)
        end = pos + 4 + size
        if len(buf) < end:
            if size >= self._DIRECT_AT:
                have = len(buf) - pos - 4
                big = bytearray(min(size, max(self._DIRECT_AT, 2 * have)))
                with memoryview(buf) as view:
                    big[:have] = view[pos + 4 :]
                self._big, self._big_fill, self._big_size = big, have, size
                buf.clear()
                self._pos = 0
            else:
                self._compact()
            return None
        with memoryview(buf) as view:
            payload = bytearray(view[pos + 4 : end])
        self._pos = end
        if end == len(buf) or end >= self._COMPACT_AT:
            self._compact()
        return payload

    def _compact(self) -> None:
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0

    def frames(self) -> list[bytearray]:
        out = []
        while (f := self.next_frame()) is not None:
            out.append(f)
        return out


@dataclass(slots=True)
class RequestFrame:
    """A decoded request: its header and its body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: Any
    body: Any
    header_version: int


@dataclass(slots=True)
class ResponseFrame:
    correlation_id: int
    header: Any
    body: Any
    header_version: int


def peek_request_header(payload: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a request frame, without decoding the rest.

    A broker needs these to answer even a request it cannot otherwise read.
    """
    if len(payload) < 8:
        raise DecodeError(f"request of {len(payload)} bytes is shorter than a request header", offset=0,
                          message="RequestHeader")
    key, version, corr = _HEADER_PREFIX.unpack_from(payload, 0)
    return key, version, corr


def encode_request(body: Any, version: int, *, correlation_id: int, client_id: str | None = "kwire",
                   size_prefix: bool = True) -> bytes:
    """Header + body (and the size prefix) of a request."""
    key = body.API_KEY
    hv = request_header_version(key, version)
    header = schema_class("RequestHeader")(
        request_api_key=key, request_api_version=version, correlation_id=correlation_id, client_id=client_id
    )
    out = bytearray(b"\0\0\0\0") if size_prefix else bytearray()
    header.encode_into(out, hv)
    body.encode_into(out, version)
    if size_prefix:
        _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_request(payload: bytes | memoryview) -> RequestFrame:
    """Decode a request frame's payload (size prefix already removed)."""
    key, version, _ = peek_request_header(payload)
    info = api_info(key)
    info.check_version(version)
    hv = request_header_version(key, version)
    header, pos = schema_class("RequestHeader").decode_from(payload, 0, hv)
    body = info.request_class.decode(memoryview(payload)[pos:], version)
    return RequestFrame(key, version, header.correlation_id, header.client_id, header, body, hv)


def encode_response(body: Any, version: int, *, correlation_id: int, size_prefix: bool = True) -> bytes:
    key = body.API_KEY
    hv = response_header_version(key, version)
    header = schema_class("ResponseHeader")(correlation_id=correlation_id)
    out = bytearray(b"\0\0\0\0") if size_prefix else bytearray()
    header.encode_into(out, hv)
    body.encode_into(out, version)
    if size_prefix:
        _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_response_frame(body: Any, version: int, *, correlation_id: int) -> bytes | FramePieces:
    """Header + body of a response (no size prefix), with record chains left uncopied.

    Returns bytes unless the body holds ``RecordChain`` values; then the pieces to send in
    order (see ``kwire.protocol.splice``).
    """
    key = body.API_KEY
    hv = response_header_version(key, version)
    out = SpliceBuffer()
    schema_class("ResponseHeader")(correlation_id=correlation_id).encode_into(out, hv)
    body.encode_into(out, version)
    if out.splices:
        return FramePieces(out)
    return bytes(out)


def decode_response(payload: bytes | memoryview, api_key: int, api_version: int) -> ResponseFrame:
    """Decode a response frame's payload; the caller knows which request it answers."""
    info = api_info(api_key)
    info.check_version(api_version)
    hv = response_header_version(api_key, api_version)
    header, pos = schema_class("ResponseHeader").decode_from(payload, 0, hv)
    body_bytes = memoryview(payload)[pos:]
    try:
        body = info.response_class.decode(body_bytes, api_version)
    except DecodeError:
        if api_key != _API_VERSIONS or api_version == 0:
            raise
        # KIP-511: a broker that does not know the requested ApiVersions version answers in the
        # v0 layout with UNSUPPORTED_VERSION; clients re-read such an answer as v0.
        body = info.response_class.decode(body_bytes, 0)
        if body.error_code == 0:
            raise
    return ResponseFrame(header.correlation_id, header, body, hv)

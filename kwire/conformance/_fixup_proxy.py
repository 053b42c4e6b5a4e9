"""A byte-level proxy in front of one librdkafka mock broker that answers ApiVersions v3+.

The librdkafka 2.16 mock offers ApiVersions 0-2 and answers a v3/v4 request with a
malformed UNSUPPORTED_VERSION body (clients.md §4, defect 1): Java reads it as v4 and
throttles the node for ~20 minutes, kafka-python cannot decode it. A real broker would
answer in the v0 layout. This proxy answers every ApiVersions v3+ request itself, in the
proper flexible layout, with the ranges the mock advertises; every other frame passes
through untouched. The mock is told to advertise the proxy's address
(``rd_kafka_mock_broker_set_host_port``), so no response needs rewriting.

It also repairs SyncGroup error responses whose Assignment is NULL (the mock sends that
with REBALANCE_IN_PROGRESS and the like; Java and kafkats reject a null in that
non-nullable field, and a real broker sends empty bytes). Successful responses are left
alone: aiokafka then fails the rebalance. SyncGroup is capped at v3, so the field sits
at a fixed place and the rewrite keeps the length.

Responses go back in request order (Kafka's per-connection guarantee): each request
queues either a ready answer or "read one upstream frame"; Produce with acks=0 queues
nothing, since no response comes.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from dataclasses import dataclass, field

from kwire.errors import ConformanceError

__all__ = ["FixupProxy", "query_api_versions"]

_API_PRODUCE = 0
_API_SYNC_GROUP = 14
_API_API_VERSIONS = 18
# SyncGroup v1-3 response: correlation_id, throttle_time_ms, error_code, then the
# assignment's int32 length.
_SYNC_ASSIGNMENT_LEN_AT = 4 + 4 + 2
# Highest ApiVersions version the proxy encodes (v4 has the v3 layout, KIP-896).
_PROXY_API_VERSIONS_MAX = 4
# Produce v9+ and ApiVersions v3+ use request header v2 (tagged fields).
_PRODUCE_FIRST_FLEXIBLE = 9
_HDR = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_SIZE = struct.Struct(">i")


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _put_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def produce_acks(frame: bytes) -> int:
    """The acks field of a Produce request frame (without its size prefix)."""
    version = _HDR.unpack_from(frame)[1]
    pos = _HDR.size
    (client_len,) = struct.unpack_from(">h", frame, pos)
    pos += 2 + max(client_len, 0)
    if version >= _PRODUCE_FIRST_FLEXIBLE:
        ntags, pos = _uvarint(frame, pos)
        for _ in range(ntags):
            _, pos = _uvarint(frame, pos)
            size, pos = _uvarint(frame, pos)
            pos += size
        txn_len, pos = _uvarint(frame, pos)  # compact nullable string: length + 1
        pos += max(txn_len - 1, 0)
    elif version >= 3:
        (txn_len,) = struct.unpack_from(">h", frame, pos)
        pos += 2 + max(txn_len, 0)
    (acks,) = struct.unpack_from(">h", frame, pos)
    return int(acks)


def query_api_versions(host: str, port: int, timeout_s: float = 5.0) -> dict[int, tuple[int, int]]:
    """Ask a broker for its ranges with ApiVersions v0 (whose layout every broker answers)."""
    client_id = b"kwire-proxy"
    body = _HDR.pack(_API_API_VERSIONS, 0, 1) + struct.pack(">h", len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(_SIZE.pack(len(body)) + body)
        data = _recv_exact(sock, _SIZE.unpack(_recv_exact(sock, 4))[0])
    _, error, count = struct.unpack_from(">ihi", data)
    if error:
        raise ConformanceError(f"ApiVersions v0 to {host}:{port} failed with error {error}")
    ranges = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", data, 10 + 6 * i)
        ranges[key] = (lo, hi)
    return ranges


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConformanceError("connection closed during ApiVersions")
        buf += chunk
    return bytes(buf)


def encode_api_versions_v3(correlation_id: int, ranges: dict[int, tuple[int, int]]) -> bytes:
    """An ApiVersions v3/v4 response frame body (response header v0, flexible body)."""
    out = bytearray(struct.pack(">ih", correlation_id, 0))
    out += _put_uvarint(len(ranges) + 1)
    for key in sorted(ranges):
        lo, hi = ranges[key]
        out += struct.pack(">hhh", key, lo, hi) + b"\x00"
    out += struct.pack(">i", 0) + b"\x00"  # throttle_time_ms, no tagged fields
    return bytes(out)


def fix_response(key: int, version: int, frame: bytes) -> bytes:
    """Repair the mock's responses that real clients reject (see the module docstring)."""
    at = _SYNC_ASSIGNMENT_LEN_AT
    if (
        key == _API_SYNC_GROUP
        and 1 <= version <= 3
        and len(frame) >= at + 4
        and struct.unpack_from(">i", frame, at)[0] == -1
        and struct.unpack_from(">h", frame, at - 2)[0] != 0
    ):
        return frame[:at] + struct.pack(">i", 0) + frame[at + 4 :]
    return frame


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(4)
        return await reader.readexactly(_SIZE.unpack(head)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


@dataclass(slots=True)
class FixupProxy:
    """Listen on 127.0.0.1:<ephemeral> and forward to ``upstream``, in a daemon thread."""

    upstream_host: str
    upstream_port: int
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _ready: threading.Event = field(default_factory=threading.Event, repr=False)

    def start(self, timeout_s: float = 10.0) -> FixupProxy:
        """Query the upstream's ranges, start listening, return once the port is known."""
        self.ranges = query_api_versions(self.upstream_host, self.upstream_port)
        lo, _ = self.ranges.get(_API_API_VERSIONS, (0, 2))
        self.ranges[_API_API_VERSIONS] = (lo, _PROXY_API_VERSIONS_MAX)
        threading.Thread(target=self._run, name="kwire-fixup-proxy", daemon=True).start()
        if not self._ready.wait(timeout_s) or not self.port:
            raise ConformanceError("fix-up proxy did not start")
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            loop.close()

    def stop(self) -> None:
        """Stop the event loop (open connections die with it)."""
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(loop.stop)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(self.upstream_host, self.upstream_port)
        except OSError:
            client_w.close()
            return
        # int = "the next response comes from upstream, for this api key";
        # bytes = an answer made here.
        order: asyncio.Queue[bytes | tuple[int, int]] = asyncio.Queue()

        async def client_to_upstream() -> None:
            while (frame := await _read_frame(client_r)) is not None:
                key, version, corr = _HDR.unpack_from(frame)
                if key == _API_API_VERSIONS and version >= 3:
                    await order.put(encode_api_versions_v3(corr, self.ranges))
                    continue
                up_w.write(_SIZE.pack(len(frame)) + frame)
                await up_w.drain()
                if not (key == _API_PRODUCE and produce_acks(frame) == 0):
                    await order.put((key, version))

        async def upstream_to_client() -> None:
            while True:
                pending = await order.get()
                if isinstance(pending, bytes):
                    item = pending
                else:
                    frame = await _read_frame(up_r)
                    if frame is None:
                        return
                    item = fix_response(pending[0], pending[1], frame)
                client_w.write(_SIZE.pack(len(item)) + item)
                await client_w.drain()

        tasks = [asyncio.ensure_future(client_to_upstream()), asyncio.ensure_future(upstream_to_client())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except (ConnectionError, struct.error):
            pass
        finally:
            for t in tasks:
                t.cancel()
            for w in (client_w, up_w):
                w.close()

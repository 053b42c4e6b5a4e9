"""Kafka conversations out of captured TCP: reassembly, framing, resync, request/response pairs.

Theory of operation. Packets arrive in capture order. Each TCP connection has two directions,
and each direction a reassembler that turns sequence numbers into stream offsets: bytes at the
expected offset are delivered, later ones wait (out of order), earlier ones are dropped and
counted (retransmission). When the peer acknowledges bytes past a hole (it got them; the capture
did not), when waiting bytes pile up past ``MAX_HELD_BYTES``, or when the capture ends, the
missing range is declared a *gap*, reported, and skipped. Delivered bytes go to a
framer that cuts size-prefixed Kafka frames. A framer starts *synced* when the capture saw the
connection's SYN; otherwise (the capture began mid-connection) and after every gap it must
*resync*: a request stream at the first offset where a plausible request header sits (known api
key and version, a client id that fits, and the following frame plausible too), a response
stream at the first size prefix followed by the correlation id of a request still waiting for
its answer; a candidate counts only once its whole frame decodes with kwire's codec (a response
with its request's api key and version). Skipped bytes are reported, never fatal.

Requests wait in the connection's pending table by correlation id; a response takes the oldest
request with its id, and is later decoded with that request's api key and version. Requests
still waiting when the capture ends come out with no response (acks=0 produce, or cut off).

The client is the side that sent the SYN; without one, the side not on a broker port
(``broker_ports``), else the side with the higher port number.
"""

from __future__ import annotations

import struct
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kwire.capture.pcap import (
    ACK,
    FIN,
    RST,
    SYN,
    SkipTcp,
    TcpSegment,
    _endpoints,
    iter_packets,
    parse_tcp,
)
from kwire.errors import KwireError, UnknownApiKeyError
from kwire.protocol.framing import decode_request, decode_response
from kwire.protocol.registry import api_info

__all__ = [
    "WireFrame",
    "WireExchange",
    "CaptureIssue",
    "KafkaCaptureReader",
    "read_kafka_exchanges",
    "iter_kafka_exchanges",
    "connection_shard",
    "DEFAULT_BROKER_PORTS",
    "MAX_FRAME_BYTES",
    "MAX_HELD_BYTES",
]

DEFAULT_BROKER_PORTS = frozenset({9092, 9093, 9094, 9095, 9096, 9097, 9192, 19092, 29092})
MAX_FRAME_BYTES = 256 << 20  # larger size prefixes are taken as garbage (resync)
MAX_HELD_BYTES = 4 << 20  # out-of-order bytes held before the hole is declared a gap
MAX_RESYNC_FRAME_BYTES = 16 << 20  # a resync candidate claiming more is not waited for
_I32 = struct.Struct(">i")
_REQ_PREFIX = struct.Struct(">ihhih")  # size, api key, api version, correlation id, client id length
_RESP_PREFIX = struct.Struct(">ii")


@dataclass(slots=True)
class WireFrame:
    """One Kafka frame (size prefix removed) with where and when it was seen."""

    offset: int  # stream offset of the size prefix within its direction
    first_ts_ns: int  # timestamp of the packet holding the size prefix
    last_ts_ns: int  # timestamp of the packet that completed the frame
    payload: bytes


@dataclass(slots=True)
class WireExchange:
    """A request and the response to it (either may be missing)."""

    conn_id: str
    client: str
    server: str
    correlation_id: int
    api_key: int
    api_version: int
    request: WireFrame | None
    response: WireFrame | None


@dataclass(slots=True)
class CaptureIssue:
    """Something the reader noticed and worked around."""

    conn_id: str
    direction: str  # "request" | "response"
    kind: str  # retransmission | gap | mid_stream | resync | bad_frame | truncated | unpaired_response
    offset: int
    nbytes: int
    ts_ns: int
    detail: str = ""


def connection_shard(a: str, b: str, shards: int) -> int:
    """Which of ``shards`` owns the connection between endpoints ``a`` and ``b`` (order-free)."""
    key = "|".join(sorted((a, b))).encode()
    return zlib.crc32(key) % shards


def _plausible_request(buf: bytearray | bytes, p: int, end: int, depth: int = 1) -> bool:
    if p + 14 > end:
        return False
    size, key, version, _corr, cid_len = _REQ_PREFIX.unpack_from(buf, p)
    if size < 10 or size > MAX_FRAME_BYTES or cid_len < -1 or cid_len > size - 10:
        return False
    try:
        info = api_info(key)
    except UnknownApiKeyError:
        return False
    if not info.supports(version):
        return False
    nxt = p + 4 + size
    if depth and nxt + 4 <= end:
        return _plausible_request(buf, nxt, end, 0) or nxt + 14 > end
    return True


class _Framer:
    """Cuts one direction's byte stream into frames; resyncs when it is not sure where one starts."""

    def __init__(self, conn: _Conn, is_request: bool, synced: bool) -> None:
        self.conn = conn
        self.is_request = is_request
        self.synced = synced
        self.buf = bytearray()
        self.pos = 0  # read position in buf
        self.buf_off = 0  # stream offset of buf[0]
        self.marks: deque[tuple[int, int]] = deque()  # (stream offset, ts) of delivered segments

    @property
    def direction(self) -> str:
        return "request" if self.is_request else "response"

    def feed(self, off: int, data: bytes | memoryview, ts: int) -> None:
        if not self.buf and self.pos == 0:
            self.buf_off = off
        self.buf += data
        self.marks.append((off, ts))
        self._cut()

    def jump(self, off: int) -> None:
        """A gap: bytes up to ``off`` are lost; whatever partial frame was buffered is dropped."""
        left = len(self.buf) - self.pos
        if left:
            at = self.buf_off + self.pos
            if self.synced:
                self.conn.issue(self.direction, "truncated", at, left, self._ts_at(at), "partial frame before a gap")
            else:
                self.conn.issue(self.direction, "resync", at, left, self._ts_at(at), "unsynchronised bytes before a gap")
        self.buf = bytearray()
        self.pos = 0
        self.buf_off = off
        self.synced = False

    def _ts_at(self, off: int) -> int:
        marks = self.marks
        while len(marks) > 1 and marks[1][0] <= off:
            marks.popleft()
        return marks[0][1] if marks else 0

    def _last_ts(self, end_off: int) -> int:
        ts = self.marks[0][1] if self.marks else 0
        for o, t in self.marks:
            if o >= end_off:
                break
            ts = t
        return ts

    def _confirm(self, p: int) -> bool | None:
        """Does a whole frame that decodes with kwire's codec start at ``p``? None: not all here yet."""
        buf = self.buf
        size = _I32.unpack_from(buf, p)[0]
        if size > MAX_RESYNC_FRAME_BYTES:
            return False
        if p + 4 + size > len(buf):
            return None
        payload = bytes(buf[p + 4 : p + 4 + size])
        try:
            if self.is_request:
                decode_request(payload)
            else:
                corr = _I32.unpack_from(payload, 0)[0]
                req = self.conn.pending[corr][0].payload
                key, version = struct.unpack_from(">hh", req, 0)
                decode_response(payload, key, version)
        except KwireError:
            return False
        return True

    def _candidates(self, start: int, end: int) -> Iterator[int]:
        buf = self.buf
        if self.is_request:
            for p in range(start, end - 13):
                if _plausible_request(buf, p, end):
                    yield p
            return
        hits = []
        for corr in self.conn.pending:
            needle = _I32.pack(corr)
            q = buf.find(needle, start + 4)
            while q >= 0:
                size = _I32.unpack_from(buf, q - 4)[0]
                if 4 <= size <= MAX_FRAME_BYTES:
                    hits.append(q - 4)
                q = buf.find(needle, q + 1)
        yield from sorted(hits)

    def _resync(self) -> bool:
        start, end = self.pos, len(self.buf)
        waiting = -1
        for p in self._candidates(start, end):
            verdict = self._confirm(p)
            if verdict:  # the first candidate whose whole frame decodes wins
                self._drop(start, p, "resynchronised")
                self.synced = True
                return True
            if verdict is None and waiting < 0:
                waiting = p  # not all here yet: keep it in case nothing later decodes
        if waiting >= 0:
            self._drop(start, waiting, "resynchronising")
        elif self.is_request:
            self._drop(start, max(start, end - 13), "no request header found yet")
        elif end - start > MAX_HELD_BYTES:
            self._drop(start, end - 8, "no answer to a seen request found yet")
        return False

    def _drop(self, start: int, stop: int, detail: str) -> None:
        if stop <= start:
            return
        off = self.buf_off + start
        self.conn.issue(self.direction, "resync", off, stop - start, self._ts_at(off), detail)
        self.pos = stop

    def _cut(self) -> None:
        buf = self.buf
        while True:
            if not self.synced and not self._resync():
                break
            end = len(buf)
            p = self.pos
            if p + 4 > end:
                break
            size = _I32.unpack_from(buf, p)[0]
            if size < (10 if self.is_request else 4) or size > MAX_FRAME_BYTES:
                off = self.buf_off + p
                self.conn.issue(self.direction, "bad_frame", off, 4, self._ts_at(off), f"size prefix {size}")
                self.synced = False
                self.pos = p + 1
                continue
            if p + 4 + size > end:
                break
            off = self.buf_off + p
            frame = WireFrame(off, self._ts_at(off), self._last_ts(off + 4 + size), bytes(buf[p + 4 : p + 4 + size]))
            self.pos = p + 4 + size
            if self.is_request:
                self.conn.on_request(frame)
            else:
                self.conn.on_response(frame)
        if self.pos > 65536 and self.pos * 2 > len(buf):
            del buf[: self.pos]
            self.buf_off += self.pos
            self.pos = 0

    def finish(self) -> None:
        left = len(self.buf) - self.pos
        if left:
            off = self.buf_off + self.pos
            self.conn.issue(self.direction, "truncated", off, left, self._ts_at(off),
                            "the capture ends inside a frame" if self.synced else "unsynchronised bytes at the end")


class _Stream:
    """One direction's TCP reassembly: sequence numbers -> in-order bytes for a framer."""

    def __init__(self, conn: _Conn, framer: _Framer, seq: int, off: int) -> None:
        self.conn = conn
        self.framer = framer
        self.next_seq = seq & 0xFFFFFFFF
        self.next_off = off
        self.held: dict[int, tuple[bytes, int]] = {}
        self.held_bytes = 0

    def segment(self, seq: int, payload: memoryview, ts: int) -> None:
        n = len(payload)
        delta = ((seq - self.next_seq + 0x80000000) & 0xFFFFFFFF) - 0x80000000
        off = self.next_off + delta
        if off + n <= self.next_off:
            self.conn.issue(self.framer.direction, "retransmission", off, n, ts, "already delivered")
            return
        if off < self.next_off:
            cut = self.next_off - off
            self.conn.issue(self.framer.direction, "retransmission", off, cut, ts, "overlaps delivered bytes")
            payload, off = payload[cut:], self.next_off
        if off > self.next_off:
            if off in self.held:
                self.conn.issue(self.framer.direction, "retransmission", off, n, ts, "already held")
                return
            self.held[off] = (bytes(payload), ts)
            self.held_bytes += len(payload)
            if self.held_bytes > MAX_HELD_BYTES:
                self.flush()
            return
        self._deliver(payload, ts)
        self._drain()

    def _deliver(self, payload: bytes | memoryview, ts: int) -> None:
        self.framer.feed(self.next_off, payload, ts)
        self.next_off += len(payload)
        self.next_seq = (self.next_seq + len(payload)) & 0xFFFFFFFF

    def _drain(self) -> None:
        while self.held:
            first = min(self.held)
            if first > self.next_off:
                return
            data, ts = self.held.pop(first)
            self.held_bytes -= len(data)
            if first + len(data) <= self.next_off:
                self.conn.issue(self.framer.direction, "retransmission", first, len(data), ts, "already delivered")
                continue
            self._deliver(data[self.next_off - first :], ts)

    def acked(self, ack: int) -> None:
        """The peer acknowledged up to ``ack``: a hole before that was received, just not captured."""
        if not self.held:
            return
        delta = ((ack - self.next_seq + 0x80000000) & 0xFFFFFFFF) - 0x80000000
        if delta > 0:
            self.flush(self.next_off + delta)

    def flush(self, limit: int | None = None) -> None:
        """Give up on missing bytes (those before ``limit``, or all): each hole is a gap."""
        while self.held:
            first = min(self.held)
            if limit is not None and first > limit:
                return
            if first > self.next_off:
                missing = first - self.next_off
                self.conn.issue(self.framer.direction, "gap", self.next_off, missing, self.held[first][1],
                                "bytes never captured")
                self.framer.jump(first)
                self.next_seq = (self.next_seq + missing) & 0xFFFFFFFF
                self.next_off = first
            self._drain()


@dataclass(slots=True)
class _Conn:
    reader: KafkaCaptureReader
    conn_id: str
    client: str
    server: str
    saw_syn: bool
    streams: dict[bool, _Stream | None] = field(default_factory=lambda: {True: None, False: None})
    framers: dict[bool, _Framer] = field(default_factory=dict)
    pending: dict[int, deque[WireFrame]] = field(default_factory=dict)
    order: deque[tuple[int, WireFrame]] = field(default_factory=deque)
    closed: bool = False

    def issue(self, direction: str, kind: str, offset: int, nbytes: int, ts: int, detail: str = "") -> None:
        self.reader.issues.append(CaptureIssue(self.conn_id, direction, kind, offset, nbytes, ts, detail))

    def on_request(self, frame: WireFrame) -> None:
        corr = _I32.unpack_from(frame.payload, 4)[0]
        self.pending.setdefault(corr, deque()).append(frame)

    def on_response(self, frame: WireFrame) -> None:
        corr = _I32.unpack_from(frame.payload, 0)[0]
        waiting = self.pending.get(corr)
        if not waiting:
            self.issue("response", "unpaired_response", frame.offset, len(frame.payload) + 4, frame.first_ts_ns,
                       f"no request with correlation id {corr} was seen")
            self.reader.out.append(self._exchange(None, frame, corr))
            return
        req = waiting.popleft()
        if not waiting:
            del self.pending[corr]
        self.reader.out.append(self._exchange(req, frame, corr))

    def _exchange(self, req: WireFrame | None, resp: WireFrame | None, corr: int) -> WireExchange:
        key = version = -1
        if req is not None:
            key, version = struct.unpack_from(">hh", req.payload, 0)
        return WireExchange(self.conn_id, self.client, self.server, corr, key, version, req, resp)

    def finish(self) -> None:
        for side in (True, False):
            stream = self.streams[side]
            if stream is not None:
                stream.flush()
            framer = self.framers.get(side)
            if framer is not None:
                framer.finish()
        rest = [(f.offset, corr, f) for corr, q in self.pending.items() for f in q]
        for _, corr, f in sorted(rest):
            self.reader.out.append(self._exchange(f, None, corr))
        self.pending.clear()


class KafkaCaptureReader:
    """Feed TCP segments (or whole captures); take finished exchanges from ``drain()``.

    ``shard=(k, n)`` keeps only the connections ``connection_shard`` assigns to ``k`` of ``n``,
    so n tasks can share one capture file without splitting a connection.
    """

    def __init__(self, *, broker_ports: Iterable[int] = DEFAULT_BROKER_PORTS, shard: tuple[int, int] = (0, 1)) -> None:
        self.broker_ports = frozenset(broker_ports)
        self.shard = shard
        self.issues: list[CaptureIssue] = []
        self.out: list[WireExchange] = []
        self._conns: dict[tuple[str, str], _Conn] = {}
        self._generation: dict[tuple[str, str], int] = {}
        self._mine: dict[tuple[str, str], bool] = {}
        self.packets = 0  # packets looked at (a shard does not count those its filter dropped)
        self.tcp_segments = 0

    def _owned(self, a: str, b: str) -> bool:
        key = (a, b) if a < b else (b, a)
        mine = self._mine.get(key)
        if mine is None:
            k, n = self.shard
            mine = self._mine[key] = n <= 1 or connection_shard(a, b, n) == k
        return mine

    def _port(self, endpoint: str) -> int:
        return int(endpoint.rsplit(":", 1)[1])

    def _new_conn(self, key: tuple[str, str], seg: TcpSegment) -> _Conn:
        syn_only = bool(seg.flags & SYN) and not seg.flags & ACK
        if syn_only:
            client, server = seg.src, seg.dst
        elif bool(seg.flags & SYN) or self._port(seg.src) in self.broker_ports and self._port(seg.dst) not in self.broker_ports:  # SYN-ACK first: its sender is the server
            client, server = seg.dst, seg.src
        elif self._port(seg.dst) in self.broker_ports:
            client, server = seg.src, seg.dst
        else:
            client, server = (seg.src, seg.dst) if self._port(seg.src) > self._port(seg.dst) else (seg.dst, seg.src)
        gen = self._generation[key] = self._generation.get(key, 0) + 1
        conn_id = f"{client}->{server}" + (f"#{gen}" if gen > 1 else "")
        conn = _Conn(self, conn_id, client, server, saw_syn=bool(seg.flags & SYN))
        self._conns[key] = conn
        return conn

    def segment(self, seg: TcpSegment, ts: int) -> None:
        """One TCP segment, in capture order."""
        self.tcp_segments += 1
        a, b = seg.src, seg.dst
        if not self._owned(a, b):
            return
        key = (a, b) if a < b else (b, a)
        conn = self._conns.get(key)
        if conn is not None and seg.flags & SYN and not seg.flags & ACK and conn.streams[seg.src == conn.client] is not None:
            # the same four-tuple reused for a new connection
            conn.finish()
            conn = None
        if conn is None:
            if not len(seg.payload) and not seg.flags & SYN:
                return  # a bare ACK/FIN of a connection we never saw start: nothing to learn
            conn = self._new_conn(key, seg)
        from_client = seg.src == conn.client
        stream = conn.streams[from_client]
        if stream is None:
            if seg.flags & SYN:
                framer = _Framer(conn, from_client, synced=True)
                conn.framers[from_client] = framer
                conn.streams[from_client] = _Stream(conn, framer, seg.seq + 1, 0)
                return
            if not len(seg.payload):
                return
            framer = _Framer(conn, from_client, synced=False)
            conn.framers[from_client] = framer
            stream = conn.streams[from_client] = _Stream(conn, framer, seg.seq, 0)
            conn.issue(framer.direction, "mid_stream", 0, 0, ts, "the capture starts inside this connection")
        if seg.flags & ACK:
            other = conn.streams[not from_client]
            if other is not None:
                other.acked(seg.ack)
        if len(seg.payload):
            stream.segment(seg.seq, seg.payload, ts)
        if seg.flags & (FIN | RST):
            conn.closed = True

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Every packet of a pcap/pcapng capture; finished exchanges wait in ``drain()``."""
        for ts, linktype, frame in iter_packets(data, skip=self.packet_filter()):
            self.packets += 1
            seg = parse_tcp(linktype, frame)
            if seg is not None:
                self.segment(seg, ts)

    def packet_filter(self) -> SkipTcp | None:
        """For ``iter_packets(skip=...)``: drops the other shards' packets before they are parsed.

        Only an economy: ``segment`` checks ownership again, so packets the filter cannot judge
        (not Ethernet + IPv4 without options) still go to the right shard.
        """
        if self.shard[1] <= 1:
            return None

        def skip(key: bytes) -> bool:
            return not self._owned(*_endpoints(key))

        return skip

    def drain(self) -> list[WireExchange]:
        out, self.out = self.out, []
        return out

    def finish(self) -> list[WireExchange]:
        """End of capture: flush every connection; returns the remaining exchanges."""
        for conn in self._conns.values():
            conn.finish()
        self._conns.clear()
        return self.drain()


def read_kafka_exchanges(
    data: bytes | bytearray | memoryview,
    *,
    broker_ports: Iterable[int] = DEFAULT_BROKER_PORTS,
    shard: tuple[int, int] = (0, 1),
) -> tuple[list[WireExchange], list[CaptureIssue]]:
    """Every exchange of a capture, in the order they completed, and the issues met on the way."""
    reader = KafkaCaptureReader(broker_ports=broker_ports, shard=shard)
    reader.feed(data)
    out = reader.drain()
    out.extend(reader.finish())
    return out, reader.issues


def iter_kafka_exchanges(data: bytes | bytearray | memoryview, reader: KafkaCaptureReader) -> Iterator[WireExchange]:
    """Like ``read_kafka_exchanges`` but streaming; issues collect in ``reader.issues``."""
    for ts, linktype, frame in iter_packets(data, skip=reader.packet_filter()):
        reader.packets += 1
        seg = parse_tcp(linktype, frame)
        if seg is not None:
            reader.segment(seg, ts)
            if reader.out:
                yield from reader.drain()
    yield from reader.finish()

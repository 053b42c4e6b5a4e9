"""One client connection, sans-I/O: bytes in, response bytes out, in request order.

As a Kafka broker does, a connection has at most one request in progress ("muted" until its
response is ready), so responses leave in request order however many requests the client
pipelines. Frames above the size limit close the connection before any of them is buffered.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from kwire.broker.core.broker_core import BrokerCore, ConnInfo
from kwire.broker.core.configs import ResourceType
from kwire.errors import DecodeError, FrameTooLargeError
from kwire.protocol.framing import FrameBuffer
from kwire.protocol.splice import Buffer, FramePieces

__all__ = ["Connection", "UNMUTE"]

# Put in the core's outbox by a throttled connection's deadline: not a frame, a nudge to read again.
UNMUTE: bytes = bytes(bytearray(b"unmute"))

_SIZE_PREFIX_BYTES = 4
_TLS_HANDSHAKE_RECORD = 0x1603  # content type 22, version 3.x: what a ClientHello starts with
# Pieces smaller than this are joined with their neighbours before a vectored write: a copy of
# a few kilobytes is cheaper than an iovec entry and keeps small responses to one buffer.
_JOIN_BELOW = 64 * 1024


class Connection:
    __slots__ = ("core", "info", "_frames", "_queue", "_out", "_out_bytes", "busy", "closed", "close_reason",
                 "_pre_auth_limit", "_unmute_at")

    def __init__(self, core: BrokerCore, broker_id: int, peer: str = "", listener: str | None = None) -> None:
        self.core = core
        self.info: ConnInfo = core.connect(broker_id, peer, listener)
        self._frames = FrameBuffer(core.config.max_request_bytes)
        self._pre_auth_limit = core.configs.get_int(ResourceType.BROKER, "", "sasl.server.max.receive.size")
        self._queue: deque[tuple[bytearray, int]] = deque()  # (frame, broker time it arrived)
        self._out: list[Buffer] = []
        self._out_bytes = 0
        self.busy = False
        self.closed = False
        self.close_reason = ""
        self._unmute_at = 0  # the unmute deadline already set (KIP-219 throttling)

    @property
    def conn_id(self) -> int:
        return self.info.conn_id

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Feed bytes from the socket; dispatch what can be dispatched."""
        if self.closed:
            return
        self._frames.feed(data)
        self._dispatch()

    def receive_buffer(self) -> memoryview | None:
        """Where the socket may write the rest of a large request directly (see FrameBuffer)."""
        return None if self.closed else self._frames.receive_buffer()

    def received_into(self, n: int) -> None:
        """``n`` bytes arrived in the last ``receive_buffer()``."""
        if self.closed:
            return
        self._frames.received(n)
        self._dispatch()

    def _dispatch(self) -> None:
        # Before SASL completes, frames are capped at sasl.server.max.receive.size as Kafka's
        # authenticator reads them (a larger one closes the connection); after, the broker's limit.
        info = self.info
        self._frames.max_frame_bytes = (self._pre_auth_limit if info.sasl_mechanism is not None
                                        and not info.authenticated else self.core.config.max_request_bytes)
        try:
            now = self.core.clock.now_ms()
            for payload in self._frames.frames():
                self._queue.append((payload, now))
        except (FrameTooLargeError, DecodeError) as exc:
            reason = str(exc)
            if isinstance(exc, FrameTooLargeError) and exc.size >> 16 == _TLS_HANDSHAKE_RECORD:
                # Kafka logs only the size; kwire names the likely cause (SEC-4)
                reason += " (the bytes open a TLS handshake record: a TLS client on a plaintext listener)"
            self.close(reason)
            return
        self._pump()

    def _pump(self) -> None:
        while not self.busy and self._queue and not self.closed:
            if self._muted():
                break
            payload, self.info.received_ms = self._queue.popleft()
            outcome = self.core.handle(self.info, payload)
            if outcome.kind == "send":
                self._queue_frame(outcome.data)
            elif outcome.kind == "deferred":
                self.busy = True
            elif outcome.kind == "close":
                self.close(outcome.reason)

    def _muted(self) -> bool:
        """KIP-219: a throttled connection handles nothing until its throttle time has passed
        (its requests wait here, in arrival order); a deadline nudges it when the time comes."""
        until = self.info.muted_until_ms
        core = self.core
        if until <= core.clock.now_ms():
            return False
        if self._unmute_at != until:
            self._unmute_at = until
            conn_id = self.conn_id
            core.deadlines.at(until, lambda: core.outbox.append((conn_id, UNMUTE)))
        return True

    def complete(self, data: bytes | FramePieces | None) -> None:
        """A deferred response is ready (None: close instead of answering)."""
        if self.closed:
            return
        if data is UNMUTE:
            self._pump()
            return
        self.busy = False
        if data is None:
            self.close(self.info.close_reason or "closed by the broker")
            return
        self._queue_frame(data)
        self._pump()

    @property
    def queued_bytes(self) -> int:
        """Bytes waiting to be sent."""
        return self._out_bytes

    def requeue(self, rest: Sequence[Buffer]) -> None:
        """Put back, in front, what a write did not take (``rest`` is in order)."""
        self._out[:0] = rest
        self._out_bytes += sum(len(p) for p in rest)

    def _queue_frame(self, data: bytes | FramePieces) -> None:
        self._out_bytes += _SIZE_PREFIX_BYTES + len(data)
        self._out.append(len(data).to_bytes(_SIZE_PREFIX_BYTES, "big"))
        if isinstance(data, FramePieces):
            self._out.extend(data.pieces)
        else:
            self._out.append(data)

    def pieces_to_send(self) -> list[Buffer]:
        """Everything queued, as buffers for one vectored write, in order.

        Large pieces (stored record batches above all) go out as they are; runs of small
        ones are joined.
        """
        out, self._out = self._out, []
        self._out_bytes = 0
        if len(out) <= 1:
            return out
        pieces: list[Buffer] = []
        run: list[Buffer] = []
        for p in out:
            if len(p) < _JOIN_BELOW:
                run.append(p)
                continue
            if run:
                pieces.append(run[0] if len(run) == 1 else b"".join(run))
                run = []
            pieces.append(p)
        if run:
            pieces.append(run[0] if len(run) == 1 else b"".join(run))
        return pieces

    def close(self, reason: str) -> None:
        if not self.closed:
            self.closed = True
            self.close_reason = reason
            self.core.disconnect(self.info.conn_id)

    def connection_lost(self) -> None:
        """The client went away (possibly mid-request); nothing acknowledged is affected."""
        self.close("client disconnected")

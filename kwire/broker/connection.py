"""One client connection, sans-I/O: bytes in, response bytes out, in request order.

As a Kafka broker does, a connection has at most one request in progress ("muted" until its
response is ready), so responses leave in request order however many requests the client
pipelines. Frames above the size limit close the connection before any of them is buffered.
"""

from __future__ import annotations

from collections import deque

from kwire.broker.core.broker_core import BrokerCore, ConnInfo
from kwire.errors import DecodeError, FrameTooLargeError
from kwire.protocol.framing import FrameBuffer

__all__ = ["Connection"]

_SIZE_PREFIX_BYTES = 4


class Connection:
    __slots__ = ("core", "info", "_frames", "_queue", "_out", "busy", "closed", "close_reason")

    def __init__(self, core: BrokerCore, broker_id: int, peer: str = "") -> None:
        self.core = core
        self.info: ConnInfo = core.connect(broker_id, peer)
        self._frames = FrameBuffer(core.config.max_request_bytes)
        self._queue: deque[bytes] = deque()
        self._out: list[bytes] = []
        self.busy = False
        self.closed = False
        self.close_reason = ""

    @property
    def conn_id(self) -> int:
        return self.info.conn_id

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the socket; dispatch what can be dispatched."""
        if self.closed:
            return
        self._frames.feed(data)
        try:
            for payload in self._frames.frames():
                self._queue.append(payload)
        except (FrameTooLargeError, DecodeError) as exc:
            self.close(str(exc))
            return
        self._pump()

    def _pump(self) -> None:
        while not self.busy and self._queue and not self.closed:
            payload = self._queue.popleft()
            outcome = self.core.handle(self.info, payload)
            if outcome.kind == "send":
                self._queue_frame(outcome.data)
            elif outcome.kind == "deferred":
                self.busy = True
            elif outcome.kind == "close":
                self.close(outcome.reason)

    def complete(self, data: bytes | None) -> None:
        """A deferred response is ready (None: close instead of answering)."""
        if self.closed:
            return
        self.busy = False
        if data is None:
            self.close("closed by the broker")
            return
        self._queue_frame(data)
        self._pump()

    def _queue_frame(self, data: bytes) -> None:
        # Prefix and payload go out as separate pieces: joining them here would copy every fetch twice.
        self._out.append(len(data).to_bytes(_SIZE_PREFIX_BYTES, "big"))
        self._out.append(data)

    def data_to_send(self) -> bytes:
        if not self._out:
            return b""
        out = b"".join(self._out)  # the one copy on the way to the socket
        self._out.clear()
        return out

    def close(self, reason: str) -> None:
        if not self.closed:
            self.closed = True
            self.close_reason = reason
            self.core.disconnect(self.info.conn_id)

    def connection_lost(self) -> None:
        """The client went away (possibly mid-request); nothing acknowledged is affected."""
        self.close("client disconnected")

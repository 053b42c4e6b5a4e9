"""A scripted raw-socket Kafka client: kwire's own codec over one blocking socket.

It does exactly what it is told (any version, any correlation id, any field values), so
tests use it to play a misbehaving client, and replay and the fuzzer use it to send frames.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from dataclasses import dataclass, field
from typing import Any

from kwire.errors import KwireError

__all__ = ["WireClient", "WireClosed"]

_SIZE = struct.Struct(">i")


class WireClosed(KwireError):
    """The broker closed the connection (or it failed) while the client waited."""


@dataclass(slots=True)
class WireClient:
    """One connection to ``host:port`` (the first address of a bootstrap list)."""

    bootstrap: str
    timeout_s: float = 10.0
    client_id: str | None = "kwire-wire-client"
    sock: socket.socket | None = field(default=None, repr=False)
    next_correlation_id: int = 1

    def connect(self) -> WireClient:
        host, port = self.bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=self.timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self

    def __enter__(self) -> WireClient:
        return self.connect() if self.sock is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None

    # --- frames ---------------------------------------------------------------------------------
    def send_frame(self, payload: bytes) -> None:
        """Send one frame: size prefix + ``payload`` (header and body)."""
        self._sock().sendall(_SIZE.pack(len(payload)) + payload)

    def send_bytes(self, data: bytes) -> None:
        """Send bytes as they are (no size prefix added)."""
        self._sock().sendall(data)

    def recv_frame(self) -> bytes:
        """The next response frame's payload (size prefix removed)."""
        size = _SIZE.unpack(self._exact(4))[0]
        return self._exact(size)

    def _sock(self) -> socket.socket:
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        return self.sock

    def _exact(self, n: int) -> bytes:
        sock = self._sock()
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = sock.recv(n - len(buf))
            except TimeoutError:
                raise
            except OSError as exc:
                raise WireClosed(f"connection failed: {exc}") from exc
            if not chunk:
                raise WireClosed("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    # --- messages -------------------------------------------------------------------------------
    def encode(self, api_key: int, version: int, body: Any, correlation_id: int | None = None) -> tuple[int, bytes]:
        """(correlation id, payload) of a request; ``body`` is a message or its JSON form."""
        from kwire.protocol import encode_request, request_class

        if isinstance(body, dict):
            body = request_class(api_key).from_json(body, version)
        corr = self.next_correlation_id if correlation_id is None else correlation_id
        self.next_correlation_id = max(self.next_correlation_id, corr) + 1
        return corr, encode_request(body, version, correlation_id=corr, client_id=self.client_id, size_prefix=False)

    def send(self, api_key: int, version: int, body: Any, correlation_id: int | None = None) -> int:
        """Send a request without waiting; returns its correlation id."""
        corr, payload = self.encode(api_key, version, body, correlation_id)
        self.send_frame(payload)
        return corr

    def receive(self, api_key: int, version: int) -> Any:
        """Read the next response and decode it as ``api_key`` v``version``."""
        from kwire.protocol import decode_response

        return decode_response(self.recv_frame(), api_key, version).body

    def request(self, api_key: int, version: int, body: Any, correlation_id: int | None = None) -> Any:
        """Send a request and return the decoded response body."""
        self.send(api_key, version, body, correlation_id)
        return self.receive(api_key, version)

    def is_closed(self) -> bool:
        """Whether the broker closed the connection (waits up to the socket timeout for EOF)."""
        try:
            return self._sock().recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

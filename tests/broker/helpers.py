"""Drive a BrokerCore without sockets: encode a request, hand it to the core, decode the answer."""

from __future__ import annotations

import itertools
from typing import Any

from kwire.broker.config import BrokerConfig
from kwire.broker.core.broker_core import BrokerCore, ConnInfo
from kwire.broker.handlers import load_handlers
from kwire.clock import ManualClock
from kwire.protocol import decode_response, encode_request
from kwire.protocol.splice import as_bytes
from kwire.records import BatchBuilder

START_MS = 1_750_000_000_000


class CoreClient:
    """One connection to a core, speaking in message objects."""

    def __init__(self, core: BrokerCore, broker_id: int | None = None) -> None:
        self.core = core
        self.conn: ConnInfo = core.connect(broker_id if broker_id is not None else min(core.cluster.nodes))
        self._corr = itertools.count(1)
        self.pending: dict[int, tuple[int, int]] = {}

    def send(self, body: Any, version: int) -> Any:
        """The decoded response, or None when the core deferred it (see ``deferred``)."""
        corr = next(self._corr)
        payload = encode_request(body, version, correlation_id=corr, client_id="test", size_prefix=False)
        out = self.core.handle(self.conn, payload)
        if out.kind == "send":
            resp = decode_response(as_bytes(out.data), body.API_KEY, version)
            assert resp.correlation_id == corr
            return resp.body
        if out.kind == "close":
            raise ConnectionClosed(out.reason)
        if out.kind == "deferred":
            self.pending[self.conn.conn_id] = (body.API_KEY, version)
        return None

    def deferred(self) -> list[Any]:
        """Responses the core completed since the last call, for this connection."""
        out = []
        keep = []
        for conn_id, data in self.core.take_outbox():
            if conn_id != self.conn.conn_id:
                keep.append((conn_id, data))
                continue
            if data is None:
                raise ConnectionClosed("closed by the broker")
            key, version = self.pending[conn_id]
            out.append(decode_response(as_bytes(data), key, version).body)
        self.core.outbox.extend(keep)
        return out


    def send_auth_failure(self, body: Any, version: int, delay_ms: int = 100) -> Any:
        """A request answered by a failed authentication (SEC-14): nothing for ``delay_ms`` of broker
        time (connection.failed.authentication.delay.ms), then its answer (None: none) and the close."""
        conn_id = self.conn.conn_id
        assert self.send(body, version) is None, "a failed authentication is answered late"
        self.core.advance(delay_ms - 1)
        early = [d for c, d in self.core.outbox if c == conn_id]
        assert not early, "answered or closed before the delay"
        self.core.advance(1)
        got = [d for c, d in self.core.take_outbox() if c == conn_id]
        assert got and got[-1] is None, "not closed after the delay"
        if len(got) == 1:
            return None
        return decode_response(as_bytes(got[0]), body.API_KEY, version).body


class ConnectionClosed(Exception):
    pass


def make_core(**kwargs: Any) -> tuple[BrokerCore, ManualClock]:
    clock = ManualClock(START_MS)
    settings = kwargs.pop("settings", {})
    core = BrokerCore(BrokerConfig(settings=settings, **kwargs), clock, handlers=load_handlers())
    return core, clock


def batch(values: list[bytes], *, keys: list[bytes | None] | None = None, producer_id: int = -1,
          producer_epoch: int = -1, base_sequence: int = -1, timestamp_ms: int = START_MS, **kw: Any) -> bytes:
    b = BatchBuilder(0, producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence, **kw)
    for i, v in enumerate(values):
        b.append(v, key=(keys[i] if keys else None), timestamp_ms=timestamp_ms + i)
    return b.build()

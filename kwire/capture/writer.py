"""Recorded broker traffic as a pcapng capture (synthetic TCP/IPv4 over Ethernet).

Each recorded connection becomes one TCP connection from ``127.0.0.1:<client_port_base +
conn id>`` to the broker's port (``broker_port_base`` for the lowest broker id, +1 for the next): handshake, every request
and its response as size-prefixed frames cut at the MSS, and a FIN at the end.

Timestamps: when every exchange carries wire times (``at_us``/``response_at_us``, the broker's
monotonic µs clock; ``kwire broker --record`` records them), each request and response is written
at its real time, anchored at the first request's broker time, so latency in the capture is real;
the section comment says ``kwire-timestamps=wire-us``. Otherwise requests go out at the broker time
they were recorded (``at_ms``) and responses at the broker time they were made, never sooner than
``response_delay_ns``: millisecond positions, no latency; the comment says
``kwire-timestamps=broker-ms`` and ``kwire pipeline traffic`` says on its latency chart that the
capture cannot give latency. A request the broker closed the connection on ends that connection.
The addresses are synthetic (the recording keeps connection ids, not ports).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from kwire.capture.pcap import PcapngWriter, TcpFlow

__all__ = ["write_exchanges_pcapng", "WIRE_TIMESTAMPS", "BROKER_TIMESTAMPS", "has_broker_clock_timestamps"]

WIRE_TIMESTAMPS = "kwire-timestamps=wire-us"
BROKER_TIMESTAMPS = "kwire-timestamps=broker-ms"
_LEGACY_RECORD_COMMENT = "kwire broker --record"  # captures written before the marker: broker ms


def has_broker_clock_timestamps(comments: list[str]) -> bool:
    """Whether a capture's section comments say its times are kwire's broker clock (no latency)."""
    text = " ".join(comments)
    return BROKER_TIMESTAMPS in text or (_LEGACY_RECORD_COMMENT in text and WIRE_TIMESTAMPS not in text)


def write_exchanges_pcapng(
    exchanges: Iterable[Any],
    out: str | Path | BinaryIO,
    *,
    broker_host: str = "127.0.0.1",
    broker_port_base: int = 9092,
    client_port_base: int = 40000,
    response_delay_ns: int = 200_000,
    mss: int = 1448,
    comment: str | None = None,
) -> int:
    """Write ``kwire.broker.core.Exchange``-like objects; returns the number of packets."""
    flows: dict[tuple[int, int], TcpFlow] = {}
    packets: list[tuple[int, int, bytes]] = []  # (ts, order, frame): stable by order within a timestamp
    last_ts: dict[tuple[int, int], int] = {}
    closed: set[tuple[int, int]] = set()
    order = 0

    def add(items: list[tuple[int, bytes]]) -> None:
        nonlocal order
        for ts, frame in items:
            packets.append((ts, order, frame))
            order += 1

    exchanges = list(exchanges)
    wire = bool(exchanges) and all(
        getattr(ex, "at_us", None) is not None
        and (ex.response_bytes is None or getattr(ex, "response_at_us", None) is not None) for ex in exchanges)
    # wire times: µs on the broker's monotonic clock, placed at the first request's broker time
    anchor_ns = exchanges[0].at_ms * 1_000_000 - exchanges[0].at_us * 1000 if wire else 0
    last_req: dict[tuple[int, int], int] = {}
    port_of = {b: broker_port_base + i for i, b in enumerate(sorted({ex.broker_id for ex in exchanges}))}
    for ex in exchanges:
        key = (ex.broker_id, ex.conn_id)
        if key in closed:
            continue
        if wire:  # requests may overlap earlier answers (pipelining); each direction stays in order
            ts = max(anchor_ns + ex.at_us * 1000, last_req.get(key, 0) + 1)
        else:
            ts = max(ex.at_ms * 1_000_000, last_ts.get(key, 0) + 1_000)
        last_req[key] = ts
        flow = flows.get(key)
        if flow is None:
            client = f"{broker_host}:{client_port_base + ex.conn_id % 20000}"
            server = f"{broker_host}:{port_of[ex.broker_id]}"
            flow = flows[key] = TcpFlow(client, server, mss=mss)
            add(flow.handshake(ts - 10_000))
        req = ex.request_bytes
        add(flow.send(True, struct.pack(">i", len(req)) + req, ts))
        if wire:
            answered_ns = anchor_ns + ex.response_at_us * 1000 if ex.response_bytes is not None else ts
            ts = max(answered_ns, ts, last_ts.get(key, 0) + 1)
        else:
            answered = getattr(ex, "response_at_ms", None)
            ts = max(ts + response_delay_ns, answered * 1_000_000 if answered is not None else 0)
        if ex.response_bytes is not None:
            resp = ex.response_bytes
            add(flow.send(False, struct.pack(">i", len(resp)) + resp, ts))
        last_ts[key] = ts
        if ex.closed is not None:
            add(flow.close(ts + 1_000))
            closed.add(key)
    for key, flow in flows.items():
        if key not in closed:
            add(flow.close(last_ts[key] + 1_000_000))
    packets.sort()
    marker = WIRE_TIMESTAMPS if wire else BROKER_TIMESTAMPS
    with PcapngWriter(out, comment=f"{comment}; {marker}" if comment else marker) as w:
        for ts, _, frame in packets:
            w.write_packet(ts, frame)
        return w.packets

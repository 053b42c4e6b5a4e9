"""Recorded traffic: export a broker's decoded request/response log as golden frames, and
replay recorded requests against any broker.

Layout (shared with the hand-made goldens): ``<root>/<api_module>/v<N>/<case>.bin`` holds a
message body (no size prefix, no header) and ``<case>.json`` its sidecar
``{"api_key", "api_version", "kind", "provenance", "value"}`` where ``value`` is the message
in ``kwire decode`` JSON form. Recorded frames also keep the whole header-bearing frame as hex
under ``"frame"`` so they can be replayed byte for byte.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kwire.errors import KwireError
from kwire.protocol import decode_response
from kwire.protocol.framing import decode_request
from kwire.protocol.registry import api_info

__all__ = ["Fixture", "export_exchanges", "load_fixture", "replay"]


@dataclass(slots=True)
class Fixture:
    api_key: int
    api_version: int
    kind: str  # "request" | "response"
    body: bytes
    value: dict[str, Any]
    provenance: str
    frame: bytes | None = None


def _strip_header(payload: bytes, *, request: bool, api_key: int, api_version: int) -> bytes:
    if request:
        frame = decode_request(payload)
        raw = frame.body.encode(api_version)
    else:
        raw = decode_response(payload, api_key, api_version).body.encode(api_version)
    return raw


def export_exchanges(exchanges: Iterable[Any], root: str | Path, *, prefix: str = "recorded") -> list[Path]:
    """Write each recorded exchange as request/response fixtures under ``root``; returns the .bin paths."""
    root = Path(root)
    written: list[Path] = []
    counters: dict[tuple[str, int], int] = {}
    for ex in exchanges:
        if ex.request is None:
            continue  # rejected before decoding (bad header, unknown key or version): no golden frame
        info = api_info(ex.api_key)
        folder = root / info.module / f"v{ex.api_version}"
        folder.mkdir(parents=True, exist_ok=True)
        n = counters[(info.module, ex.api_version)] = counters.get((info.module, ex.api_version), 0) + 1
        case = f"{prefix}-{ex.conn_id}-{ex.correlation_id}-{n}"
        who = f"client id {ex.client_id!r}" if ex.client_id is not None else "a client without id"
        provenance = f"recorded by the kwire broker (broker {ex.broker_id}) from {who} at broker time {ex.at_ms}"
        parts = [("request", ex.request, ex.request_bytes)]
        if ex.response is not None and ex.response_bytes is not None:
            parts.append(("response", ex.response, ex.response_bytes))
        for kind, msg, frame in parts:
            body = msg.encode(ex.api_version)
            stem = folder / f"{case}-{kind}"
            stem.with_suffix(".bin").write_bytes(body)
            sidecar = {"api_key": ex.api_key, "api_version": ex.api_version, "kind": kind, "provenance": provenance,
                       "value": msg.to_json(ex.api_version), "frame": frame.hex()}
            stem.with_suffix(".json").write_text(json.dumps(sidecar, indent=1) + "\n")
            written.append(stem.with_suffix(".bin"))
    return written


def load_fixture(path: str | Path) -> Fixture:
    """Read a ``.bin`` fixture and its sidecar."""
    p = Path(path)
    side = json.loads(p.with_suffix(".json").read_text())
    frame = bytes.fromhex(side["frame"]) if side.get("frame") else None
    return Fixture(side["api_key"], side["api_version"], side["kind"], p.read_bytes(), side["value"],
                   side.get("provenance", ""), frame)


def replay(fixtures: Iterable[Fixture], bootstrap: str, *, timeout_s: float = 30.0) -> list[Any]:
    """Send recorded request frames, in order, on one connection; returns the decoded responses.

    Requests that get no response (produce with acks=0) yield None.
    """
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    out: list[Any] = []
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        for fx in fixtures:
            if fx.kind != "request" or fx.frame is None:
                continue
            sock.sendall(struct.pack(">i", len(fx.frame)) + fx.frame)
            if fx.api_key == 0 and fx.value.get("Acks") == 0:
                out.append(None)
                continue
            size = struct.unpack(">i", _recv_exact(sock, 4))[0]
            out.append(decode_response(_recv_exact(sock, size), fx.api_key, fx.api_version).body)
    return out


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise KwireError("the broker closed the connection during replay")
        buf += chunk
    return bytes(buf)

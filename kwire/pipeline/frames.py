"""``wire_exchanges`` rows from kwire's own recordings (``kwire.recording.export_exchanges``).

An export holds ``<api>/v<N>/<prefix>-<conn>-<corr>-<n>-request.json`` (and ``-response.json``)
sidecars whose ``frame`` is the header-bearing frame as hex; the provenance names the broker.
Request and response are paired by their shared case name. A recording carries broker time
only to the millisecond and no answer time, so timestamps and latency are left empty.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kwire.capture.kafka import WireExchange, WireFrame
from kwire.errors import CaptureError
from kwire.pipeline.traffic import exchange_row

__all__ = ["iter_recording_exchanges", "recording_rows", "find_recordings"]

_CASE = re.compile(r"^(?P<case>.+-(?P<conn>\d+)-(?P<corr>-?\d+)-\d+)-(?P<kind>request|response)$")
_BROKER = re.compile(r"\(broker (\d+)\)")


def find_recordings(root: str | os.PathLike[str]) -> list[Path]:
    """Request sidecars under an export directory, sorted."""
    r = Path(root)
    if not r.is_dir():
        raise CaptureError(f"{r} is not a recording export directory")
    return sorted(r.rglob("*-request.json"))


def iter_recording_exchanges(root: str | os.PathLike[str]) -> Iterator[WireExchange]:
    for req_path in find_recordings(root):
        m = _CASE.match(req_path.stem)
        if m is None:
            continue
        side = json.loads(req_path.read_text())
        if not side.get("frame"):
            continue
        broker = _BROKER.search(side.get("provenance", ""))
        server = f"broker-{broker.group(1) if broker else '?'}"
        client = f"{server}/conn-{m['conn']}"
        req = WireFrame(-1, -1, -1, bytes.fromhex(side["frame"]))
        resp_path = req_path.with_name(f"{m['case']}-response.json")
        resp = None
        if resp_path.exists():
            r = json.loads(resp_path.read_text())
            if r.get("frame"):
                resp = WireFrame(-1, -1, -1, bytes.fromhex(r["frame"]))
        yield WireExchange(f"{client}->{server}", client, server, int(m["corr"]), side["api_key"],
                           side["api_version"], req, resp)


def recording_rows(root: str | os.PathLike[str], *, source: str | None = None) -> Iterator[dict[str, Any]]:
    software: dict[str, tuple[str | None, str | None]] = {}
    src = source if source is not None else str(root)
    for ex in iter_recording_exchanges(root):
        row = exchange_row(ex, src, software)
        row.update(request_offset=None, response_offset=None, request_ts_ns=None, response_ts_ns=None,
                   latency_us=None)
        yield row

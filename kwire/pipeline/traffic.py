"""``wire_exchanges`` rows from captures: each request/response pair decoded with kwire's codec.

The response is decoded with its request's api key and version. A row's ``decode_status`` says
how far decoding got: ``ok``; ``no_response`` (acks=0 produce, or the capture ended first);
``unpaired_response`` (its request predates the capture); ``unknown_api``;
``unsupported_version``; ``malformed`` (``decode_error`` names field and offset). Client
software name/version come from the connection's ApiVersions request (v3+), so a connection
caught mid-stream has none. ``advertised_versions`` holds, on ApiVersions rows answered without
error, the broker's ranges as JSON ``{"api key": [min, max]}`` (the conformance job's input).
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kwire.capture.kafka import (
    DEFAULT_BROKER_PORTS,
    CaptureIssue,
    KafkaCaptureReader,
    WireExchange,
    iter_kafka_exchanges,
)
from kwire.capture.pcap import section_comments
from kwire.capture.writer import has_broker_clock_timestamps
from kwire.errors import CaptureError, KwireError, UnknownApiKeyError, UnsupportedVersionError
from kwire.protocol import decode_request, decode_response
from kwire.protocol.registry import api_info, request_header_version, schema_class

__all__ = ["capture_issue_rows", "exchange_row", "issue_row", "iter_traffic", "traffic_rows", "error_codes_of", "open_bytes"]

_API_VERSIONS = 18


_PLAN: dict[type, tuple[tuple[str, bool], ...]] = {}  # class -> (attr, is_struct_array) to visit


def _plan(cls: type) -> tuple[tuple[str, bool], ...]:
    """Which fields of a generated class can hold an ErrorCode: itself, or a nested struct."""
    plan = _PLAN.get(cls)
    if plan is None:
        steps = []
        for f in cls._fields:  # type: ignore[attr-defined]
            if f.kind == "struct":
                steps.append((f.attr, f.is_array))
            elif f.name == "ErrorCode":
                steps.append((f.attr, False))  # always "error_code": the spec's ErrorCode
        plan = _PLAN[cls] = tuple(steps)
    return plan


def error_codes_of(msg: Any) -> list[int]:
    """Every distinct non-zero ``ErrorCode`` anywhere in a decoded message, sorted."""
    found: set[int] = set()
    stack = [msg]
    while stack:
        obj = stack.pop()
        for attr, is_array in _plan(type(obj)):
            value = getattr(obj, attr, None)
            if value is None:
                continue
            if attr == "error_code":
                if value:
                    found.add(value)
            elif is_array:
                stack.extend(value)
            else:
                stack.append(value)
    return sorted(found)


def _status_of(exc: KwireError) -> str:
    if isinstance(exc, UnknownApiKeyError):
        return "unknown_api"
    if isinstance(exc, UnsupportedVersionError):
        return "unsupported_version"
    return "malformed"


def exchange_row(ex: WireExchange, source: str, software: dict[str, tuple[str | None, str | None]]) -> dict[str, Any]:
    """One ``wire_exchanges`` row (see ``kwire.pipeline.tables``); ``software`` is per connection state."""
    status, error = "ok", None
    client_id = api_name = None
    error_code: int | None = None
    codes: list[int] = []
    advertised = None
    req, resp = ex.request, ex.response
    if req is not None:
        with contextlib.suppress(UnknownApiKeyError):
            api_name = api_info(ex.api_key).name
        try:
            frame = decode_request(req.payload)
            client_id = frame.client_id
            if ex.api_key == _API_VERSIONS and ex.api_version >= 3:
                software[ex.conn_id] = (frame.body.client_software_name, frame.body.client_software_version)
        except KwireError as exc:
            status, error = _status_of(exc), str(exc)
            try:  # the header alone may still name the client
                hv = request_header_version(ex.api_key, ex.api_version)
                client_id = schema_class("RequestHeader").decode_from(req.payload, 0, hv)[0].client_id
            except KwireError:
                pass
        if resp is not None and status == "ok":
            try:
                body = decode_response(resp.payload, ex.api_key, ex.api_version).body
                error_code = getattr(body, "error_code", None)
                codes = error_codes_of(body)
                if ex.api_key == _API_VERSIONS and error_code == 0:
                    advertised = json.dumps({str(a.api_key): [a.min_version, a.max_version] for a in body.api_keys},
                                            separators=(",", ":"))
            except KwireError as exc:
                status, error = "malformed", f"response: {exc}"
        elif resp is None and status == "ok":
            status = "no_response"
    else:
        status = "unpaired_response"
    name, version = software.get(ex.conn_id, (None, None))
    latency = None
    if req is not None and resp is not None:
        latency = (resp.first_ts_ns - req.last_ts_ns) // 1000
    return {
        "source": source,
        "conn_id": ex.conn_id,
        "client": ex.client,
        "server": ex.server,
        "correlation_id": ex.correlation_id,
        "api_key": ex.api_key if req is not None else None,
        "api_name": api_name,
        "api_version": ex.api_version if req is not None else None,
        "client_id": client_id,
        "client_software_name": name,
        "client_software_version": version,
        "request_offset": req.offset if req is not None else None,
        "response_offset": resp.offset if resp is not None else None,
        "request_ts_ns": req.last_ts_ns if req is not None else None,
        "response_ts_ns": resp.first_ts_ns if resp is not None else None,
        "latency_us": latency,
        "request_size": len(req.payload) + 4 if req is not None else None,
        "response_size": len(resp.payload) + 4 if resp is not None else None,
        "error_code": error_code,
        "error_codes": codes,
        "decode_status": status,
        "decode_error": error,
        "advertised_versions": advertised,
    }


def issue_row(issue: CaptureIssue, source: str) -> dict[str, Any]:
    return {"source": source, "conn_id": issue.conn_id, "direction": issue.direction, "kind": issue.kind,
            "stream_offset": issue.offset, "nbytes": issue.nbytes, "ts_ns": issue.ts_ns, "detail": issue.detail}


BROKER_CLOCK_ISSUE = "broker_clock_timestamps"


def _timing_issues(data: Any, src: str, shard: tuple[int, int]) -> list[dict[str, Any]]:
    """A capture kwire wrote on its broker's millisecond clock gives no latency: one issue row that
    says so (from shard 0 only, so a sharded read counts it once)."""
    if shard[0] != 0 or not has_broker_clock_timestamps(section_comments(data)):
        return []
    return [{"source": src, "conn_id": "", "direction": "", "kind": BROKER_CLOCK_ISSUE, "stream_offset": 0,
             "nbytes": 0, "ts_ns": 0, "detail": "timestamps are kwire's broker clock in ms (kwire broker --record "
                                                "without wire times): latency cannot be measured from it"}]


def open_bytes(path: str | os.PathLike[str]) -> Any:
    """The file's bytes, memory-mapped when it is not empty (captures can be large)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def iter_traffic(
    path: str | os.PathLike[str],
    *,
    source: str | None = None,
    shard: tuple[int, int] = (0, 1),
    broker_ports: frozenset[int] = DEFAULT_BROKER_PORTS,
    issues: list[dict[str, Any]] | None = None,
) -> Iterator[dict[str, Any]]:
    """``wire_exchanges`` rows of one capture file; its issues are appended to ``issues``."""
    src = source if source is not None else str(path)
    reader = KafkaCaptureReader(broker_ports=broker_ports, shard=shard)
    software: dict[str, tuple[str | None, str | None]] = {}
    data = open_bytes(path)
    timing = _timing_issues(data, src, shard)
    try:
        for ex in iter_kafka_exchanges(data, reader):
            yield exchange_row(ex, src, software)
    except CaptureError as exc:
        if str(path) in str(exc):
            raise
        raise CaptureError(f"{path}: {exc}") from None
    finally:
        if isinstance(data, mmap.mmap):
            with contextlib.suppress(BufferError):  # a view still alive somewhere: the map goes with it
                data.close()
    if issues is not None:
        issues.extend(timing)
        issues.extend(issue_row(i, src) for i in reader.issues)


def capture_issue_rows(
    path: str | os.PathLike[str],
    *,
    source: str | None = None,
    shard: tuple[int, int] = (0, 1),
    broker_ports: frozenset[int] = DEFAULT_BROKER_PORTS,
) -> list[dict[str, Any]]:
    """``capture_issues`` rows of one capture: reassembly and framing only, nothing decoded."""
    reader = KafkaCaptureReader(broker_ports=broker_ports, shard=shard)
    data = open_bytes(path)
    src = source if source is not None else str(path)
    try:
        timing = _timing_issues(data, src, shard)
        reader.feed(data)
        reader.finish()
    finally:
        if isinstance(data, mmap.mmap):
            with contextlib.suppress(BufferError):
                data.close()
    return timing + [issue_row(i, src) for i in reader.issues]


def traffic_rows(paths: list[str] | list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The plain single-process path: every exchange and issue of every capture."""
    rows: list[dict[str, Any]] = []
    issues: list[dict[str, Any]] = []
    for p in paths:
        rows.extend(iter_traffic(p, issues=issues))
    return rows, issues

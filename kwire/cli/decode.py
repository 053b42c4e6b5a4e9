"""``kwire decode``: a message or a whole frame, as JSON keyed by the spec's field names."""

from __future__ import annotations

import argparse
import json
import sys

from kwire.cli import CliError
from kwire.cli._io import read_input
from kwire.cli._numbers import API_KEY, API_VERSION, PORT


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--api-key", type=API_KEY, help="API key of the message")
    p.add_argument("--api-version", type=API_VERSION, help="API version of the message")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--request", action="store_true", help="the bytes are a request body")
    kind.add_argument("--response", action="store_true", help="the bytes are a response body")
    p.add_argument("--frame", action="store_true", help="the bytes are a size-prefixed frame with its header")
    p.add_argument("--response-to", metavar="K:V", help="with --frame: a response frame answering api key K version V")
    p.add_argument("--request-frame", metavar="FILE",
                   help="with --frame: a response frame answering the request frame in FILE (its key, version "
                        "and correlation id)")
    p.add_argument("--hex", action="store_true", help="the input is hex text")
    p.add_argument("--pcap", action="store_true",
                   help="the input is a pcap/pcapng capture: one JSON line per Kafka exchange, both directions "
                        "decoded (every API key, 68 and up included)")
    p.add_argument("--port", type=PORT, action="append", metavar="PORT",
                   help="with --pcap: a broker port (default: 9092 and the usual ones); repeatable")
    p.add_argument("file", nargs="?", default="-", help="input file, or - for stdin")


def _parse_kv(text: str) -> tuple[int, int]:
    try:
        k, v = text.split(":")
        return API_KEY(k), API_VERSION(v)  # type: ignore[return-value]  # int Numbers give ints
    except (ValueError, argparse.ArgumentTypeError) as exc:
        detail = f": {exc}" if isinstance(exc, argparse.ArgumentTypeError) else ""
        raise CliError(f"--response-to takes KEY:VERSION, got {text!r}{detail}") from None


def run(args: argparse.Namespace) -> int:
    from kwire.protocol import framing, registry

    data = read_input(args.file, hex_text=args.hex)
    if args.pcap:
        return _pcap(data, args.port)
    if args.frame:
        if len(data) < 4:
            raise CliError(f"a frame needs a 4-byte size prefix; got {len(data)} bytes")
        size = int.from_bytes(data[:4], "big", signed=True)
        if size != len(data) - 4:
            raise CliError(f"frame size prefix says {size} bytes but {len(data) - 4} follow")
        payload = data[4:]
        if args.request_frame:
            req_data = read_input(args.request_frame, hex_text=args.hex)
            asked = framing.decode_request(req_data[4:])
            args.response_to = f"{asked.api_key}:{asked.api_version}"
        if args.response_to:
            key, version = _parse_kv(args.response_to)
            resp = framing.decode_response(payload, key, version)
            out = {
                "kind": "response",
                "api_key": key,
                "api_version": version,
                "header_version": resp.header_version,
                "header": resp.header.to_json(resp.header_version),
                "body": resp.body.to_json(version),
            }
        else:
            req = framing.decode_request(payload)
            out = {
                "kind": "request",
                "api_key": req.api_key,
                "api_version": req.api_version,
                "header_version": req.header_version,
                "header": req.header.to_json(req.header_version),
                "body": req.body.to_json(req.api_version),
            }
    else:
        if args.api_key is None or args.api_version is None:
            raise CliError("--api-key and --api-version are required (or use --frame)")
        if not (args.request or args.response):
            raise CliError("say --request or --response")
        info = registry.api_info(args.api_key)
        info.check_version(args.api_version)
        cls = info.request_class if args.request else info.response_class
        out = cls.decode(data, args.api_version).to_json(args.api_version)
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _pcap(data: bytes, ports: list[int] | None) -> int:
    """Every exchange of a capture as JSON lines; the issues the reader met go to stderr."""
    from kwire.capture.kafka import DEFAULT_BROKER_PORTS, read_kafka_exchanges
    from kwire.errors import KwireError
    from kwire.protocol import framing, registry

    exchanges, issues = read_kafka_exchanges(data, broker_ports=ports or DEFAULT_BROKER_PORTS)
    for ex in exchanges:
        row: dict[str, object] = {"connection": ex.conn_id, "client": ex.client, "server": ex.server,
                                  "api_key": ex.api_key, "api_version": ex.api_version,
                                  "correlation_id": ex.correlation_id}
        try:
            row["api_name"] = registry.api_info(ex.api_key).name
        except KwireError:
            row["api_name"] = None
        if ex.request is not None:
            row["request_ts_ns"] = ex.request.first_ts_ns
            try:
                req = framing.decode_request(ex.request.payload)
                row["request"] = req.body.to_json(req.api_version)
                row["client_id"] = getattr(req.header, "client_id", None)
            except (KwireError, ValueError) as exc:
                row["request_error"] = str(exc)
        if ex.response is not None:
            row["response_ts_ns"] = ex.response.first_ts_ns
            try:
                resp = framing.decode_response(ex.response.payload, ex.api_key, ex.api_version)
                row["response"] = resp.body.to_json(ex.api_version)
            except (KwireError, ValueError) as exc:
                row["response_error"] = str(exc)
        sys.stdout.write(json.dumps(row, default=str) + "\n")
    for issue in issues:
        print(f"kwire decode: {issue.kind} on {issue.conn_id} ({issue.direction}, {issue.nbytes} bytes at "
              f"{issue.offset}): {issue.detail}", file=sys.stderr)
    return 0

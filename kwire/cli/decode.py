"""``kwire decode``: a message or a whole frame, as JSON keyed by the spec's field names."""

from __future__ import annotations

import argparse
import json
import sys

from kwire.cli import CliError
from kwire.cli._io import read_input


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--api-key", type=int, help="API key of the message")
    p.add_argument("--api-version", type=int, help="API version of the message")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--request", action="store_true", help="the bytes are a request body")
    kind.add_argument("--response", action="store_true", help="the bytes are a response body")
    p.add_argument("--frame", action="store_true", help="the bytes are a size-prefixed frame with its header")
    p.add_argument("--response-to", metavar="K:V", help="with --frame: a response frame answering api key K version V")
    p.add_argument("--hex", action="store_true", help="the input is hex text")
    p.add_argument("file", nargs="?", default="-", help="input file, or - for stdin")


def _parse_kv(text: str) -> tuple[int, int]:
    try:
        k, v = text.split(":")
        return int(k), int(v)
    except ValueError:
        raise CliError(f"--response-to takes KEY:VERSION, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from kwire.protocol import framing, registry

    data = read_input(args.file, hex_text=args.hex)
    if args.frame:
        if len(data) < 4:
            raise CliError(f"a frame needs a 4-byte size prefix; got {len(data)} bytes")
        size = int.from_bytes(data[:4], "big", signed=True)
        if size != len(data) - 4:
            raise CliError(f"frame size prefix says {size} bytes but {len(data) - 4} follow")
        payload = data[4:]
        if args.response_to:
            key, version = _parse_kv(args.response_to)
            resp = framing.decode_response(payload, key, version)
            out = {
                "api_key": key,
                "api_version": version,
                "header_version": resp.header_version,
                "header": resp.header.to_json(resp.header_version),
                "body": resp.body.to_json(version),
            }
        else:
            req = framing.decode_request(payload)
            out = {
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

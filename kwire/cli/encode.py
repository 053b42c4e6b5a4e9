"""``kwire encode``: the JSON form of a message (as ``kwire decode`` prints it) to bytes.

``kwire decode --frame F | kwire encode --frame`` gives F back byte for byte: the frame form
carries the api key, version, header and body (and whether it is a response).
"""

from __future__ import annotations

import argparse
import json
import sys

from kwire.cli import CliError
from kwire.cli._numbers import API_KEY, API_VERSION


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--api-key", type=API_KEY, help="API key of the message (not with --frame)")
    p.add_argument("--api-version", type=API_VERSION, help="API version of the message (not with --frame)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--request", action="store_true", help="the JSON is a request body")
    kind.add_argument("--response", action="store_true", help="the JSON is a response body")
    p.add_argument("--frame", action="store_true",
                   help="the JSON is what `kwire decode --frame` prints: write the size-prefixed frame")
    p.add_argument("--hex", action="store_true", help="write hex text instead of raw bytes")
    p.add_argument("file", nargs="?", default="-", help="JSON file, or - for stdin")


def run(args: argparse.Namespace) -> int:
    from kwire.cli._io import read_input
    from kwire.protocol import registry

    try:
        data = json.loads(read_input(args.file, hex_text=False))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"{'stdin' if args.file == '-' else args.file} is not valid JSON: {exc}") from None
    if args.frame:
        raw = _frame(data)
    else:
        if args.api_key is None or args.api_version is None or not (args.request or args.response):
            raise CliError("say --api-key, --api-version and --request or --response (or use --frame)")
        info = registry.api_info(args.api_key)
        info.check_version(args.api_version)
        cls = info.request_class if args.request else info.response_class
        raw = cls.from_json(data, args.api_version).encode(args.api_version)
    if args.hex:
        sys.stdout.write(raw.hex() + "\n")
    else:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
    return 0


def _frame(doc: dict[str, object]) -> bytes:
    """A size-prefixed frame from decode --frame's JSON (header as given, tagged fields included)."""
    from kwire.protocol import registry, schema_class

    try:
        key, version, hv = int(doc["api_key"]), int(doc["api_version"]), int(doc["header_version"])  # type: ignore[call-overload]
        header_json, body_json = doc["header"], doc["body"]
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"--frame needs api_key, api_version, header_version, header and body ({exc})") from None
    info = registry.api_info(key)
    info.check_version(version)
    response = doc.get("kind") == "response"
    header = schema_class("ResponseHeader" if response else "RequestHeader").from_json(header_json, hv)
    body = (info.response_class if response else info.request_class).from_json(body_json, version)
    payload = header.encode(hv) + body.encode(version)
    return len(payload).to_bytes(4, "big") + payload

"""``kwire encode``: the JSON form of a message (as ``kwire decode`` prints it) to bytes."""

from __future__ import annotations

import argparse
import json
import sys

from kwire.cli import CliError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--api-key", type=int, required=True)
    p.add_argument("--api-version", type=int, required=True)
    kind = p.add_mutually_exclusive_group(required=True)
    kind.add_argument("--request", action="store_true")
    kind.add_argument("--response", action="store_true")
    p.add_argument("--hex", action="store_true", help="write hex text instead of raw bytes")


def run(args: argparse.Namespace) -> int:
    from kwire.protocol import registry

    try:
        data = json.load(sys.stdin)
    except json.JSONDecodeError as exc:
        raise CliError(f"stdin is not valid JSON: {exc}") from None
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

#!/usr/bin/env python3
"""A driver that misbehaves on purpose: before producing it sends two ApiVersions requests with
the same correlation id on one connection (client rule CR-2), then behaves like the example."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))

import conform_driver  # noqa: E402

from kwire.conformance.wire_client import WireClient  # noqa: E402


def main() -> None:
    line = sys.stdin.readline()
    cmd = json.loads(line)
    if cmd.get("op") == "describe":
        conform_driver.emit(event="describe", name="reused-correlation", version="0", codecs=["none"],
                            ops=["produce", "consume"])
        conform_driver.emit(event="done")
        return
    if cmd.get("op") == "produce":
        with WireClient(cmd["bootstrap"]) as c:
            for _ in range(2):
                c.request(18, 3, {"ClientSoftwareName": "bad", "ClientSoftwareVersion": "0"}, correlation_id=7)
    sys.stdin = __import__("io").StringIO(line)
    conform_driver.main()


if __name__ == "__main__":
    main()

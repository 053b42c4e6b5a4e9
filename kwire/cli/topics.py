"""``kwire topics``: a cluster's topics, partitions, leaders and offsets (like ``kcat -L``).

Reads any Kafka cluster (kwire or real) with kwire's own codec over a plain socket.
"""

from __future__ import annotations

import argparse
import json
import sys

from kwire.cli._numbers import TIMEOUT
from kwire.cli._security import add_security_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", "-b", required=True, metavar="HOST:PORT[,...]", help="bootstrap servers")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--timeout", type=TIMEOUT, default=10.0, metavar="SECONDS", help="per-request timeout")
    p.add_argument("topic", nargs="*", help="only these topics (default: all)")
    add_security_arguments(p)


def run(args: argparse.Namespace) -> int:
    from kwire.cli._io import print_table
    from kwire.cli._security import client_security
    from kwire.client import WireClient
    from kwire.cluster_info import describe_topics

    with WireClient(args.bootstrap, client_id="kwire-topics", timeout_s=args.timeout,
                    security=client_security(args)) as client:
        topics = describe_topics(client, args.topic or None)
    if args.json:
        json.dump([t.as_dict() for t in topics], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    rows: list[list[object]] = []
    for t in topics:
        if t.error:
            rows.append([t.name, "-", "-", "-", "-", "-", "-", "-", t.error])
            continue
        for p in t.partitions:
            rows.append([t.name, p.partition, p.leader, ",".join(map(str, p.replicas)), ",".join(map(str, p.isr)),
                         p.start_offset, p.end_offset, p.messages, p.error or ""])
    print_table(["topic", "partition", "leader", "replicas", "isr", "start", "end", "messages", "error"], rows)
    return 0

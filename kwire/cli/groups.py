"""``kwire groups``: every group (classic, consumer, share) with state, members and lag.

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
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--timeout", type=TIMEOUT, default=10.0, metavar="SECONDS", help="per-request timeout")
    p.add_argument("group", nargs="*", help="only these groups (default: all)")
    add_security_arguments(p)


def run(args: argparse.Namespace) -> int:
    from kwire.cli._io import print_table
    from kwire.cli._security import client_security
    from kwire.client import WireClient
    from kwire.cluster_info import describe_groups

    with WireClient(args.bootstrap, client_id="kwire-groups", timeout_s=args.timeout,
                    security=client_security(args)) as client:
        groups = describe_groups(client, args.group or None)
    if args.json:
        json.dump([g.as_dict() for g in groups], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print_table(["group", "type", "state", "members", "lag", "coordinator", "error"],
                [[g.group_id, g.type or "-", g.state or "-", len(g.members), "-" if g.lag is None else g.lag,
                  g.coordinator, g.error or ""] for g in groups])
    for g in groups:
        if g.members:
            print(f"\n{g.group_id}: members")
            print_table(["member", "client", "host", "assignment"],
                        [[m.member_id, m.client_id, m.host,
                          " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(m.assignment.items()))]
                         for m in g.members])
        if g.share_offsets:
            print(f"\n{g.group_id}: share partitions (in flight: start offset up to the high watermark, which is "
                  f"exclusive; settled: acknowledged or archived past the start)")
            print_table(["topic", "partition", "start", "high-watermark", "in-flight", "settled", "lag", "consumers", "error"],
                        [[t, p, _dash(sp.start if sp.start >= 0 else None), _dash(sp.end if sp.end >= 0 else None),
                          _dash(sp.in_flight), _dash(sp.settled), _dash(sp.lag), sp.consumers, sp.error or ""]
                         for t, parts in sorted(g.share_offsets.items()) for p, sp in sorted(parts.items())])
        if g.offsets:
            print(f"\n{g.group_id}: offsets")
            print_table(["topic", "partition", "committed", "end", "lag"],
                        [[t, p, c, e, "-" if lag is None else lag]
                         for t, parts in sorted(g.offsets.items()) for p, (c, e, lag) in sorted(parts.items())])
    return 0


def _dash(value: int | None) -> object:
    return "-" if value is None else value

"""``kwire apis``: the API keys, names and version ranges the codec supports."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--all", action="store_true", help="include APIs removed upstream")


def run(args: argparse.Namespace) -> int:
    from kwire.broker.handlers import load_handlers
    from kwire.protocol.registry import all_apis

    handlers = load_handlers()
    rows = [a for a in all_apis() if args.all or not a.removed]
    if args.json:
        json.dump(
            [
                {
                    "api_key": a.key,
                    "name": a.name,
                    "min_version": a.min_version if a.versions else None,
                    "max_version": a.max_version if a.versions else None,
                    "first_flexible_version": a.first_flexible,
                    "latest_version_unstable": a.latest_version_unstable,
                    "module": f"kwire.protocol.messages.{a.module}",
                    "listeners": list(a.listeners),
                    "broker": ({"min_version": handlers[a.key].min_version, "max_version": handlers[a.key].max_version,
                                "handler": f"kwire.broker.handlers.{handlers[a.key].module}"}
                               if a.key in handlers else None),
                }
                for a in rows
            ],
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return 0
    w = max(len(a.name) for a in rows)
    print(f"{'key':>4}  {'name':<{w}}  codec     flexible  broker    module")
    for a in rows:
        vers = "removed" if a.removed else f"{a.min_version}-{a.max_version}"
        if a.latest_version_unstable:
            vers += "*"
        flex = f"{a.first_flexible}+" if a.first_flexible is not None else "-"
        h = handlers.get(a.key)
        broker = f"{h.min_version}-{h.max_version}" if h is not None else "-"
        print(f"{a.key:>4}  {a.name:<{w}}  {vers:<8}  {flex:<8}  {broker:<8}  {a.module}")
    if any(a.latest_version_unstable for a in rows):
        print("* the latest version is marked unstable upstream")
    return 0

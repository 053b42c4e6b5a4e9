"""``kwire replay``: send recorded requests to a broker again and diff the answers.

    kwire replay fixtures/recorded/                 # a fresh in-process kwire broker
    kwire replay CASE-request.json --bootstrap localhost:9092

Inputs are request fixtures in the recording format (``kwire.recording``: ``<case>-request.json``
with the whole frame as hex, beside ``<case>-response.json``); a directory means every request
fixture under it, in natural name order (the recorder names them by connection and correlation
id). The requests go out in order on one connection; each answer is compared with the recorded
one, ignoring fields that legitimately differ between runs and brokers (``IGNORED_FIELDS``).
Exit status 1 when any answer differs.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["IGNORED_FIELDS", "add_arguments", "diff_values", "run"]

# Fields whose values depend on the run, not on the broker's behaviour: times, generated ids,
# the listener's address, and throttling.
IGNORED_FIELDS = frozenset({
    "ThrottleTimeMs", "MemberId", "Leader", "ProducerId", "ProducerEpoch", "SessionId",
    "Host", "Port", "ClusterId", "LogAppendTimeMs", "Timestamp", "MaxTimestamp", "GroupInstanceId",
    "ErrorMessage", "FinalizedFeaturesEpoch",
})


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("fixtures", nargs="+", type=Path, metavar="FIXTURE",
                   help="request fixtures (.json or .bin) or directories of them")
    p.add_argument("--bootstrap", help="replay against this broker (default: a fresh in-process kwire broker)")
    p.add_argument("--show-same", action="store_true", help="also list requests whose answers match")


def _natural(p: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(p))]


def _request_sidecars(paths: list[Path]) -> Iterator[Path]:
    for p in paths:
        if p.is_dir():
            found = [q for q in p.rglob("*.json") if _kind(q) == "request"]
            yield from sorted(found, key=_natural)
        else:
            yield p.with_suffix(".json")


def _kind(p: Path) -> str | None:
    try:
        side = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    return side.get("kind") if isinstance(side, dict) else None


def diff_values(recorded: Any, replayed: Any, path: str = "") -> list[str]:
    """Differences between two ``kwire decode`` JSON values, ignoring ``IGNORED_FIELDS``."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out = []
        for k in sorted(set(recorded) | set(replayed)):
            if k in IGNORED_FIELDS:
                continue
            out += diff_values(recorded.get(k), replayed.get(k), f"{path}.{k}" if path else k)
        return out
    if isinstance(recorded, list) and isinstance(replayed, list):
        if len(recorded) != len(replayed):
            return [f"{path}: {len(recorded)} entries recorded, {len(replayed)} replayed"]
        out = []
        for i, (a, b) in enumerate(zip(recorded, replayed, strict=True)):
            out += diff_values(a, b, f"{path}[{i}]")
        return out
    if recorded != replayed:
        return [f"{path}: recorded {json.dumps(recorded)[:120]}, replayed {json.dumps(replayed)[:120]}"]
    return []


def run(args: argparse.Namespace) -> int:
    from kwire.cli import CliError
    from kwire.recording import load_fixture, replay

    sidecars = list(_request_sidecars(args.fixtures))
    fixtures = []
    for side in sidecars:
        bin_path = side.with_suffix(".bin")
        if not bin_path.exists():
            raise CliError(f"{bin_path} does not exist")
        fx = load_fixture(bin_path)
        if fx.kind != "request" or fx.frame is None:
            raise CliError(f"{side} is not a recorded request (kind {fx.kind!r}, frame {'present' if fx.frame else 'missing'})")
        fixtures.append((side, fx))
    if not fixtures:
        raise CliError("no request fixtures found")

    def go(bootstrap: str) -> list[Any]:
        return replay([fx for _, fx in fixtures], bootstrap)

    if args.bootstrap:
        answers, target = go(args.bootstrap), args.bootstrap
    else:
        from kwire.control import Broker, BrokerConfig

        with Broker(BrokerConfig(brokers=1, log_connections=False)) as broker:
            answers, target = go(broker.bootstrap), "a fresh kwire broker"
    differing = 0
    for (side, fx), answer in zip(fixtures, answers, strict=True):
        resp_side = Path(str(side).replace("-request.json", "-response.json"))
        name = side.name.removesuffix(".json")
        if answer is None:
            if resp_side.exists():
                differing += 1
                print(f"{name}: recorded an answer, got none")
            elif args.show_same:
                print(f"{name}: no answer, as recorded")
            continue
        if not resp_side.exists():
            print(f"{name}: answered; no recorded answer to compare")
            continue
        recorded = json.loads(resp_side.read_text())["value"]
        diffs = diff_values(recorded, answer.to_json(fx.api_version))
        if diffs:
            differing += 1
            print(f"{name}: {len(diffs)} difference(s)")
            for d in diffs[:20]:
                print(f"  {d}")
        elif args.show_same:
            print(f"{name}: same")
    print(f"replay: {len(fixtures)} requests against {target}, {differing} answers differ")
    return 1 if differing else 0

"""Run scenarios for clients and print the client x scenario matrix.

usage: python -m kwire.conformance.report [--rdkafka-mock | --bootstrap HOST:PORT]
       [--clients java,kcat] [--scenarios roundtrip,consumer_group] [--json]

``--rdkafka-mock`` (the default) starts librdkafka's mock cluster; ``--bootstrap``
targets any broker that supports CreateTopics (kwire's, once it exists).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from kwire.conformance.clients import ADAPTER_CLASSES, get_adapter
from kwire.conformance.scenarios import SCENARIOS, BrokerControl, Outcome, ScenarioResult, run_scenario
from kwire.errors import ConformanceError

__all__ = ["AdminControl", "format_matrix", "main", "run_matrix"]


@dataclass(slots=True)
class AdminControl:
    """``BrokerControl`` for a broker reached only over the wire (CreateTopics via confluent-kafka)."""

    bootstrap: str
    name: str = "broker"
    timeout_s: float = 30.0

    def create_topic(self, topic: str, partitions: int) -> None:
        """CreateTopics with replication factor 1; waits for the result."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=self.timeout_s)
        try:
            futures[topic].result(timeout=self.timeout_s)
        except Exception as exc:  # noqa: BLE001 - confluent raises KafkaException or a timeout
            raise ConformanceError(f"CreateTopics {topic!r} failed: {exc}") from exc


def run_matrix(
    clients: Sequence[str], scenarios: Sequence[str], bootstrap: str, control: BrokerControl
) -> list[ScenarioResult]:
    """Every (client, scenario) pair, in order."""
    return [run_scenario(s, get_adapter(c), bootstrap, control) for c in clients for s in scenarios]


def format_matrix(results: Sequence[ScenarioResult]) -> str:
    """A text table (client rows, scenario columns) plus one numbered note per non-pass."""
    clients = list(dict.fromkeys(r.client for r in results))
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    cell: dict[tuple[str, str], str] = {}
    notes: list[str] = []
    for r in results:
        text = f"{r.outcome.value} {r.elapsed_s:.1f}s" if r.outcome is Outcome.PASS else r.outcome.value
        if r.reason:
            notes.append(f"[{len(notes) + 1}] {r.client} / {r.scenario}: {r.reason}")
            text += f" [{len(notes)}]"
        cell[(r.client, r.scenario)] = text
    width = max([len("client"), *(len(c) for c in clients)])
    cols = [max([len(s), *(len(cell.get((c, s), "")) for c in clients)]) for s in scenarios]
    lines = ["  ".join(["client".ljust(width), *(s.ljust(w) for s, w in zip(scenarios, cols, strict=True))])]
    lines.append("  ".join(["-" * width, *("-" * w for w in cols)]))
    for c in clients:
        row = [c.ljust(width), *(cell.get((c, s), "").ljust(w) for s, w in zip(scenarios, cols, strict=True))]
        lines.append("  ".join(row).rstrip())
    counts = {o: sum(r.outcome is o for r in results) for o in Outcome}
    lines.append("")
    lines.append(
        f"{counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed, {counts[Outcome.SKIP]} skipped"
    )
    return "\n".join(lines + ([""] + notes if notes else []))


def _split(text: str | None, default: Sequence[str]) -> list[str]:
    return [x for x in text.split(",") if x] if text else list(default)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; exit 1 if any cell failed."""
    ap = argparse.ArgumentParser(
        prog="python -m kwire.conformance.report", description=__doc__.split("\n")[0]
    )
    target = ap.add_mutually_exclusive_group()
    target.add_argument("--rdkafka-mock", action="store_true", help="run against librdkafka's mock (default)")
    target.add_argument("--bootstrap", help="run against this broker")
    ap.add_argument("--clients", help=f"comma list (default: {','.join(c.name for c in ADAPTER_CLASSES)})")
    ap.add_argument("--scenarios", help=f"comma list (default: {','.join(SCENARIOS)})")
    ap.add_argument("--json", action="store_true", help="print JSON results instead of the table")
    args = ap.parse_args(argv)
    clients = _split(args.clients, [c.name for c in ADAPTER_CLASSES])
    scenarios = _split(args.scenarios, list(SCENARIOS))
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s!r}")
    if args.bootstrap:
        results = run_matrix(clients, scenarios, args.bootstrap, AdminControl(args.bootstrap))
    else:
        from kwire.conformance.rdkafka_mock import RdkafkaMockProcess

        with RdkafkaMockProcess() as mock:
            results = run_matrix(clients, scenarios, mock.bootstrap, mock)
    if args.json:
        rows = [
            {
                "client": r.client,
                "scenario": r.scenario,
                "outcome": r.outcome.value,
                "reason": r.reason,
                "elapsed_s": round(r.elapsed_s, 2),
                "details": r.details,
            }
            for r in results
        ]
        print(json.dumps(rows, indent=2, default=str))
    else:
        print(format_matrix(results))
    return 1 if any(r.outcome is Outcome.FAIL for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

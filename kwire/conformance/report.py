"""Run scenarios for clients and print the client x scenario matrix.

usage: python -m kwire.conformance.report [--kwire | --rdkafka-mock | --bootstrap HOST:PORT]
       [--clients java,kcat] [--scenarios roundtrip,consumer_group] [--json | --markdown]

``--kwire`` starts an in-process kwire cluster (3 brokers, with the control API, so the
failover scenario runs); ``--rdkafka-mock`` (the default) starts librdkafka's mock
cluster; ``--bootstrap`` targets any broker that supports CreateTopics, over the wire
only (failover skips). ``--markdown`` prints the matrix as a Markdown document.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from kwire.conformance.clients import ADAPTER_CLASSES, get_adapter
from kwire.conformance.scenarios import SCENARIOS, BrokerControl, Outcome, ScenarioResult, run_scenario
from kwire.errors import ConformanceError

__all__ = ["AdminControl", "client_version", "format_markdown", "format_matrix", "main", "run_matrix",
           "scenario_summary"]


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


def _md_cell(r: ScenarioResult, note: int | None) -> str:
    text = f"{r.outcome.value} ({r.elapsed_s:.1f}s)" if r.outcome is Outcome.PASS else r.outcome.value
    return text + (f" [{note}]" if note is not None else "")


@functools.cache
def client_version(name: str) -> str:
    """The installed version of a client, best effort ("?" when it cannot be told)."""
    try:
        return get_adapter(name).client_version()
    except ConformanceError:
        return "?"


def scenario_summary(fn: object) -> str:
    """A scenario's description for reports: the first paragraph of its docstring, as one line."""
    doc = (getattr(fn, "__doc__", None) or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


def _git_commit() -> str:
    import subprocess

    from kwire.conformance import paths

    try:
        root = str(paths.repo_root())
        head = subprocess.run(
            ["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", "kwire"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (head or "?") + (" with uncommitted changes under kwire/" if dirty else "")


def format_markdown(results: Sequence[ScenarioResult], *, target: str, command: str) -> str:
    """The matrix as a Markdown document: provenance, table, one numbered note per reason."""
    clients = list(dict.fromkeys(r.client for r in results))
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    notes: list[str] = []
    cell: dict[tuple[str, str], str] = {}
    for r in results:
        note = None
        if r.reason:
            reason = " ".join(r.reason.split())
            notes.append(f"{len(notes) + 1}. **{r.client} / {r.scenario}**: {reason}")
            note = len(notes)
        cell[(r.client, r.scenario)] = _md_cell(r, note)
    counts = {o: sum(r.outcome is o for r in results) for o in Outcome}
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Real-client conformance matrix",
        "",
        f"Generated by `{command}` on {when}, at kwire commit {_git_commit()}",
        f"(Python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs); target: {target}.",
        "Do not edit by hand: run the command again.",
        "",
        # Scenarios are rows and clients columns: the table stays readable however many scenarios.
        "| scenario | " + " | ".join(clients) + " |",
        "|---|" + "---|" * len(clients),
    ]
    for sc in scenarios:
        lines.append(f"| {sc} | " + " | ".join(cell.get((c, sc), "") for c in clients) + " |")
    lines += [
        "",
        f"{counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed, {counts[Outcome.SKIP]} skipped.",
    ]
    if notes:
        lines += ["", "Notes:", "", *notes]
    versions = {r.client: r.client_version for r in results if r.client_version}
    lines += ["", "## Clients", "", "| client | version |", "|---|---|"]
    lines += [f"| {c} | {versions.get(c) or client_version(c)} |" for c in clients]
    lines += ["", "## Scenarios", ""]
    for name in scenarios:
        fn = SCENARIOS[name]
        lines.append(f"* `{name}` (`{fn.__module__}`): {scenario_summary(fn)}")
    if "failover" in scenarios:
        lines += [
            "",
            "## What failover asserts per client",
            "",
            "Every client: all records acknowledged, none failed; every sent record read back; an",
            "acknowledged (partition, offset) holds its own record; the logs hold exactly what was read.",
            "Idempotent producers also: each record exactly once, in send order per partition.",
            "Where the client can, a groupless consumer also reads the stream while the faults happen.",
            "",
            "| client | settings | guarantee asserted | read during the faults |",
            "|---|---|---|---|",
        ]
        for c in clients:
            try:
                a = get_adapter(c)
            except ConformanceError:
                continue  # a --client-command driver: no failover settings of ours to show
            conf = json.dumps(dict(a.failover_config), sort_keys=True)
            if a.failover_consumer_config:
                conf += "`; consumer `" + json.dumps(dict(a.failover_consumer_config), sort_keys=True)
            guarantee = (
                "exactly once, in order per partition"
                if a.failover_idempotent
                else "at least once (copies allowed)"
            )
            live = (
                "yes: every record once, in offset order"
                if a.failover_no_live_read is None
                else f"no: {a.failover_no_live_read}"
            )
            lines.append(f"| {c} | `{conf}` | {guarantee} | {live} |")
    return "\n".join(lines) + "\n"


def _split(text: str | None, default: Sequence[str]) -> list[str]:
    return [x for x in text.split(",") if x] if text else list(default)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; exit 1 if any cell failed."""
    ap = argparse.ArgumentParser(
        prog="python -m kwire.conformance.report", description=__doc__.split("\n")[0]
    )
    target = ap.add_mutually_exclusive_group()
    target.add_argument(
        "--kwire", action="store_true", help="run against an in-process 3-broker kwire cluster"
    )
    target.add_argument("--rdkafka-mock", action="store_true", help="run against librdkafka's mock (default)")
    target.add_argument("--bootstrap", help="run against this broker")
    ap.add_argument("--clients", help=f"comma list (default: {','.join(c.name for c in ADAPTER_CLASSES)})")
    ap.add_argument("--scenarios", help=f"comma list (default: {','.join(SCENARIOS)})")
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print JSON results instead of the table")
    fmt.add_argument(
        "--markdown", action="store_true", help="print a Markdown document (docs/conformance.md)"
    )
    args = ap.parse_args(argv)
    clients = _split(args.clients, [c.name for c in ADAPTER_CLASSES])
    scenarios = _split(args.scenarios, list(SCENARIOS))
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s!r}")
    if args.bootstrap:
        target_name = f"the broker at {args.bootstrap} (wire-only control)"
        results = run_matrix(clients, scenarios, args.bootstrap, AdminControl(args.bootstrap))
    elif args.kwire:
        from kwire.conformance.kwire_target import CONFORMANCE_BROKERS, CONFORMANCE_SETTINGS, kwire_cluster

        settings = ", ".join(f"{k}={v}" for k, v in CONFORMANCE_SETTINGS.items())
        target_name = f"in-process kwire cluster of {CONFORMANCE_BROKERS} brokers ({settings})"
        with kwire_cluster() as (broker, control):
            results = run_matrix(clients, scenarios, broker.bootstrap, control)
    else:
        target_name = "librdkafka's mock cluster (1 broker, fix-up proxy)"
        from kwire.conformance.rdkafka_mock import RdkafkaMockProcess

        with RdkafkaMockProcess() as mock:
            results = run_matrix(clients, scenarios, mock.bootstrap, mock)
    if args.markdown:
        command = "python -m kwire.conformance.report " + " ".join(
            sys.argv[1:] if argv is None else list(argv)
        )
        print(format_markdown(results, target=target_name, command=command.strip()), end="")
    elif args.json:
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

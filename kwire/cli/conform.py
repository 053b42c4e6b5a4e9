"""``kwire conform``: run real Kafka clients through the conformance scenarios.

    kwire conform --list
    kwire conform --client confluent-kafka --scenario roundtrip --report out/
    kwire conform --client-command 'python examples/conform_driver.py' --target kwire
    kwire conform --client confluent-kafka==2.12.1 --client confluent-kafka==2.16.1   # a version matrix
    kwire conform --client java --target localhost:9092        # a real cluster, for comparison

Against kwire (the default target) the broker records every request, and the client rules of
docs/client-rules.md are checked over each scenario's recording; a violation fails the cell.
Other targets run the client-side checks only. One run shows a live table (rich) and, with
``--report DIR``, writes junit.xml, report.html, conformance.md and results.json there.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import shlex
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from kwire.cli._numbers import BROKERS

__all__ = ["CLIENT_ALIASES", "add_arguments", "resolve_client", "run", "split_pin"]

# The names people install the clients by -> the adapters' internal names (which work too).
CLIENT_ALIASES: dict[str, str] = {
    "java": "java",
    "confluent-kafka": "confluent_kafka",
    "kafka-python": "kafka_python",
    "aiokafka": "aiokafka",
    "kcat": "kcat",
    "kafkajs": "kafkajs",
    "@kafkats/client": "kafkats",
    "@platformatic/kafka": "platformatic",
    "@confluentinc/kafka-javascript": "confluent_js",
}


def split_pin(spec: str) -> tuple[str, str | None]:
    """``confluent-kafka==2.12.1`` -> (``confluent-kafka``, ``2.12.1``); no pin -> (spec, None)."""
    name, sep, version = spec.partition("==")
    return (name, version) if sep else (spec, None)


def resolve_client(name: str) -> str:
    """The adapter name for an install name or an internal name."""
    from kwire.cli import CliError
    from kwire.conformance.clients import ADAPTER_CLASSES

    internal = {c.name for c in ADAPTER_CLASSES}
    if name in internal:
        return name
    if name in CLIENT_ALIASES:
        return CLIENT_ALIASES[name]
    raise CliError(f"unknown client {name!r}; known: {', '.join(CLIENT_ALIASES)}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--client", action="append", default=[], metavar="NAME[==VERSION]",
                   help=f"a client to run (repeatable; default: all): {', '.join(CLIENT_ALIASES)}; "
                        "NAME==VERSION installs that release in its own cached environment (pip and npm "
                        "clients) and runs it as its own row")
    p.add_argument("--client-command", action="append", default=[], metavar="'CMD ARGS'",
                   help="a driver speaking the JSON-lines protocol (docs/driver-protocol.md); repeatable")
    p.add_argument("--scenario", action="append", default=[], metavar="NAME",
                   help="a scenario to run (repeatable; default: all; see --list)")
    p.add_argument("--target", default="kwire", metavar="kwire|rdkafka-mock|HOST:PORT",
                   help="the broker: an in-process kwire cluster (default), librdkafka's mock, or any bootstrap")
    p.add_argument("--brokers", type=BROKERS, default=None, metavar="N",
                   help="brokers of the kwire cluster (default 3)")
    p.add_argument("--report", type=Path, metavar="DIR",
                   help="write junit.xml, report.html, conformance.md and results.json here")
    p.add_argument("--no-rules", action="store_true", help="do not check client rules on the recording")
    p.add_argument("--list", action="store_true", help="list clients, scenarios and rules, then exit")


def _list() -> int:
    from kwire.conformance.clients import get_adapter
    from kwire.conformance.report import scenario_summary
    from kwire.conformance.rules import RULES
    from kwire.conformance.scenarios import SCENARIOS

    print("clients:")
    for install, internal in CLIENT_ALIASES.items():
        reason = get_adapter(internal).unavailable_reason()
        state = "installed" if reason is None else f"not installed ({reason})"
        print(f"  {install:<31} {internal:<16} {state}")
    print("scenarios:")
    for name, fn in SCENARIOS.items():
        print(f"  {name:<28} {scenario_summary(fn)}")
    print("client rules (docs/client-rules.md):")
    for r in RULES:
        print(f"  {r.id:<6} {r.statement}")
    return 0


@contextlib.contextmanager
def _target(args: argparse.Namespace) -> Iterator[tuple[str, Any, str, Any]]:
    """(bootstrap, control, description, kwire Broker or None) for the chosen target."""
    if args.target == "kwire":
        from kwire.conformance.kwire_target import CONFORMANCE_BROKERS, CONFORMANCE_SETTINGS, kwire_cluster

        n = args.brokers or CONFORMANCE_BROKERS
        settings = ", ".join(f"{k}={v}" for k, v in CONFORMANCE_SETTINGS.items())
        with kwire_cluster(brokers=n) as (broker, control):
            yield broker.bootstrap, control, f"in-process kwire cluster of {n} brokers ({settings})", broker
    elif args.target == "rdkafka-mock":
        from kwire.conformance.rdkafka_mock import RdkafkaMockProcess

        with RdkafkaMockProcess() as mock:
            yield mock.bootstrap, mock, "librdkafka's mock cluster (1 broker, fix-up proxy)", None
    else:
        from kwire.cli import CliError
        from kwire.conformance.report import AdminControl

        if ":" not in args.target:
            raise CliError(f"--target must be kwire, rdkafka-mock or HOST:PORT, not {args.target!r}")
        yield args.target, AdminControl(args.target), f"the broker at {args.target} (wire-only control)", None


def run_cell(scenario: str, adapter: Any, bootstrap: str, control: Any, broker: Any, rules: bool) -> Any:
    """One (client, scenario) cell; against kwire, the recording is checked against the client rules."""
    from kwire.conformance.rules import check_recording
    from kwire.conformance.scenarios import Outcome, run_scenario

    if broker is not None and rules:
        broker.call(lambda: setattr(broker.core, "recording", []))
    try:
        result = run_scenario(scenario, adapter, bootstrap, control)
    finally:
        recorded = broker.recorded() if broker is not None and rules else None
        if broker is not None and rules:
            broker.call(lambda: setattr(broker.core, "recording", None))
    if recorded is not None and result.outcome is not Outcome.SKIP:
        result.recorded_frames = len(recorded)
        result.violations = check_recording(recorded)
        if result.violations and result.outcome is Outcome.PASS:
            result.outcome = Outcome.FAIL
            ids = sorted({v.rule_id for v in result.violations})
            result.reason = f"client rule violations: {', '.join(ids)} ({len(result.violations)} in all)"
    return result


def _table(results: dict[tuple[str, str], Any], clients: Sequence[str], scenarios: Sequence[str],
           running: tuple[str, str] | None, done: int, total: int) -> Any:
    """The live matrix: one row per scenario, one column per client (names are never squeezed)."""
    from rich.table import Table

    t = Table(title=f"kwire conform  {done}/{total}", title_justify="left")
    t.add_column("scenario", no_wrap=True)
    for c in clients:
        t.add_column(c, no_wrap=True)
    for s in scenarios:
        row = [s]
        for c in clients:
            r = results.get((c, s))
            if r is None:
                row.append("[yellow]running…[/]" if running == (c, s) else "[dim]·[/]")
                continue
            v = f" [red]{len(r.violations)}✗[/]" if r.violations else ""
            style = {"pass": "green", "fail": "bold red", "skip": "dim"}[r.outcome.value]
            time = f" {r.elapsed_s:.1f}s" if r.outcome.value != "skip" else ""
            row.append(f"[{style}]{r.outcome.value}{time}[/]{v}")
        t.add_row(*row)
    return t


def _adapter_for(spec: str) -> Any:
    """The adapter of ``--client NAME[==VERSION]``; a pinned version is installed first."""
    from kwire.cli import CliError
    from kwire.conformance.clients import ADAPTER_CLASSES, get_adapter
    from kwire.conformance.clients.versions import install_pinned, pinned_adapter
    from kwire.errors import ConformanceError

    name, version = split_pin(spec)
    internal = resolve_client(name)
    if version is None:
        return get_adapter(internal)
    try:
        install_pinned(internal, version, log=lambda msg: print(msg, flush=True))
    except ConformanceError as exc:
        raise CliError(str(exc)) from exc
    return pinned_adapter(next(c for c in ADAPTER_CLASSES if c.name == internal), version)


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    from kwire.cli import CliError
    from kwire.conformance.clients import get_adapter
    from kwire.conformance.clients.command import command_adapter
    from kwire.conformance.outputs import RunInfo, write_reports
    from kwire.conformance.report import format_markdown
    from kwire.conformance.scenarios import SCENARIOS, Outcome

    scenarios = args.scenario or list(SCENARIOS)
    for s in scenarios:
        if s not in SCENARIOS:
            raise CliError(f"unknown scenario {s!r}; known: {', '.join(SCENARIOS)}")
    adapters = [_adapter_for(spec) for spec in args.client]
    adapters += [command_adapter(cmd)() for cmd in args.client_command]
    if not adapters:
        adapters = [get_adapter(c) for c in CLIENT_ALIASES.values()]
    clients = [a.name for a in adapters]
    if len(set(clients)) != len(clients):
        raise CliError(f"a client is named twice: {clients}")

    import importlib.util

    # A live table with rich on a terminal; plain lines without rich or when stdout is a file or a
    # CI log (a table redrawn there is unreadable, and its width squeezes the names).
    fancy = importlib.util.find_spec("rich") is not None and sys.stdout.isatty()
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    command = "kwire " + shlex.join(getattr(args, "_argv", None) or sys.argv[1:])
    results: dict[tuple[str, str], Any] = {}
    total = len(adapters) * len(scenarios)
    with _target(args) as (bootstrap, control, target_name, broker):
        rules = broker is not None and not args.no_rules
        if fancy:
            from rich.console import Console
            from rich.live import Live

            console = Console(stderr=False)
            with Live(_table(results, clients, scenarios, None, 0, total), console=console,
                      auto_refresh=False, transient=False) as live:
                for a in adapters:
                    for s in scenarios:
                        live.update(_table(results, clients, scenarios, (a.name, s), len(results), total),
                                    refresh=True)
                        results[(a.name, s)] = run_cell(s, a, bootstrap, control, broker, rules)
                        live.update(_table(results, clients, scenarios, None, len(results), total), refresh=True)
            console.print()  # the live table leaves the cursor at its last line
        else:
            for a in adapters:
                for s in scenarios:
                    r = results[(a.name, s)] = run_cell(s, a, bootstrap, control, broker, rules)
                    why = f": {' '.join(r.reason.split())[:300]}" if r.reason else ""
                    print(f"[{len(results)}/{total}] {a.name} / {s}: {r.outcome.value} ({r.elapsed_s:.1f}s){why}",
                          flush=True)
    ordered = [results[(c, s)] for c in clients for s in scenarios]
    versions = {r.client: r.client_version for r in ordered if r.client_version}
    print("clients: " + ", ".join(f"{c} {versions.get(c, '?')}" for c in clients))
    for r in ordered:
        if r.outcome is Outcome.FAIL:
            print(f"FAIL {r.client} / {r.scenario}: {r.reason}")
            for v in r.violations[:5]:
                print(v.format())
        elif r.outcome is Outcome.SKIP and (args.client or args.client_command):
            # a client asked for by name that cannot run says why (not only in --report)
            print(f"skip {r.client} / {r.scenario}: {r.reason}")
    counts = {o: sum(r.outcome is o for r in ordered) for o in Outcome}
    print(f"conform: {counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed, {counts[Outcome.SKIP]} skipped"
          + ("" if rules else " (client rules not checked: the target does not record traffic)"))
    if args.report is not None:
        info = RunInfo(command=command, target=target_name, started=started, rules_checked=rules)
        markdown = format_markdown(ordered, target=target_name, command=command)
        for p in write_reports(ordered, info, args.report, markdown):
            print(f"wrote {p}")
    return 1 if counts[Outcome.FAIL] else 0

"""The ``kwire`` command: one module per subcommand, each imported only when run."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from typing import NoReturn

__all__ = ["main", "CliError", "build_parser"]

# subcommand -> module under kwire.cli; each module has add_arguments(parser) and run(args) -> int
_COMMANDS: dict[str, tuple[str, str]] = {
    "decode": ("kwire.cli.decode", "decode a Kafka message or frame to JSON"),
    "encode": ("kwire.cli.encode", "encode the JSON form of a message to bytes"),
    "apis": ("kwire.cli.apis", "list the API keys and versions the codec supports"),
    "records": ("kwire.cli.records", "inspect record batches and log segments"),
    "broker": ("kwire.cli.broker", "run the mock broker"),
    "topics": ("kwire.cli.topics", "list a cluster's topics, partitions and offsets"),
    "groups": ("kwire.cli.groups", "list a cluster's groups with members and lag"),
    "configs": ("kwire.cli.configs", "describe and alter topic, broker, group and client-quota configs"),
    "acls": ("kwire.cli.acls", "list, add and remove a cluster's ACLs"),
    "demo": ("kwire.cli.demo", "start the broker and run a produce/consume demo"),
    "conform": ("kwire.cli.conform", "run real Kafka clients through the conformance scenarios"),
    "fuzz": ("kwire.cli.fuzz", "fuzz a broker it starts (mutated and generated requests)"),
    "replay": ("kwire.cli.replay", "replay recorded requests against a broker and diff the responses"),
    "dlq": ("kwire.cli.dlq", "inspect dead-letter topics and replay them to their original topics"),
    "pipeline": ("kwire.cli.pipeline", "traffic and DLQ reports from captures and log dirs (Spark)"),
}


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kwire")
    except PackageNotFoundError:
        return "(not installed)"


def _available() -> dict[str, tuple[str, str]]:
    out = {}
    for name, (mod, help_) in _COMMANDS.items():
        if importlib.util.find_spec(mod) is not None:
            out[name] = (mod, help_)
    return out


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (what was wrong, and where the help is), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(chosen: str | None, *, every: bool = False) -> argparse.ArgumentParser:
    """The ``kwire`` parser with the ``chosen`` subcommand's options (all of them with ``every``)."""
    parser = _Parser(prog="kwire", description="Kafka wire toolkit")
    parser.add_argument("--version", action="version", version=f"kwire {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    # Only the chosen subcommand's module is imported, so `kwire apis` does not load trio.
    for name, (mod, help_) in _available().items():
        p = sub.add_parser(name, help=help_)
        if every or name == chosen:
            module = importlib.import_module(mod)
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen).parse_args(argv)
    args._argv = list(argv)  # the command line as given, for reports that cite it
    from kwire.errors import KwireError

    try:
        return int(args._run(args) or 0)
    except BrokenPipeError:
        # The reader went away (`kwire apis | head`); silence the flush at exit too.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except (CliError, KwireError, OSError, ValueError) as exc:
        print(f"kwire {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

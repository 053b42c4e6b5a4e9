"""Any client behind the JSON-lines driver protocol: ``kwire conform --client-command 'CMD ARGS'``.

The program speaks the protocol of ``docs/driver-protocol.md`` (the one the built-in drivers
speak, see ``base``). Before the scenarios run, the harness sends ``{"op": "describe"}``; a
driver answers ``{"event": "describe", "name", "version", "codecs", "ops", "kip848", "features",
"lacks"}`` then ``{"event": "done"}``, and the adapter takes its name and capabilities from that
answer (``features``: capabilities beyond the ops, ``base.FEATURES``; ``lacks``: capability ->
the reason the client has none, shown where a scenario skips). A driver without ``describe`` (it
answers with an error) gets the defaults below. The same command serves ``share_consumer``.
"""

from __future__ import annotations

import os
import shlex
from typing import Any, ClassVar

from kwire.conformance.clients._proc import run_json_command
from kwire.conformance.clients.base import ALL_CODECS, ClientAdapter, Hello
from kwire.errors import ConformanceError

__all__ = ["CommandAdapter", "command_adapter"]

_DESCRIBE_TIMEOUT_S = 60.0
_DEFAULT_OPS = frozenset({"produce", "consume"})


class CommandAdapter(ClientAdapter):
    """A client whose driver is a command line; subclassed per command by ``command_adapter``."""

    name: ClassVar[str] = "command"
    command: ClassVar[tuple[str, ...]] = ()
    version: ClassVar[str] = "?"
    hello_info: ClassVar[Hello] = Hello()

    def unavailable_reason(self) -> str | None:
        return None if self.command else "no command given"

    def argv(self) -> list[str]:
        return list(self.command)

    def share_argv(self) -> list[str] | None:
        return list(self.command)

    def client_version(self) -> str:
        return self.version

    def hello(self) -> Hello:
        """The driver's ``describe`` answer, asked when the adapter was made."""
        return self.hello_info


def command_adapter(command: str, name: str | None = None) -> type[CommandAdapter]:
    """Ask the driver to describe itself and return an adapter class for it."""
    argv = tuple(shlex.split(command))
    if not argv:
        raise ConformanceError("--client-command is empty")
    info: dict[str, Any] = {}
    try:
        events = run_json_command(argv, {"op": "describe"}, _DESCRIBE_TIMEOUT_S, label=argv[0])
        info = next((e for e in events if e.get("event") == "describe"), {})
    except ConformanceError as exc:
        if "exited" in str(exc) or "cannot start" in str(exc) or "timed out" in str(exc):
            raise ConformanceError(f"driver {command!r} did not describe itself: {exc}") from exc
        # An error event: a driver without describe; use the defaults.
    codecs = tuple(c for c in info.get("codecs", ("none",)) if c in ALL_CODECS) or ("none",)
    attrs = {
        "name": name or str(info.get("name") or os.path.basename(argv[-1])),
        "command": argv,
        "version": str(info.get("version", "?")),
        "supported_codecs": codecs,
        "supported_ops": frozenset(info.get("ops", _DEFAULT_OPS)),
        "supports_kip848": bool(info.get("kip848", False)),
        "binary_headers": bool(info.get("binary_headers", True)),
    }
    hello = Hello.from_event({**info, "name": attrs["name"]}, _DEFAULT_OPS)
    attrs["hello_info"] = hello
    lacks = hello.lacks
    if "transactions" in lacks:
        attrs["no_transactions"] = lacks["transactions"]
    return type(f"CommandAdapter_{attrs['name']}", (CommandAdapter,), attrs)

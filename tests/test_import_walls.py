"""The layers stay where the design puts them (style §6 "Walls"), checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "kwire"

# The sans-I/O broker never touches the event loop, sockets, wall time or global randomness.
CORE_FORBIDDEN = {"trio", "socket", "time", "asyncio", "random", "threading", "selectors"}


def _imports(path: Path) -> set[str]:
    return _imports_of(path.read_text(), path)


def _imports_of(source: str, path: Path) -> set[str]:
    """Every module a file imports, anywhere in it (function-level and TYPE_CHECKING imports too)."""
    tree = ast.parse(source, str(path))
    package = path.relative_to(ROOT.parent).with_suffix("").parts[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                out.add(node.module)
            elif node.level > 0:  # relative: resolved against the file's package
                base = list(package[: len(package) - (node.level - 1)])
                out.add(".".join(base + ([node.module] if node.module else [])))
    return out


def _files(*parts: str) -> list[Path]:
    return sorted((ROOT.joinpath(*parts)).rglob("*.py"))


def test_broker_core_and_handlers_are_sans_io() -> None:
    for path in _files("broker", "core") + _files("broker", "handlers"):
        bad = {m for m in _imports(path) if m.split(".")[0] in CORE_FORBIDDEN}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_broker_core_never_imports_the_handlers() -> None:
    """The core dispatches to handlers it is given (``BrokerCore(..., handlers=...)``); the
    dependency runs handlers -> core only."""
    for path in _files("broker", "core"):
        bad = {m for m in _imports(path) if m == "kwire.broker.handlers" or m.startswith("kwire.broker.handlers.")}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_wall_check_sees_function_level_and_relative_imports() -> None:
    """The checker itself: an import inside a function, or written relatively, is still found."""
    src = "def f():\n    from kwire.broker.handlers import api_versions\n    from ..handlers.fetch import handle\n"
    found = _imports_of(src, ROOT / "broker" / "core" / "probe.py")
    assert {"kwire.broker.handlers", "kwire.broker.handlers.fetch"} <= found


def test_protocol_imports_only_errors_from_kwire() -> None:
    for path in _files("protocol"):
        mods = {m for m in _imports(path) if m.startswith("kwire")}
        assert all(m == "kwire.errors" or m.startswith("kwire.protocol") for m in mods), (path, mods)


def test_records_imports_only_errors_from_kwire() -> None:
    for path in _files("records"):
        mods = {m for m in _imports(path) if m.startswith("kwire")}
        assert all(m == "kwire.errors" or m.startswith("kwire.records") for m in mods), (path, mods)


def test_only_the_edge_touches_trio() -> None:
    allowed = {ROOT / "broker" / "server.py", ROOT / "control.py"}
    for path in _files():
        if "trio" in {m.split(".")[0] for m in _imports(path)}:
            assert path in allowed, f"{path.relative_to(ROOT)} imports trio"


def test_only_pipeline_spark_imports_pyspark() -> None:
    for path in _files():
        if "pyspark" in {m.split(".")[0] for m in _imports(path)}:
            assert (ROOT / "pipeline" / "spark") in path.parents, f"{path.relative_to(ROOT)} imports pyspark"


def test_capture_imports_only_protocol_and_errors_from_kwire() -> None:
    for path in _files("capture"):
        mods = {m for m in _imports(path) if m.startswith("kwire")}
        assert all(m == "kwire.errors" or m.startswith(("kwire.protocol", "kwire.capture")) for m in mods), (path, mods)

"""Every rule kwire's own rule pages define (docs/authorization.md: ACL-, QUO-; docs/security.md:
SEC-) has a test that names it with ``@pytest.mark.rule`` (tools/rule_coverage.py's reading)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("rule_coverage", ROOT / "tools" / "rule_coverage.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_rule_of_the_security_and_authorization_pages_has_a_test() -> None:
    tool = _tool()
    ids = [rid for page in ("authorization.md", "security.md") for rid in tool.rule_ids(ROOT / "docs" / page)]
    assert {"ACL-1", "QUO-9", "SEC-1", "SEC-14"} <= set(ids)
    covered = tool.tests_by_rule(ROOT / "tests")
    assert [rid for rid in ids if not covered.get(rid)] == []

"""docs/group-configs.md is what tools/gen_config_docs.py makes of the config data now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_group_configs_page_is_fresh() -> None:
    out = subprocess.run([sys.executable, "tools/gen_config_docs.py", "--check"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_page_lists_every_group_config_with_its_range() -> None:
    """Every GROUP_CONFIGS key is on the page; the lock duration shows the broker bounds (GroupConfig)."""
    from kwire.broker.core.configs import GROUP_CONFIGS

    text = (ROOT / "docs" / "group-configs.md").read_text(encoding="utf-8")
    for name in GROUP_CONFIGS:
        assert f"| `{name}` | group" in text
    row = next(line for line in text.splitlines() if line.startswith("| `share.record.lock.duration.ms`"))
    assert "15000–60000" in row and "`30000`" in row
    row = next(line for line in text.splitlines() if line.startswith("| `share.delivery.count.limit`"))
    assert "2–10" in row

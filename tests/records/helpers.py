"""Helpers shared by the record-layer tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "records"


def load_case(name: str) -> tuple[bytes, dict[str, Any]]:
    """The bytes and the sidecar document of one golden case."""
    return (FIXTURES / f"{name}.bin").read_bytes(), json.loads((FIXTURES / f"{name}.json").read_text())


def golden_cases(prefix: str) -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob(f"{prefix}*.bin"))


def unhex(s: str | None) -> bytes | None:
    return None if s is None else bytes.fromhex(s)

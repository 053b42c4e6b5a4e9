"""Shared fixtures for the record-layer tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kwire.records import batch as batch_mod


@pytest.fixture(params=["c", "py"])
def impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test with the C record loops and again with the pure-Python ones."""
    if request.param == "c":
        if batch_mod._speedups is None:
            pytest.skip("C speedups not built")
    else:
        monkeypatch.setattr(batch_mod, "_speedups", None)
    yield request.param

"""Hypothesis inside heavily parametrized tests.

Hypothesis' pytest plugin re-wraps a parametrized ``@given`` test's settings on every
parametrized call, each wrapper pointing at the previous one; after about a thousand cases in
one worker, reading a setting recurses past Python's limit. Tests with hundreds of parameter
sets therefore build a fresh ``@given`` function per case with ``run_examples``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def run_examples(check: Callable[[Any], None], strategy: st.SearchStrategy[Any], *, max_examples: int) -> None:
    """Run ``check`` on ``max_examples`` deterministic draws from ``strategy`` (shrinking on failure)."""

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def examples(value: Any) -> None:
        check(value)

    examples()

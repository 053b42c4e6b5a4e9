"""pytest's warning filters (pyproject.toml): kwire's own warnings are errors, third-party
DeprecationWarnings are hidden."""

from __future__ import annotations

import pytest


def test_kwire_warnings_are_errors_third_party_deprecations_are_not() -> None:
    """pyproject's filterwarnings: a warning attributed to a kwire module fails the test; a
    third-party DeprecationWarning (kafka-python's importlib.resources calls) is hidden."""
    import warnings

    with pytest.raises(DeprecationWarning):
        warnings.warn_explicit("old API", DeprecationWarning, "kwire/cli/x.py", 1, module="kwire.cli.x")
    with pytest.raises(UserWarning):
        warnings.warn_explicit("odd", UserWarning, "kwire/x.py", 1, module="kwire.x")
    with warnings.catch_warnings(record=True) as seen:
        warnings.warn_explicit("read_text is deprecated", DeprecationWarning, "kafka/protocol/x.py", 14,
                               module="kafka.protocol.schemas.load_json")
    assert seen == []

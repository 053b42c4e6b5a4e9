"""Real share consumers for the share tests: the drivers of ``kwire.conformance.clients.share``,
skipping when a client is not installed here."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.conformance.clients.share import Delivered, ShareMember, share_command
from kwire.errors import ConformanceError

__all__ = ["Delivered", "JavaShareConsumer", "share_member"]


def share_member(client: str, bootstrap: str, group: str, **kw: Any) -> ShareMember:
    """A started share driver, or a skip naming what is missing."""
    try:
        share_command(client, bootstrap, group)
    except ConformanceError as exc:
        pytest.skip(str(exc))
    return ShareMember(client, bootstrap, group, **kw)


def JavaShareConsumer(bootstrap: str, group: str, mode: str = "explicit", **config: Any) -> ShareMember:  # noqa: N802
    """The Java KafkaShareConsumer; ``config`` keys with underscores become dotted properties."""
    return share_member("java", bootstrap, group, mode=mode,
                        config={k.replace("_", "."): v for k, v in config.items()})

"""Shared types of the conformance scenarios: plain functions ``(adapter, bootstrap, control) -> ScenarioResult``.

A scenario drives one real client against one broker. ``control`` is the broker's
side channel (topic creation, and the target's known defects); kwire's broker will
provide one, and ``kwire.conformance.rdkafka_mock.RdkafkaMockProcess`` is the stand-in.
A scenario returns ``skip`` with a reason when the client lacks the feature, ``fail``
with the first broken expectation, ``pass`` otherwise; it raises only on harness bugs.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kwire.conformance.clients.base import ClientAdapter

__all__ = [
    "BrokerControl",
    "Outcome",
    "Scenario",
    "ScenarioResult",
    "unique_name",
]


class BrokerControl(Protocol):
    """What a scenario needs from the broker under test besides its bootstrap address."""

    name: str

    def create_topic(self, topic: str, partitions: int) -> None:
        """Create a topic (replication factor 1)."""


class Outcome(enum.Enum):
    """Result of one (client, scenario) cell."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(slots=True)
class ScenarioResult:
    """One cell of the conformance matrix."""

    client: str
    scenario: str
    outcome: Outcome
    reason: str = ""
    elapsed_s: float = 0.0
    details: dict[str, object] = field(default_factory=dict)

    @classmethod
    def passed(cls, client: str, scenario: str, **details: object) -> ScenarioResult:
        return cls(client, scenario, Outcome.PASS, details=dict(details))

    @classmethod
    def failed(cls, client: str, scenario: str, reason: str) -> ScenarioResult:
        return cls(client, scenario, Outcome.FAIL, reason)

    @classmethod
    def skipped(cls, client: str, scenario: str, reason: str) -> ScenarioResult:
        return cls(client, scenario, Outcome.SKIP, reason)


Scenario = Callable[[ClientAdapter, str, BrokerControl], ScenarioResult]


def unique_name(prefix: str) -> str:
    """A topic or group name no earlier run used (the broker may outlive a test)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"

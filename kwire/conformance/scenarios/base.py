"""Shared types of the conformance scenarios: plain functions ``(adapter, bootstrap, control) -> ScenarioResult``.

A scenario drives one real client against one broker. ``control`` is the broker's
side channel (topic creation, and the target's known defects):
``kwire.conformance.kwire_target.KwireControl`` for kwire's cluster (a ``ClusterControl``,
which can also take brokers down and move leaders), ``RdkafkaMockProcess`` for
librdkafka's mock, ``report.AdminControl`` for any broker reached over the wire.
A scenario returns ``skip`` with a reason when the client lacks the feature, ``fail``
with the first broken expectation, ``pass`` otherwise; it raises only on harness bugs.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kwire.conformance.clients.base import ClientAdapter

__all__ = [
    "BrokerControl",
    "ClusterControl",
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


@runtime_checkable
class ClusterControl(Protocol):
    """A broker whose cluster a scenario may change (kwire's control API; failover needs it).

    A control that only reaches the broker over the wire lacks these, and scenarios that
    need them skip.
    """

    name: str

    def create_topic(self, topic: str, partitions: int) -> None:
        """Create a topic (replicated over the cluster where the control can)."""

    def live_node_ids(self) -> list[int]:
        """Nodes currently up."""

    def leader_of(self, topic: str, partition: int) -> int:
        """The node leading a partition (-1 while none is live)."""

    def end_offsets(self, topic: str) -> dict[int, int]:
        """Log end offset of every partition of a topic."""

    def wait_for_records(self, topic: str, count: int, timeout_s: float) -> bool:
        """Block until the topic's logs hold at least ``count`` records; False at the timeout."""

    def broker_down(self, node_id: int) -> None:
        """Take a node down: it stops listening, its connections drop, its partitions move."""

    def broker_up(self, node_id: int) -> None:
        """Bring a node back (it leads nothing until a leader moves to it)."""

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Make ``node_id`` the partition's leader (the leader epoch grows)."""


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
    # Client-rule violations found in the scenario's recorded traffic (kwire.conformance.rules.Violation).
    violations: list[Any] = field(default_factory=list)
    # How many requests the broker recorded during the scenario (None: the target does not record).
    recorded_frames: int | None = None
    # The client's exact version as its adapter or driver tells it ("" before the harness sets it).
    client_version: str = ""

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

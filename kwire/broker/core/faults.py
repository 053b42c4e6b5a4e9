"""Fault injection rules, checked before a request reaches its handler.

A rule matches by API key (or any), broker, and an optional predicate on the decoded request;
it acts a limited number of times (``times``, None = until removed). Actions mirror what
tests need from a misbehaving broker: answer with an error code, delay the answer, swallow
the request, close the connection, or run a hook that may return its own response.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["FaultAction", "FaultRule", "Faults"]


class FaultAction(Enum):
    ERROR = "error"  # answer with error_code (top level and/or per partition)
    LATENCY = "latency"  # handle normally, deliver after delay_ms on the broker clock
    SWALLOW = "swallow"  # never answer (the connection stays busy until the client gives up)
    CLOSE = "close"  # close the connection instead of answering
    HOOK = "hook"  # call hook(request, context) -> response object | None (None: handle normally)
    DROP = "drop"  # with topic: the partition is handled but left out of the response (handlers that support it)


@dataclass(slots=True)
class FaultRule:
    action: FaultAction
    api_key: int | None = None
    broker_id: int | None = None
    error_code: int = 0
    delay_ms: int = 0
    times: int | None = 1
    topic: str | None = None  # with ERROR: only these partitions get the error
    partition: int | None = None
    when: Callable[[Any], bool] | None = None
    hook: Callable[[Any, Any], Any] | None = None
    rule_id: int = 0
    hits: int = 0

    def matches(self, api_key: int, broker_id: int, request: Any) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        if self.api_key is not None and self.api_key != api_key:
            return False
        if self.broker_id is not None and self.broker_id != broker_id:
            return False
        return self.when is None or bool(self.when(request))

    def consume(self) -> None:
        self.hits += 1
        if self.times is not None:
            self.times -= 1


@dataclass(slots=True)
class Faults:
    rules: list[FaultRule] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, rule: FaultRule) -> FaultRule:
        rule.rule_id = next(self._ids)
        self.rules.append(rule)
        return rule

    def remove(self, rule_id: int) -> None:
        self.rules = [r for r in self.rules if r.rule_id != rule_id]

    def clear(self) -> None:
        self.rules.clear()

    def match(self, api_key: int, broker_id: int, request: Any) -> FaultRule | None:
        """The first live rule for this request (partition-scoped ERROR rules are left to handlers)."""
        for r in self.rules:
            if r.topic is not None and r.action in (FaultAction.ERROR, FaultAction.DROP):
                continue
            if r.matches(api_key, broker_id, request):
                r.consume()
                self._prune()
                return r
        return None

    def partition_error(self, api_key: int, broker_id: int, topic: str, partition: int) -> int | None:
        """An injected error code for one partition of one request, if a rule says so."""
        for r in self.rules:
            if r.action is not FaultAction.ERROR or r.topic is None:
                continue
            if r.topic != topic or (r.partition is not None and r.partition != partition):
                continue
            if r.matches(api_key, broker_id, None):
                r.consume()
                self._prune()
                return r.error_code
        return None

    def partition_dropped(self, api_key: int, broker_id: int, topic: str, partition: int) -> bool:
        """Whether a DROP rule leaves this partition out of this response."""
        for r in self.rules:
            if r.action is not FaultAction.DROP or r.topic != topic:
                continue
            if r.partition is not None and r.partition != partition:
                continue
            if r.matches(api_key, broker_id, None):
                r.consume()
                self._prune()
                return True
        return False

    def _prune(self) -> None:
        self.rules = [r for r in self.rules if r.times is None or r.times > 0]

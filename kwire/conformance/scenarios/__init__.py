"""Conformance scenarios: plain functions ``(adapter, bootstrap, control) -> ScenarioResult``.

``SCENARIOS`` maps a name to each; ``run_scenario`` adds the skips every scenario shares.
Types live in ``base``: ``BrokerControl`` (what the broker under test offers besides its
bootstrap address), ``ScenarioResult`` and ``Outcome``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from kwire.conformance.clients.base import ClientAdapter
from kwire.conformance.scenarios.acl import ACL_SCENARIOS
from kwire.conformance.scenarios.base import (
    BrokerControl,
    ClusterControl,
    Outcome,
    Scenario,
    ScenarioResult,
    unique_name,
)
from kwire.conformance.scenarios.failover import failover
from kwire.conformance.scenarios.group import consumer_group, group_migration, kip848_group
from kwire.conformance.scenarios.quotas import quota_throttle
from kwire.conformance.scenarios.renew import RENEW_SCENARIOS
from kwire.conformance.scenarios.roundtrip import produce_consume_roundtrip
from kwire.conformance.scenarios.security import SECURITY_SCENARIOS
from kwire.conformance.scenarios.share import SHARE_SCENARIOS
from kwire.conformance.scenarios.transactions import WINDOW_SCENARIOS, transactions
from kwire.errors import ConformanceError

__all__ = [
    "BrokerControl",
    "ClusterControl",
    "Outcome",
    "Scenario",
    "ScenarioResult",
    "SCENARIOS",
    "SCENARIO_OPS",
    "run_scenario",
    "unique_name",
]

SCENARIOS: dict[str, Scenario] = {
    "roundtrip": produce_consume_roundtrip,
    "consumer_group": consumer_group,
    "kip848_group": kip848_group,
    "group_migration": group_migration,
    "failover": failover,
    "transactions": transactions,
    **WINDOW_SCENARIOS,
    "quota_throttle": quota_throttle,
    **SHARE_SCENARIOS,
    **SECURITY_SCENARIOS,
    **ACL_SCENARIOS,
    **RENEW_SCENARIOS,
}

# The driver operations (docs/driver-protocol.md) each scenario needs; a client whose driver
# lacks one is skipped, not failed.
SCENARIO_OPS: dict[str, frozenset[str]] = {
    "roundtrip": frozenset({"produce", "consume"}),
    "consumer_group": frozenset({"produce", "member"}),
    "kip848_group": frozenset({"produce", "member"}),
    "group_migration": frozenset({"produce", "member"}),
    "failover": frozenset({"producer", "consume"}),
    "transactions": frozenset({"txn_producer", "consume"}),
    **{name: frozenset({"txn_producer", "consume"}) for name in WINDOW_SCENARIOS},
    "quota_throttle": frozenset({"produce", "consume"}),
    # Share drivers are their own programs (kwire.conformance.clients.share), not driver ops.
    # Share scenarios ask the driver's capabilities themselves (share_consumer, share_renew, ...).
    **{name: frozenset() for name in SHARE_SCENARIOS},
    "ssl": frozenset({"produce", "consume"}),
    "sasl_ssl": frozenset({"produce", "consume"}),
    "oauthbearer": frozenset({"produce", "consume"}),
    "reauth": frozenset({"producer", "consume"}),
    "acl_principal": frozenset({"produce", "consume"}),
    **{name: frozenset() for name in RENEW_SCENARIOS},
}


def run_scenario(name: str, adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Run one scenario with the skips every scenario shares, timing it.

    Skips: the client is not installed, or the target lists the pair as a known defect
    (``control.known_defects``). A ConformanceError from the client becomes ``fail``; a failure
    of a scenario the adapter lists in ``known_defects`` (the client's own defect) stays ``fail``
    with that defect named in its reason.
    """
    result = _run_scenario(name, adapter, bootstrap, control)
    defect = adapter.known_defects.get(name)
    if defect is not None and result.outcome is Outcome.FAIL:
        result.reason = f"known {adapter.name} defect: {defect} (this run: {result.reason})"
    elif defect is not None and result.outcome is Outcome.PASS:
        result.details["known_defect_not_seen"] = defect
    if not result.client_version:
        result.client_version = adapter.client_version()
    return result


def _run_scenario(name: str, adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    scenario = SCENARIOS[name]
    reason = adapter.unavailable_reason()
    if reason is not None:
        return ScenarioResult.skipped(adapter.name, name, f"not installed: {reason}")
    missing = SCENARIO_OPS.get(name, frozenset()) - adapter.supported_ops
    if missing:
        return ScenarioResult.skipped(adapter.name, name, f"the driver lacks {', '.join(sorted(missing))}")
    defects: Mapping[tuple[str, str], str] = getattr(control, "known_defects", {})
    defect = defects.get((adapter.name, name))
    if defect is not None:
        return ScenarioResult.skipped(adapter.name, name, f"{control.name} defect: {defect}")
    start = time.monotonic()
    try:
        result = scenario(adapter, bootstrap, control)
    except ConformanceError as exc:
        result = ScenarioResult.failed(adapter.name, name, str(exc))
    result.elapsed_s = time.monotonic() - start
    return result

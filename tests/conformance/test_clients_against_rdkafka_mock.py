"""Every installed real client against librdkafka's mock cluster.

Proves the adapters and scenarios before kwire's broker exists. Pairs the mock cannot
run (``KNOWN_DEFECTS``) and clients that are not installed are skipped with the reason.
"""

from __future__ import annotations

import pytest

from kwire.conformance.clients import ADAPTER_CLASSES, get_adapter
from kwire.conformance.rdkafka_mock import RdkafkaMockProcess
from kwire.conformance.scenarios import Outcome, run_scenario

pytestmark = pytest.mark.conformance

CLIENTS = [cls.name for cls in ADAPTER_CLASSES]


def _run(scenario: str, client: str, mock: RdkafkaMockProcess) -> None:
    result = run_scenario(scenario, get_adapter(client), mock.bootstrap, mock)
    if result.outcome is Outcome.SKIP:
        pytest.skip(result.reason)
    assert mock.alive(), "the librdkafka mock died during the scenario"
    assert result.outcome is Outcome.PASS, result.reason


@pytest.mark.parametrize("client", CLIENTS)
def test_roundtrip_preserves_keys_values_headers_for_every_codec(
    client: str, rdkafka_mock: RdkafkaMockProcess
) -> None:
    """Produce NULL/empty/binary keys and values with headers per codec; consume them back in order."""
    _run("roundtrip", client, rdkafka_mock)


@pytest.mark.parametrize("client", CLIENTS)
def test_classic_group_splits_and_resumes_from_committed_offsets(
    client: str, rdkafka_mock: RdkafkaMockProcess
) -> None:
    """Two members split the partitions; after one leaves, the other resumes with no duplicate or gap."""
    _run("consumer_group", client, rdkafka_mock)


@pytest.mark.parametrize("client", [c.name for c in ADAPTER_CLASSES if c.supports_kip848])
def test_kip848_group_splits_and_resumes_from_committed_offsets(
    client: str, rdkafka_mock: RdkafkaMockProcess
) -> None:
    """The same two-member scenario over ConsumerGroupHeartbeat (group.protocol=consumer)."""
    _run("kip848_group", client, rdkafka_mock)

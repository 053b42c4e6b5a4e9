"""Every installed real client against librdkafka's mock cluster.

Proves the adapters and scenarios before kwire's broker exists. Pairs the mock cannot
run (``KNOWN_DEFECTS``) and clients that are not installed are skipped with the reason; a
scenario the client itself fails (its adapter's ``known_defects``) is a strict xfail.
"""

from __future__ import annotations

import pytest

from kwire.conformance.clients import ADAPTER_CLASSES, get_adapter
from kwire.conformance.rdkafka_mock import RdkafkaMockProcess
from kwire.conformance.scenarios import Outcome, run_scenario

pytestmark = pytest.mark.conformance

CLIENTS = [cls.name for cls in ADAPTER_CLASSES]


def _run(scenario: str, client: str, mock: RdkafkaMockProcess, request: pytest.FixtureRequest) -> None:
    adapter = get_adapter(client)
    # A defect of the client itself (not of the mock): strict xfail, as against kwire.
    defect = adapter.known_defects.get(scenario)
    if defect is not None:
        request.applymarker(pytest.mark.xfail(reason=f"known {client} defect: {defect}", strict=True))
    result = run_scenario(scenario, adapter, mock.bootstrap, mock)
    if result.outcome is Outcome.SKIP:
        pytest.skip(result.reason)
    assert mock.alive(), "the librdkafka mock died during the scenario"
    assert result.outcome is Outcome.PASS, result.reason


@pytest.mark.parametrize("client", CLIENTS)
def test_roundtrip_preserves_keys_values_headers_for_every_codec(
    client: str, request: pytest.FixtureRequest, rdkafka_mock: RdkafkaMockProcess
) -> None:
    """Produce NULL/empty/binary keys and values with headers per codec; consume them back in order."""
    _run("roundtrip", client, rdkafka_mock, request)


@pytest.mark.parametrize("client", CLIENTS)
def test_classic_group_splits_and_resumes_from_committed_offsets(
    client: str, request: pytest.FixtureRequest, rdkafka_mock: RdkafkaMockProcess
) -> None:
    """Two members split the partitions; after one leaves, the other resumes with no duplicate or gap."""
    _run("consumer_group", client, rdkafka_mock, request)


@pytest.mark.parametrize("client", [c.name for c in ADAPTER_CLASSES if c.supports_kip848])
def test_kip848_group_splits_and_resumes_from_committed_offsets(
    client: str, request: pytest.FixtureRequest, rdkafka_mock: RdkafkaMockProcess
) -> None:
    """The same two-member scenario over ConsumerGroupHeartbeat (group.protocol=consumer)."""
    _run("kip848_group", client, rdkafka_mock, request)

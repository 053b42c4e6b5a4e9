"""ApiVersions (incl. the KIP-511 fallback layout), Metadata, CreateTopics, FindCoordinator,
InitProducerId and ListOffsets through the core."""

from __future__ import annotations

import struct

import pytest

from kwire.broker.handlers import HANDLER_MODULES, load_handlers
from kwire.protocol import encode_request
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.messages.create_topics import CreateTopicsRequest
from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest
from kwire.protocol.messages.init_producer_id import InitProducerIdRequest
from kwire.protocol.messages.list_offsets import ListOffsetsRequest
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.registry import ApiKey, api_info
from tests.broker.helpers import CoreClient, batch, make_core


def test_every_handler_module_registers_within_the_codec_range() -> None:
    handlers = load_handlers()
    assert {h.module for h in handlers.values()} <= set(HANDLER_MODULES)
    for h in handlers.values():
        info = api_info(h.api_key)
        assert info.min_version <= h.min_version <= h.max_version <= info.max_version


def test_api_versions_lists_exactly_the_implemented_versions() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    resp = c.send(ApiVersionsRequest(client_software_name="kwire-test", client_software_version="1.0"), 4)
    got = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert got[ApiKey.API_VERSIONS] == (0, 4)
    assert got[ApiKey.PRODUCE] == (0, 13)  # RB-5: advertised from v0 for librdkafka
    assert got[ApiKey.FETCH] == (4, 18)
    assert set(got) == set(core.handlers)
    assert {f.name for f in resp.finalized_features} >= {"metadata.version", "group.version"}


def test_api_versions_cap_simulates_an_older_broker() -> None:
    core, _ = make_core()
    core.version_caps[ApiKey.FETCH] = 11
    resp = CoreClient(core).send(ApiVersionsRequest(), 0)
    assert {k.api_key: k.max_version for k in resp.api_keys}[ApiKey.FETCH] == 11


def test_unsupported_api_versions_version_gets_the_v0_layout_fallback() -> None:
    """KIP-511: int16 error, int32 count, 6-byte entries, header v0 — readable by any client."""
    core, _ = make_core()
    conn = core.connect(1)
    payload = bytearray(encode_request(ApiVersionsRequest(), 4, correlation_id=77, size_prefix=False))
    payload[2:4] = struct.pack(">h", 9)  # a version from the future
    out = core.handle(conn, bytes(payload))
    assert out.kind == "send"
    assert out.data == struct.pack(">ihih", 77, ErrorCode.UNSUPPORTED_VERSION, 1, ApiKey.API_VERSIONS) + \
        struct.pack(">hh", 0, 4)


@pytest.mark.parametrize(("name", "version"), [("bad name!", "1"), ("kwire\n", "1"), ("kwire", "1.0\n")])
def test_invalid_client_software_name_is_invalid_request(name: str, version: str) -> None:
    """ApiVersionsRequest.isValid matches the whole name and version (Java's Matcher.matches), so a
    trailing newline is invalid too."""
    core, _ = make_core()
    resp = CoreClient(core).send(ApiVersionsRequest(client_software_name=name, client_software_version=version), 3)
    assert resp.error_code == ErrorCode.INVALID_REQUEST


def test_metadata_lists_live_brokers_and_a_real_controller() -> None:
    core, _ = make_core(brokers=3)
    core.create_topic("t", 3)
    resp = CoreClient(core).send(MetadataRequest(topics=None), 12)
    assert [b.node_id for b in resp.brokers] == [1, 2, 3]
    assert resp.controller_id in (1, 2, 3)
    [t] = resp.topics
    assert t.name == "t" and t.topic_id == core.cluster.topics["t"].topic_id
    assert sorted(p.leader_id for p in t.partitions) == [1, 2, 3]


def test_metadata_auto_creates_when_allowed() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    resp = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto")],
                                  allow_auto_topic_creation=False), 9)
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    resp = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto")]), 9)
    assert resp.topics[0].error_code == 0 and "auto" in core.cluster.topics
    resp = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="bad/name")]), 9)
    assert resp.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_metadata_after_broker_down_moves_leaders() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 2)
    core.cluster.set_node_up(1, False)
    resp = CoreClient(core, broker_id=2).send(MetadataRequest(topics=None), 12)
    assert [b.node_id for b in resp.brokers] == [2]
    assert all(p.leader_id == 2 and p.leader_epoch >= 0 for p in resp.topics[0].partitions)
    assert resp.controller_id == 2


def test_create_topics_errors_and_validate_only() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    CT = CreateTopicsRequest.CreatableTopic
    resp = c.send(CreateTopicsRequest(topics=[
        CT(name="ok", num_partitions=2, replication_factor=1),
        CT(name="ok2", num_partitions=0, replication_factor=1),
        CT(name="ok3", num_partitions=1, replication_factor=3),
        CT(name="ok4", num_partitions=1, replication_factor=1,
           configs=[CreateTopicsRequest.CreatableTopicConfig(name="nope", value="1")]),
        CT(name="a" * 300, num_partitions=1, replication_factor=1),
    ], timeout_ms=1000), 7)
    codes = [r.error_code for r in resp.topics]
    assert codes == [0, ErrorCode.INVALID_PARTITIONS, ErrorCode.INVALID_REPLICATION_FACTOR, ErrorCode.INVALID_CONFIG,
                     ErrorCode.INVALID_TOPIC_EXCEPTION]
    assert resp.topics[0].num_partitions == 2 and resp.topics[0].topic_id == core.cluster.topics["ok"].topic_id
    again = c.send(CreateTopicsRequest(topics=[CT(name="ok", num_partitions=1, replication_factor=1)]), 7)
    assert again.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    dry = c.send(CreateTopicsRequest(topics=[CT(name="dry", num_partitions=4, replication_factor=1)],
                                     validate_only=True), 7)
    assert dry.topics[0].error_code == 0 and "dry" not in core.cluster.topics


def test_find_coordinator_batched_and_single() -> None:
    core, _ = make_core(brokers=3)
    c = CoreClient(core)
    single = c.send(FindCoordinatorRequest(key="group-a", key_type=0), 3)
    batched = c.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["group-a", ""]), 4)
    assert single.node_id == batched.coordinators[0].node_id == core.coordinator_for("group-a").node_id
    assert batched.coordinators[1].error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.rule("TX-1")
def test_init_producer_id_idempotent_producer() -> None:
    """TX-1: a null transactional id gets a fresh producer id with epoch 0; empty string is invalid."""
    core, _ = make_core()
    c = CoreClient(core)
    a = c.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4)
    b = c.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4)
    assert a.error_code == b.error_code == 0 and a.producer_epoch == 0 and b.producer_id == a.producer_id + 1
    bump = c.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1, producer_id=a.producer_id,
                                        producer_epoch=0), 4)
    assert (bump.producer_id, bump.producer_epoch) == (a.producer_id, 1)
    assert c.send(InitProducerIdRequest(transactional_id="", transaction_timeout_ms=1), 4).error_code == \
        ErrorCode.INVALID_REQUEST


@pytest.mark.rule("TX-4")
def test_init_producer_id_with_only_one_of_id_and_epoch_is_invalid() -> None:
    """TX-4: exactly one of ProducerId/ProducerEpoch being -1 is INVALID_REQUEST."""
    core, _ = make_core()
    resp = CoreClient(core).send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1,
                                                       producer_id=5, producer_epoch=-1), 4)
    assert resp.error_code == ErrorCode.INVALID_REQUEST


def test_list_offsets_earliest_latest_timestamp_and_max() -> None:
    core, clock = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    for i, ts in enumerate((1000, 5000, 3000)):
        c.send(ProduceRequest(acks=-1, timeout_ms=1, topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch([b"v%d" % i], timestamp_ms=ts))])]), 9)

    def lo(ts: int, v: int = 8) -> tuple[int, int, int]:
        r = c.send(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=ts, current_leader_epoch=-1)])]), v)
        p = r.topics[0].partitions[0]
        return p.error_code, p.offset, p.timestamp

    assert lo(-2) == (0, 0, -1)
    assert lo(-1) == (0, 3, -1)
    assert lo(-3) == (0, 1, 5000)
    assert lo(2000) == (0, 1, 5000)
    assert lo(6000) == (0, -1, -1)


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_before_v12_naming_a_topic_by_id_is_invalid_request(version: int) -> None:
    """KafkaApis.handleTopicMetadataRequest: no topic ids before v12 (a null name, or an id):
    INVALID_REQUEST for every topic (MetadataRequest.getErrorResponse), the connection stays."""
    import uuid

    core, _ = make_core()
    t = core.create_topic("t", 1)
    c = CoreClient(core)
    by_id = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=t.topic_id),
                                    MetadataRequest.MetadataRequestTopic(name="t")])
    resp = c.send(by_id, version)
    assert [(x.name, x.error_code, x.partitions) for x in resp.topics] == [
        ("", ErrorCode.INVALID_REQUEST, []), ("t", ErrorCode.INVALID_REQUEST, [])]
    both = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t", topic_id=uuid.uuid4())])
    assert c.send(both, version).topics[0].error_code == ErrorCode.INVALID_REQUEST
    assert c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]), version).topics[0] \
        .error_code == ErrorCode.NONE

"""What the per-request caches (issue 24) must never change: an answer or a setting resolved
once is resolved again as soon as what it depends on changes.

Kafka computes these per request (ApiVersionsResponse via ``ApiVersionManager.apiVersionResponse``,
``LogConfig`` from the topic's config in ``UnifiedLog``, ``ShareGroupConfig`` per group); kwire
caches them for speed, so each test changes the input after a cached use and checks the output.
"""

from __future__ import annotations

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.share_coordinator import share_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.registry import ApiKey
from tests.broker.helpers import CoreClient, make_core


def _versions(resp: object) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}  # type: ignore[attr-defined]


def test_api_versions_answer_follows_caps_features_and_correlation_ids() -> None:
    """ApiVersionsResponse (ApiVersionManager): a cap set through the control API and a finalized
    feature changed by config show in the next answer, cached or not; each answer carries its
    own correlation id (checked by CoreClient.send)."""
    core, _ = make_core()
    c = CoreClient(core)
    req = ApiVersionsRequest(client_software_name="kwire-test", client_software_version="1.0")
    first = c.send(req, 3)
    again = c.send(req, 3)  # from the cache
    assert _versions(first) == _versions(again)
    assert _versions(again)[ApiKey.PRODUCE][1] == 13
    core.version_caps[ApiKey.PRODUCE] = 9
    assert _versions(c.send(req, 3))[ApiKey.PRODUCE] == (0, 9)
    del core.version_caps[ApiKey.PRODUCE]
    assert _versions(c.send(req, 3))[ApiKey.PRODUCE] == (0, 13)
    fin = {f.name: f.max_version_level for f in c.send(req, 3).finalized_features}
    assert fin["transaction.version"] == 2
    core.configs.set(ResourceType.BROKER, "", "transaction.version", "1")
    fin = {f.name: f.max_version_level for f in c.send(req, 3).finalized_features}
    assert fin["transaction.version"] == 1
    # v0-v2 have no features: a separate answer per version, not v3's
    assert c.send(ApiVersionsRequest(), 2).finalized_features == []


def test_api_versions_bad_software_name_is_not_answered_from_the_cache() -> None:
    """KIP-511: an invalid ClientSoftwareName is INVALID_REQUEST even after valid requests were cached."""
    core, _ = make_core()
    c = CoreClient(core)
    ok = ApiVersionsRequest(client_software_name="kwire-test", client_software_version="1.0")
    assert c.send(ok, 3).error_code == ErrorCode.NONE
    assert c.send(ok, 3).error_code == ErrorCode.NONE
    bad = ApiVersionsRequest(client_software_name="-bad name", client_software_version="1.0")
    assert c.send(bad, 3).error_code == ErrorCode.INVALID_REQUEST
    assert c.conn.client_software_name == "kwire-test"


def test_log_config_follows_topic_and_broker_overrides() -> None:
    """LogConfig (UnifiedLog's config): a topic override and a broker default changed after an
    append's lookup apply to the next one."""
    core, _ = make_core()
    core.create_topic("t", 1)
    assert core.log_config("t").max_message_bytes == 1048588
    core.configs.set(ResourceType.TOPIC, "t", "max.message.bytes", "2000")
    assert core.log_config("t").max_message_bytes == 2000
    core.configs.set(ResourceType.TOPIC, "t", "max.message.bytes", None)
    assert core.log_config("t").max_message_bytes == 1048588
    core.configs.set(ResourceType.BROKER, "", "message.max.bytes", "3000")
    assert core.log_config("t").max_message_bytes == 3000
    core.configs.set(ResourceType.TOPIC, "t", "cleanup.policy", "compact")
    assert core.log_config("t").compacted


def test_share_config_follows_group_and_broker_overrides() -> None:
    """ShareGroupConfig: a group's share.record.lock.duration.ms, then the broker's
    group.share.record.lock.duration.ms, apply to the next lookup after a cached one."""
    core, _ = make_core()
    coord = share_coordinator(core)
    assert coord.config("g").record_lock_duration_ms == 30000
    core.configs.set(ResourceType.BROKER, "", "group.share.record.lock.duration.ms", "20000")
    assert coord.config("g").record_lock_duration_ms == 20000
    core.configs.set(ResourceType.GROUP, "g", "share.record.lock.duration.ms", "15000")
    assert coord.config("g").record_lock_duration_ms == 15000
    assert coord.config("other").record_lock_duration_ms == 20000


def test_metadata_answer_follows_leaders_brokers_topics_and_logs() -> None:
    """MetadataResponse (KafkaApis.handleTopicMetadataRequest, MetadataCache at d79bd502): an
    answer encoded once is answered again only while the topics, their partitions, the brokers
    and the controller are unchanged; each change below shows in the very next answer."""
    from kwire.protocol.messages.metadata import MetadataRequest

    core, _ = make_core(brokers=3)
    core.create_topic("a", 2, 2)
    core.create_topic("b", 1, 1)
    c = CoreClient(core)
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in ("a", "b")],
                          allow_auto_topic_creation=False)

    def view() -> tuple[object, ...]:
        r = c.send(req, 12)
        return (r.controller_id, tuple((b.node_id, b.host, b.port, b.rack) for b in r.brokers),
                tuple((t.error_code, t.name, t.topic_id, tuple((p.error_code, p.partition_index, p.leader_id,
                                                                 p.leader_epoch, tuple(p.replica_nodes),
                                                                 tuple(p.isr_nodes), tuple(p.offline_replicas))
                                                                for p in t.partitions)) for t in r.topics))

    first = view()
    assert view() == first  # answered from the cache
    a0 = core.cluster.topics["a"].partitions[0]
    other = next(r for r in a0.replicas if r != a0.leader_id)
    core.cluster.move_leader("a", 0, other)  # a new leader and epoch
    moved = view()
    assert moved != first and moved[2][0][3][0][2] == other
    down = max(core.cluster.nodes)
    core.cluster.set_node_up(down, False)  # a broker leaves: fewer brokers, leaders and ISRs move
    gone = view()
    assert down not in [b[0] for b in gone[1]]
    core.cluster.set_node_up(down, True)
    assert down in [b[0] for b in view()[1]]
    core.cluster.nodes[min(core.cluster.nodes)].rack = "r1"
    assert ("r1" in [b[3] for b in view()[1]])
    core.create_partitions("a", 3)
    assert len(view()[2][0][3]) == 3
    b0 = core.cluster.topics["b"].partitions[0]
    b0.log.offline = "disk failed"  # its data dir failed: LEADER_NOT_AVAILABLE
    assert view()[2][1][3][0][0] == ErrorCode.LEADER_NOT_AVAILABLE
    b0.log.offline = None
    old_id = view()[2][1][2]
    core.delete_topic("b")
    assert view()[2][1][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    core.create_topic("b", 1, 1)
    assert view()[2][1][2] not in (old_id, None)
    core.cluster.nodes[min(core.cluster.nodes)].endpoints[c.conn.listener] = ("elsewhere", 1234)
    assert ("elsewhere", 1234) in [(b[1], b[2]) for b in view()[1]]


def test_metadata_is_not_cached_with_an_authorizer() -> None:
    """With an authorizer the answer depends on the principal and the ACLs (ACL-3): a topic the
    principal may no longer describe is answered TOPIC_AUTHORIZATION_FAILED at once."""
    from kwire.protocol.messages.metadata import MetadataRequest

    core, _ = make_core()
    core.create_topic("a", 1, 1)
    c = CoreClient(core)
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="a")], allow_auto_topic_creation=False)
    assert c.send(req, 12).topics[0].error_code == ErrorCode.NONE
    assert c.send(req, 12).topics[0].error_code == ErrorCode.NONE
    core.configs.set(ResourceType.BROKER, "", "authorizer.class.name",
                     "org.apache.kafka.metadata.authorizer.StandardAuthorizer", static=True, custom=True)
    assert c.send(req, 12).topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_txn_settings_follow_broker_overrides() -> None:
    """TransactionStateManager / TransactionCoordinator read their settings from the broker's
    config (TransactionConfig); the coordinator's resolved settings follow every key they are
    built from, set, changed in place, cleared, and the overrides replaced as a whole."""
    from kwire.broker.core.txn_coordinator import txn_coordinator

    core, _ = make_core()
    txn = txn_coordinator(core)
    assert txn is not None
    first = txn.settings()
    assert first.marker_delay_ms == 0 and first.transaction_version == 2
    assert txn.settings() is first  # resolved once while nothing changes
    keys = {"transaction.max.timeout.ms": ("transaction_max_timeout_ms", "120000"),
            "transactional.id.expiration.ms": ("transactional_id_expiration_ms", "5000"),
            "transaction.version": ("transaction_version", "1"),
            "offsets.topic.num.partitions": ("offsets_topic_partitions", "7"),
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("abort_timed_out_interval_ms", "1234"),
            "kwire.transaction.marker.delay.ms": ("marker_delay_ms", "25")}
    for key, (attr, value) in keys.items():
        core.configs.set(ResourceType.BROKER, "", key, value)
        assert getattr(txn.settings(), attr) == int(value), key
        core.configs.set(ResourceType.BROKER, "", key, None)
        assert getattr(txn.settings(), attr) == getattr(first, attr), key
    core.configs.set(ResourceType.BROKER, "", "kwire.transaction.marker.delay.ms", "10")
    assert txn.settings().marker_delay_ms == 10
    core.configs.overrides[(ResourceType.BROKER, "")]["kwire.transaction.marker.delay.ms"] = "11"  # in place
    assert txn.settings().marker_delay_ms == 11
    core.configs.overrides[(ResourceType.BROKER, "")] = {}  # replaced
    assert txn.settings().marker_delay_ms == 0
    del core.configs.overrides[(ResourceType.BROKER, "")]
    assert txn.settings() == first


def test_marker_batch_follows_each_input_and_stays_unwritten() -> None:
    """WriteTxnMarkers at the leader (UnifiedLog.appendAsLeader of
    MemoryRecords.withEndTransactionMarker): the marker batch built once for a transaction's
    partitions must be the batch its inputs give, each input changed in turn (result, producer
    id, epoch, coordinator epoch, broker time), and the log's offset assignment must write into
    its own copy, never into the bytes the next partition's marker reuses."""
    from kwire.broker.core.log import PartitionLog, _marker_batch
    from kwire.records import ControlRecordType, RecordBatch, build_control_batch
    from kwire.records.control import parse_control_record

    now = 1_750_000_000_000
    base = (ControlRecordType.COMMIT, 5, 1, 0, now)
    variants = [base, (ControlRecordType.ABORT, 5, 1, 0, now), (ControlRecordType.COMMIT, 6, 1, 0, now),
                (ControlRecordType.COMMIT, 5, 2, 0, now), (ControlRecordType.COMMIT, 5, 1, 3, now),
                (ControlRecordType.COMMIT, 5, 1, 0, now + 1), base]
    for kind, pid, epoch, coord, ts in variants:
        assert _marker_batch(kind, pid, epoch, coord, ts) == build_control_batch(kind, pid, epoch, coord, 0, ts)
        assert _marker_batch(kind, pid, epoch, coord, ts) == build_control_batch(kind, pid, epoch, coord, 0, ts)
    logs = [PartitionLog("t", i) for i in range(3)]
    for i, log in enumerate(logs):  # different log end offsets: the offsets written differ
        for _ in range(i):
            log.append_marker(7, 0, False, coordinator_epoch=0, now_ms=now)
    for log in logs:
        log.append_marker(5, 1, True, coordinator_epoch=4, now_ms=now + 9, leader_epoch=2)
    for i, log in enumerate(logs):
        b = RecordBatch(log.batches[-1].data)
        b.validate()
        assert (b.base_offset, b.producer_id, b.producer_epoch, b.partition_leader_epoch) == (i, 5, 1, 2)
        marker = parse_control_record(next(iter(b)))
        assert (marker.type, marker.coordinator_epoch) == (ControlRecordType.COMMIT, 4)
        assert log.producers.entries[5].coordinator_epoch == 4
    assert _marker_batch(ControlRecordType.COMMIT, 5, 1, 4, now + 9) == \
        build_control_batch(ControlRecordType.COMMIT, 5, 1, 4, 0, now + 9)

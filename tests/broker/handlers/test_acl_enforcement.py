"""ACL enforcement through the core: the resource, operation and error code KafkaApis uses at
d79bd502 (KafkaApis, AclApis, AuthHelper, ControllerApis, ConfigHelper), top-level or per
partition where Kafka puts them. The mapping is kwire.broker.core.acl_rules."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.broker.core.acl import (
    CLUSTER_NAME,
    STANDARD_AUTHORIZER,
    AclBinding,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from kwire.broker.core.acl_rules import REQUEST_CHECKS, RESOURCE_CHECKS
from kwire.broker.handlers import load_handlers
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.messages.create_acls import CreateAclsRequest
from kwire.protocol.messages.create_topics import CreateTopicsRequest
from kwire.protocol.messages.delete_acls import DeleteAclsRequest
from kwire.protocol.messages.delete_topics import DeleteTopicsRequest
from kwire.protocol.messages.describe_acls import DescribeAclsRequest
from kwire.protocol.messages.describe_cluster import DescribeClusterRequest
from kwire.protocol.messages.describe_configs import DescribeConfigsRequest
from kwire.protocol.messages.describe_groups import DescribeGroupsRequest
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest
from kwire.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from kwire.protocol.messages.init_producer_id import InitProducerIdRequest
from kwire.protocol.messages.join_group import JoinGroupRequest
from kwire.protocol.messages.list_groups import ListGroupsRequest
from kwire.protocol.messages.list_offsets import ListOffsetsRequest
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.offset_commit import OffsetCommitRequest
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequest_WritableTxnMarkerTopic,
)
from kwire.protocol.registry import ApiKey
from tests.broker.helpers import CoreClient, batch, make_core
from tests.broker.share_helpers import ShareClient, partition_data

Op, R = AclOperation, ResourceType
ALICE = "User:alice"


def secured(*topics: str, **settings: str) -> Any:
    core, _ = make_core(settings={"authorizer.class.name": STANDARD_AUTHORIZER, **settings})
    for t in topics:
        core.create_topic(t, 1)
    return core


def allow(core: Any, rtype: ResourceType, name: str, *ops: AclOperation, principal: str = ALICE,
          pattern: PatternType = PatternType.LITERAL, deny: bool = False) -> None:
    for op in ops:
        core.subsystems.acl.create(AclBinding(rtype, name, pattern, principal, "*", op,
                                              AclPermission.DENY if deny else AclPermission.ALLOW))


def client(core: Any, principal: str = ALICE) -> CoreClient:
    c = CoreClient(core)
    c.conn.principal = principal
    c.conn.peer = "10.1.2.3:50000"
    return c


def produce(c: CoreClient, *topics: str, transactional_id: str | None = None) -> dict[str, int]:
    resp = c.send(ProduceRequest(acks=-1, timeout_ms=1000, transactional_id=transactional_id, topic_data=[
        ProduceRequest.TopicProduceData(name=t, partition_data=[ProduceRequest.PartitionProduceData(
            index=0, records=batch([b"v"]))]) for t in topics]), 9)
    return {t.name: t.partition_responses[0].error_code for t in resp.responses}


def test_every_table_row_names_a_served_api_and_a_kafka_apis_method() -> None:
    served = load_handlers()
    for row in (*REQUEST_CHECKS, *RESOURCE_CHECKS):
        assert row.api_key in served, row
        assert row.source, row


@pytest.mark.rule("ACL-1")
def test_acl_apis_are_advertised_and_security_disabled_without_an_authorizer() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    keys = {k.api_key for k in c.send(ApiVersionsRequest(), 3).api_keys}
    assert {ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS} <= keys
    d = c.send(DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1, permission_type=1), 3)
    assert d.error_code == ErrorCode.SECURITY_DISABLED
    cr = c.send(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
        resource_type=2, resource_name="t", resource_pattern_type=3, principal=ALICE, host="*", operation=3,
        permission_type=3)]), 3)
    assert [r.error_code for r in cr.results] == [ErrorCode.SECURITY_DISABLED]
    dl = c.send(DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=1, pattern_type_filter=1, operation=1, permission_type=1)]), 3)
    assert [r.error_code for r in dl.filter_results] == [ErrorCode.SECURITY_DISABLED]


@pytest.mark.rule("ACL-1")
def test_acl_apis_need_cluster_alter_and_describe() -> None:
    core = secured(**{"super.users": "User:admin"})
    creation = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
        resource_type=2, resource_name="t", resource_pattern_type=4, principal=ALICE, host="*", operation=3,
        permission_type=3), CreateAclsRequest.AclCreation(
        resource_type=4, resource_name="other", resource_pattern_type=3, principal=ALICE, host="*", operation=3,
        permission_type=3)])
    refused = client(core).send(creation, 3)
    assert [r.error_code for r in refused.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2
    admin = client(core, "User:admin")
    created = admin.send(creation, 3)
    assert [r.error_code for r in created.results] == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST]
    described = admin.send(DescribeAclsRequest(resource_type_filter=2, resource_name_filter="t.x",
                                               pattern_type_filter=2, principal_filter=None, host_filter=None,
                                               operation=1, permission_type=1), 3)
    assert [(r.resource_name, r.pattern_type) for r in described.resources] == [("t", 4)]
    assert client(core).send(DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                                 permission_type=1), 3).error_code == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.rule("ACL-3")
def test_metadata_hides_topics_it_may_not_describe() -> None:
    core = secured("seen", "hidden", **{"auto.create.topics.enable": "true"})
    allow(core, R.TOPIC, "seen", Op.READ)  # READ implies DESCRIBE
    c = client(core)
    every = c.send(MetadataRequest(topics=None), 12)
    assert [t.name for t in every.topics] == ["seen"]
    named = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n)
                                           for n in ("hidden", "seen", "missing")], allow_auto_topic_creation=True), 12)
    by_name = {t.name: t for t in named.topics}
    assert by_name["seen"].error_code == ErrorCode.NONE
    # An undescribable topic and one that does not exist look the same: existence is not disclosed.
    assert by_name["hidden"].error_code == by_name["missing"].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert by_name["hidden"].partitions == [] and "missing" not in core.cluster.topics
    allow(core, R.TOPIC, "missing", Op.DESCRIBE, Op.CREATE)
    c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="missing")],
                           allow_auto_topic_creation=True), 12)
    assert "missing" in core.cluster.topics  # auto-created with CREATE on the topic


@pytest.mark.rule("ACL-4")
def test_produce_fetch_and_list_offsets_fail_per_partition() -> None:
    core = secured("a", "b")
    allow(core, R.TOPIC, "a", Op.WRITE, Op.READ)
    c = client(core)
    assert produce(c, "a", "b") == {"a": ErrorCode.NONE, "b": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert core.cluster.topics["b"].partitions[0].log.log_end_offset == 0
    resp = c.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=t, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 20)]) for t in ("a", "b")]), 11)
    codes = {t.topic: t.partitions[0].error_code for t in resp.responses}
    assert codes == {"a": ErrorCode.NONE, "b": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    lo = c.send(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=t, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])
        for t in ("a", "b")]), 7)
    assert [t.partitions[0].error_code for t in lo.topics] == [ErrorCode.NONE, ErrorCode.TOPIC_AUTHORIZATION_FAILED]


@pytest.mark.rule("ACL-5")
def test_topic_admin_needs_create_and_delete() -> None:
    core = secured("old")
    c = client(core)

    def create(name: str) -> int:
        return c.send(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=1, replication_factor=1)], timeout_ms=1000), 7).topics[0].error_code

    assert create("new.a") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    allow(core, R.TOPIC, "new.", Op.CREATE, pattern=PatternType.PREFIXED)
    assert create("new.a") == ErrorCode.NONE
    allow(core, R.CLUSTER, CLUSTER_NAME, Op.CREATE)
    assert create("elsewhere") == ErrorCode.NONE

    def delete(name: str) -> int:
        return c.send(DeleteTopicsRequest(topic_names=[name], timeout_ms=1000), 5).responses[0].error_code

    assert delete("old") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert delete("never-existed") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    allow(core, R.TOPIC, "old", Op.DELETE)  # DELETE implies the DESCRIBE it also needs
    assert delete("old") == ErrorCode.NONE


@pytest.mark.rule("ACL-6")
def test_group_apis_fail_whole_or_per_group_as_kafka_apis() -> None:
    core = secured("t")
    allow(core, R.GROUP, "mine", Op.READ)
    allow(core, R.TOPIC, "t", Op.DESCRIBE)
    c = client(core)
    join = c.send(JoinGroupRequest(group_id="theirs", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                   member_id="", protocol_type="consumer", protocols=[]), 9)
    assert join.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED

    def commit(group: str) -> int:
        resp = c.send(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 8)
        return resp.topics[0].partitions[0].error_code

    assert commit("theirs") == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert commit("mine") == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # the group may, the topic needs READ
    allow(core, R.TOPIC, "t", Op.READ)
    assert commit("mine") == ErrorCode.NONE
    fetched = c.send(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None)
                                                for g in ("mine", "theirs")]), 8)
    assert [(g.group_id, g.error_code) for g in fetched.groups] == [
        ("mine", ErrorCode.NONE), ("theirs", ErrorCode.GROUP_AUTHORIZATION_FAILED)]
    described = c.send(DescribeGroupsRequest(groups=["theirs", "mine"]), 5)
    assert [(g.group_id, g.error_code) for g in described.groups] == [
        ("theirs", ErrorCode.GROUP_AUTHORIZATION_FAILED), ("mine", ErrorCode.NONE)]
    allow(core, R.GROUP, "theirs", Op.READ, principal="User:bob")
    allow(core, R.TOPIC, "t", Op.READ, principal="User:bob")
    bob = client(core, "User:bob")
    bob.send(OffsetCommitRequest(group_id="theirs", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 8)
    assert sorted(g.group_id for g in c.send(ListGroupsRequest(), 4).groups) == ["mine"]
    allow(core, R.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)  # DESCRIBE on the cluster lists every group
    assert sorted(g.group_id for g in c.send(ListGroupsRequest(), 4).groups) == ["mine", "theirs"]
    coord = c.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["mine", "theirs"]), 4)
    assert [x.error_code for x in coord.coordinators] == [ErrorCode.NONE, ErrorCode.GROUP_AUTHORIZATION_FAILED]
    old = c.send(FindCoordinatorRequest(key="theirs", key_type=0), 3)
    assert old.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


@pytest.mark.rule("ACL-7")
def test_configs_need_describe_configs_and_alter_configs_on_their_resource() -> None:
    core = secured("t")
    c = client(core)
    req = DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="t", configuration_keys=None),
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="", configuration_keys=None)])
    codes = [r.error_code for r in c.send(req, 4).results]
    assert codes == [ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    allow(core, R.TOPIC, "t", Op.ALTER_CONFIGS)  # implies DESCRIBE_CONFIGS
    assert c.send(req, 4).results[0].error_code == ErrorCode.NONE


@pytest.mark.rule("ACL-8")
def test_authorized_operations_come_from_the_authorizer() -> None:
    core = secured("t")
    allow(core, R.TOPIC, "t", Op.READ)
    allow(core, R.GROUP, "g", Op.DESCRIBE)
    c = client(core)
    md = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")],
                                include_topic_authorized_operations=True, include_cluster_authorized_operations=True),
                9)
    assert md.topics[0].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert md.cluster_authorized_operations == 0  # no DESCRIBE on the cluster
    dc = c.send(DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
    assert dc.cluster_authorized_operations == 0
    allow(core, R.CLUSTER, CLUSTER_NAME, Op.DESCRIBE, Op.IDEMPOTENT_WRITE)
    dc = c.send(DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
    assert dc.cluster_authorized_operations == (1 << Op.DESCRIBE) | (1 << Op.IDEMPOTENT_WRITE)
    dg = c.send(DescribeGroupsRequest(groups=["g"], include_authorized_operations=True), 5)
    assert dg.groups[0].authorized_operations == 1 << Op.DESCRIBE


@pytest.mark.rule("ACL-10")
def test_transactional_and_idempotent_producers() -> None:
    core = secured("t")
    allow(core, R.TOPIC, "t", Op.WRITE)
    c = client(core)
    txn = c.send(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000), 4)
    assert txn.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert c.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4).error_code == 0
    assert produce(c, "t", transactional_id="tx") == {"t": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    nobody = client(core, "User:bob")  # no WRITE anywhere, no IDEMPOTENT_WRITE
    idem = nobody.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4)
    assert idem.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    allow(core, R.CLUSTER, CLUSTER_NAME, Op.IDEMPOTENT_WRITE, principal="User:bob")
    assert nobody.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4).error_code == 0
    marker = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=1, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
        topics=[WriteTxnMarkersRequest_WritableTxnMarkerTopic(name="t", partition_indexes=[0])])])
    denied = c.send(marker, 1)
    assert denied.markers[0].topics[0].partitions[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    allow(core, R.CLUSTER, CLUSTER_NAME, Op.ALTER)  # ALTER on the cluster also lets markers through
    assert client(core).send(marker, 1).markers[0].topics[0].partitions[0].error_code != \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    add = c.send(AddPartitionsToTxnRequest(transactions=[
        AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(transactional_id="tx", producer_id=1,
                                                                producer_epoch=0, verify_only=True, topics=[])]), 4)
    assert add.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.rule("ACL-9")
def test_share_groups_need_group_read_and_topic_read() -> None:
    core = secured("s")
    allow(core, R.GROUP, "sg", Op.READ)
    allow(core, R.TOPIC, "s", Op.DESCRIBE)
    m = ShareClient(core)
    m.c.conn.principal = ALICE
    theirs = ShareClient(core, group="other")
    theirs.c.conn.principal = ALICE
    assert theirs.heartbeat(["s"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert m.heartbeat(["s", "hidden"]).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    m.join(["s"])
    resp = m.fetch({"s": [0]})
    assert partition_data(resp).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # DESCRIBE is not READ
    allow(core, R.TOPIC, "s", Op.READ, Op.WRITE)
    m.fetch({"s": [0]})  # initialises the share partition (at the log end)
    assert produce(client(core), "s") == {"s": ErrorCode.NONE}
    resp = m.fetch({"s": [0]})
    assert partition_data(resp).error_code == ErrorCode.NONE and partition_data(resp).acquired_records
    assert theirs.fetch({"s": [0]}).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


@pytest.mark.rule("ACL-12")
def test_dlq_group_config_needs_alter_configs_on_the_group_only() -> None:
    """KIP-1191 at d79bd502: errors.deadletterqueue.topic.name is a group config (GroupConfig), so
    setting it is IncrementalAlterConfigs on the GROUP (ALTER_CONFIGS); upstream adds no check on
    the DLQ topic, and the broker's own DLQ write (ShareGroupDLQStateManager) is not authorized."""
    core = secured()
    c = client(core)

    def set_dlq() -> int:
        resp = c.send(IncrementalAlterConfigsRequest(resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=32, resource_name="sg", configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name="errors.deadletterqueue.topic.name",
                                                               config_operation=0, value="dlq.sg")])]), 1)
        return resp.responses[0].error_code

    assert set_dlq() == ErrorCode.GROUP_AUTHORIZATION_FAILED
    allow(core, R.GROUP, "sg", Op.ALTER_CONFIGS)
    assert set_dlq() == ErrorCode.NONE

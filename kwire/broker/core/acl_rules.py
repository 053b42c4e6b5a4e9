"""Which ACL each API needs, as data read from KafkaApis.scala (and AclApis, AuthHelper) at d79bd502.

Two tables:

* ``REQUEST_CHECKS``: the checks that fail a whole request before it is looked at (the group of a
  JoinGroup, the transactional id of an EndTxn, the cluster for WriteTxnMarkers...). The core
  applies them before the handler runs (``gate``); the answer is the handler's
  ``error_response`` with the error code, which puts it where Kafka's ``getErrorResponse`` does
  (top level, or on every partition for Produce/OffsetCommit/TxnOffsetCommit). Checks of one
  API run in order; the first one denied answers.
* ``RESOURCE_CHECKS``: the per-topic / per-group / per-resource checks inside a request; the
  handlers make them through ``kwire.broker.handlers._auth`` (each names its row here), and the
  docs and tests read this table.

Each row names the KafkaApis method it comes from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kwire.broker.core.acl import CLUSTER_NAME, AclOperation, Authorizer, ResourceType, host_of, principal_of
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.context import RequestView

__all__ = ["RequestCheck", "ResourceCheck", "REQUEST_CHECKS", "RESOURCE_CHECKS", "check_request", "gate"]

_R = ResourceType
_O = AclOperation
_E = ErrorCode
_ALL_VERSIONS = (0, 32767)


@dataclass(slots=True, frozen=True)
class RequestCheck:
    """A whole-request check: ``operation`` on the resource named by request field ``field``."""

    api_key: int
    source: str  # the KafkaApis (or AclApis) method
    resource: ResourceType
    operation: AclOperation
    error: int
    field: str = ""  # request attribute holding the name (or a list: each is checked); "" = the cluster
    versions: tuple[int, int] = _ALL_VERSIONS
    when: str = ""  # "set:<field>" (non-null, non-empty) / "unset:<field>" / "eq:<field>=<int>"
    # Also allowed by: another operation on the same resource (WriteTxnMarkers: ALTER or CLUSTER_ACTION) ...
    or_operation: AclOperation | None = None
    # ... or an operation on any resource of a type (InitProducerId: IDEMPOTENT_WRITE or WRITE on some topic).
    or_any_of_type: tuple[ResourceType, AclOperation] | None = None


@dataclass(slots=True, frozen=True)
class ResourceCheck:
    """A check made per resource inside a request, and the error the resource gets."""

    api_key: int
    source: str
    resource: ResourceType
    operation: AclOperation
    error: int
    note: str = ""


REQUEST_CHECKS: tuple[RequestCheck, ...] = (
    RequestCheck(ApiKey.PRODUCE, "handleProduceRequest", _R.TRANSACTIONAL_ID, _O.WRITE,
                 _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id", when="set:transactional_id"),
    RequestCheck(ApiKey.OFFSET_COMMIT, "handleOffsetCommitRequest", _R.GROUP, _O.READ, _E.GROUP_AUTHORIZATION_FAILED,
                 "group_id"),
    RequestCheck(ApiKey.JOIN_GROUP, "handleJoinGroupRequest", _R.GROUP, _O.READ, _E.GROUP_AUTHORIZATION_FAILED,
                 "group_id"),
    RequestCheck(ApiKey.HEARTBEAT, "handleHeartbeatRequest", _R.GROUP, _O.READ, _E.GROUP_AUTHORIZATION_FAILED,
                 "group_id"),
    RequestCheck(ApiKey.LEAVE_GROUP, "handleLeaveGroupRequest", _R.GROUP, _O.READ, _E.GROUP_AUTHORIZATION_FAILED,
                 "group_id"),
    RequestCheck(ApiKey.SYNC_GROUP, "handleSyncGroupRequest", _R.GROUP, _O.READ, _E.GROUP_AUTHORIZATION_FAILED,
                 "group_id"),
    RequestCheck(ApiKey.INIT_PRODUCER_ID, "handleInitProducerIdRequest", _R.TRANSACTIONAL_ID, _O.WRITE,
                 _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id", when="set:transactional_id"),
    RequestCheck(ApiKey.INIT_PRODUCER_ID, "handleInitProducerIdRequest (2PC)", _R.TRANSACTIONAL_ID,
                 _O.TWO_PHASE_COMMIT, _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id",
                 when="set:enable2_pc"),
    RequestCheck(ApiKey.INIT_PRODUCER_ID, "handleInitProducerIdRequest (idempotent)", _R.CLUSTER,
                 _O.IDEMPOTENT_WRITE, _E.CLUSTER_AUTHORIZATION_FAILED, when="unset:transactional_id",
                 or_any_of_type=(_R.TOPIC, _O.WRITE)),
    RequestCheck(ApiKey.ADD_PARTITIONS_TO_TXN, "handleAddPartitionsToTxnRequest (v4+: from brokers)", _R.CLUSTER,
                 _O.CLUSTER_ACTION, _E.CLUSTER_AUTHORIZATION_FAILED, versions=(4, 32767)),
    RequestCheck(ApiKey.ADD_PARTITIONS_TO_TXN, "handleAddPartitionsToTxnRequest (below v4: from clients)",
                 _R.TRANSACTIONAL_ID, _O.WRITE, _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                 "v3_and_below_transactional_id", versions=(0, 3)),
    RequestCheck(ApiKey.ADD_OFFSETS_TO_TXN, "handleAddOffsetsToTxnRequest", _R.TRANSACTIONAL_ID, _O.WRITE,
                 _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id"),
    RequestCheck(ApiKey.ADD_OFFSETS_TO_TXN, "handleAddOffsetsToTxnRequest", _R.GROUP, _O.READ,
                 _E.GROUP_AUTHORIZATION_FAILED, "group_id"),
    RequestCheck(ApiKey.END_TXN, "handleEndTxnRequest", _R.TRANSACTIONAL_ID, _O.WRITE,
                 _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id"),
    RequestCheck(ApiKey.WRITE_TXN_MARKERS, "handleWriteTxnMarkersRequest", _R.CLUSTER, _O.CLUSTER_ACTION,
                 _E.CLUSTER_AUTHORIZATION_FAILED, or_operation=_O.ALTER),
    RequestCheck(ApiKey.TXN_OFFSET_COMMIT, "handleTxnOffsetCommitRequest", _R.TRANSACTIONAL_ID, _O.WRITE,
                 _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id"),
    RequestCheck(ApiKey.TXN_OFFSET_COMMIT, "handleTxnOffsetCommitRequest", _R.GROUP, _O.READ,
                 _E.GROUP_AUTHORIZATION_FAILED, "group_id"),
    RequestCheck(ApiKey.DESCRIBE_ACLS, "AclApis.handleDescribeAcls", _R.CLUSTER, _O.DESCRIBE,
                 _E.CLUSTER_AUTHORIZATION_FAILED),
    RequestCheck(ApiKey.CREATE_ACLS, "AclApis.handleCreateAcls", _R.CLUSTER, _O.ALTER,
                 _E.CLUSTER_AUTHORIZATION_FAILED),
    RequestCheck(ApiKey.DELETE_ACLS, "AclApis.handleDeleteAcls", _R.CLUSTER, _O.ALTER,
                 _E.CLUSTER_AUTHORIZATION_FAILED),
    RequestCheck(ApiKey.OFFSET_DELETE, "handleOffsetDeleteRequest", _R.GROUP, _O.DELETE, _E.GROUP_AUTHORIZATION_FAILED,
                 "group_id"),
    RequestCheck(ApiKey.DESCRIBE_CLIENT_QUOTAS, "handleDescribeClientQuotasRequest", _R.CLUSTER, _O.DESCRIBE_CONFIGS,
                 _E.CLUSTER_AUTHORIZATION_FAILED),
    RequestCheck(ApiKey.ALTER_CLIENT_QUOTAS, "ControllerApis.handleAlterClientQuotas", _R.CLUSTER, _O.ALTER_CONFIGS,
                 _E.CLUSTER_AUTHORIZATION_FAILED),
    RequestCheck(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "handleDescribeUserScramCredentialsRequest", _R.CLUSTER,
                 _O.DESCRIBE, _E.CLUSTER_AUTHORIZATION_FAILED),
    RequestCheck(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "ControllerApis.handleAlterUserScramCredentials", _R.CLUSTER,
                 _O.ALTER, _E.CLUSTER_AUTHORIZATION_FAILED),
    RequestCheck(ApiKey.CONSUMER_GROUP_HEARTBEAT, "handleConsumerGroupHeartbeat", _R.GROUP, _O.READ,
                 _E.GROUP_AUTHORIZATION_FAILED, "group_id"),
    RequestCheck(ApiKey.CONSUMER_GROUP_HEARTBEAT, "handleConsumerGroupHeartbeat (subscribed topics)", _R.TOPIC,
                 _O.DESCRIBE, _E.TOPIC_AUTHORIZATION_FAILED, "subscribed_topic_names",
                 when="set:subscribed_topic_names"),
    RequestCheck(ApiKey.SHARE_GROUP_HEARTBEAT, "handleShareGroupHeartbeat", _R.GROUP, _O.READ,
                 _E.GROUP_AUTHORIZATION_FAILED, "group_id"),
    RequestCheck(ApiKey.SHARE_GROUP_HEARTBEAT, "handleShareGroupHeartbeat (subscribed topics)", _R.TOPIC,
                 _O.DESCRIBE, _E.TOPIC_AUTHORIZATION_FAILED, "subscribed_topic_names",
                 when="set:subscribed_topic_names"),
    RequestCheck(ApiKey.SHARE_FETCH, "handleShareFetchRequest", _R.GROUP, _O.READ, _E.GROUP_AUTHORIZATION_FAILED,
                 "group_id"),
    RequestCheck(ApiKey.SHARE_ACKNOWLEDGE, "handleShareAcknowledgeRequest", _R.GROUP, _O.READ,
                 _E.GROUP_AUTHORIZATION_FAILED, "group_id"),
    RequestCheck(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "handleAlterShareGroupOffsetsRequest", _R.GROUP, _O.READ,
                 _E.GROUP_AUTHORIZATION_FAILED, "group_id"),
    RequestCheck(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "handleDeleteShareGroupOffsetsRequest", _R.GROUP, _O.DELETE,
                 _E.GROUP_AUTHORIZATION_FAILED, "group_id"),
)

_TF = _E.TOPIC_AUTHORIZATION_FAILED
RESOURCE_CHECKS: tuple[ResourceCheck, ...] = (
    ResourceCheck(ApiKey.PRODUCE, "handleProduceRequest", _R.TOPIC, _O.WRITE, _TF, "each topic's partitions"),
    ResourceCheck(ApiKey.FETCH, "handleFetchRequest", _R.TOPIC, _O.READ, _TF, "each partition, session ones too"),
    ResourceCheck(ApiKey.LIST_OFFSETS, "handleListOffsetRequest", _R.TOPIC, _O.DESCRIBE, _TF, "each partition"),
    ResourceCheck(ApiKey.METADATA, "handleTopicMetadataRequest", _R.TOPIC, _O.DESCRIBE, _TF,
                  "named topics answer TOPIC_AUTHORIZATION_FAILED; listing all leaves them out"),
    ResourceCheck(ApiKey.METADATA, "handleTopicMetadataRequest (auto-creation)", _R.TOPIC, _O.CREATE, _TF,
                  "CREATE on the cluster, else on the topic"),
    ResourceCheck(ApiKey.OFFSET_COMMIT, "handleOffsetCommitRequest", _R.TOPIC, _O.READ, _TF, "each partition"),
    ResourceCheck(ApiKey.OFFSET_FETCH, "handleOffsetFetchRequest", _R.GROUP, _O.DESCRIBE,
                  _E.GROUP_AUTHORIZATION_FAILED, "each group (the group below v8)"),
    ResourceCheck(ApiKey.OFFSET_FETCH, "handleOffsetFetchRequest", _R.TOPIC, _O.DESCRIBE, _TF,
                  "named partitions answer the error; all-partitions leaves the topic out"),
    ResourceCheck(ApiKey.FIND_COORDINATOR, "getCoordinator", _R.GROUP, _O.DESCRIBE, _E.GROUP_AUTHORIZATION_FAILED,
                  "each key (v4+) or the key"),
    ResourceCheck(ApiKey.FIND_COORDINATOR, "getCoordinator", _R.TRANSACTIONAL_ID, _O.DESCRIBE,
                  _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "key type 1"),
    ResourceCheck(ApiKey.FIND_COORDINATOR, "getCoordinator", _R.CLUSTER, _O.CLUSTER_ACTION,
                  _E.CLUSTER_AUTHORIZATION_FAILED, "key type 2 (share): the whole request"),
    ResourceCheck(ApiKey.DESCRIBE_GROUPS, "handleDescribeGroupsRequest", _R.GROUP, _O.DESCRIBE,
                  _E.GROUP_AUTHORIZATION_FAILED, "each group"),
    ResourceCheck(ApiKey.LIST_GROUPS, "handleListGroupsRequest", _R.GROUP, _O.DESCRIBE, _E.NONE,
                  "DESCRIBE on the cluster, else only the groups it may describe"),
    ResourceCheck(ApiKey.CREATE_TOPICS, "ZkAdminManager/ControllerApis.createTopics", _R.TOPIC, _O.CREATE, _TF,
                  "CREATE on the cluster, else on each topic"),
    ResourceCheck(ApiKey.DELETE_TOPICS, "ControllerApis.deleteTopics", _R.TOPIC, _O.DELETE, _TF, "each topic"),
    ResourceCheck(ApiKey.DELETE_RECORDS, "handleDeleteRecordsRequest", _R.TOPIC, _O.DELETE, _TF, "each partition"),
    ResourceCheck(ApiKey.OFFSET_FOR_LEADER_EPOCH, "handleOffsetForLeaderEpochRequest", _R.TOPIC, _O.DESCRIBE, _TF,
                  "each partition (CLUSTER_ACTION: all)"),
    ResourceCheck(ApiKey.ADD_PARTITIONS_TO_TXN, "handleAddPartitionsToTxnRequest", _R.TOPIC, _O.WRITE, _TF,
                  "below v4: the others OPERATION_NOT_ATTEMPTED"),
    ResourceCheck(ApiKey.TXN_OFFSET_COMMIT, "handleTxnOffsetCommitRequest", _R.TOPIC, _O.READ, _TF, "each partition"),
    ResourceCheck(ApiKey.DESCRIBE_CONFIGS, "ConfigHelper.handleDescribeConfigsRequest", _R.TOPIC,
                  _O.DESCRIBE_CONFIGS, _TF, "BROKER resources: CLUSTER DESCRIBE_CONFIGS; GROUP: GROUP"),
    ResourceCheck(ApiKey.ALTER_CONFIGS, "handleAlterConfigsRequest", _R.TOPIC, _O.ALTER_CONFIGS, _TF,
                  "BROKER resources: CLUSTER ALTER_CONFIGS; GROUP: GROUP"),
    ResourceCheck(ApiKey.INCREMENTAL_ALTER_CONFIGS, "handleIncrementalAlterConfigsRequest", _R.TOPIC,
                  _O.ALTER_CONFIGS, _TF, "BROKER resources: CLUSTER ALTER_CONFIGS; GROUP: GROUP"),
    ResourceCheck(ApiKey.CREATE_PARTITIONS, "ControllerApis.createPartitions", _R.TOPIC, _O.ALTER, _TF, "each topic"),
    ResourceCheck(ApiKey.DELETE_GROUPS, "handleDeleteGroupsRequest", _R.GROUP, _O.DELETE,
                  _E.GROUP_AUTHORIZATION_FAILED, "each group"),
    ResourceCheck(ApiKey.OFFSET_DELETE, "handleOffsetDeleteRequest", _R.TOPIC, _O.READ, _TF, "each partition"),
    ResourceCheck(ApiKey.DESCRIBE_PRODUCERS, "handleDescribeProducersRequest", _R.TOPIC, _O.READ, _TF,
                  "each partition"),
    ResourceCheck(ApiKey.DESCRIBE_TRANSACTIONS, "handleDescribeTransactionsRequest", _R.TRANSACTIONAL_ID,
                  _O.DESCRIBE, _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "each id; topics it may not describe left out"),
    ResourceCheck(ApiKey.LIST_TRANSACTIONS, "handleListTransactionsRequest", _R.TRANSACTIONAL_ID, _O.DESCRIBE,
                  _E.NONE, "only the ids it may describe"),
    ResourceCheck(ApiKey.CONSUMER_GROUP_DESCRIBE, "handleConsumerGroupDescribe", _R.GROUP, _O.DESCRIBE,
                  _E.GROUP_AUTHORIZATION_FAILED, "each group; TOPIC_AUTHORIZATION_FAILED for undescribable topics"),
    ResourceCheck(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "DescribeTopicPartitionsRequestHandler", _R.TOPIC, _O.DESCRIBE,
                  _TF, "named topics answer the error; the cursor listing leaves them out"),
    ResourceCheck(ApiKey.SHARE_GROUP_DESCRIBE, "handleShareGroupDescribe", _R.GROUP, _O.DESCRIBE,
                  _E.GROUP_AUTHORIZATION_FAILED, "each group; TOPIC_AUTHORIZATION_FAILED for undescribable topics"),
    ResourceCheck(ApiKey.SHARE_FETCH, "handleShareFetchRequest", _R.TOPIC, _O.READ, _TF, "each partition"),
    ResourceCheck(ApiKey.SHARE_ACKNOWLEDGE, "handleShareAcknowledgeRequest", _R.TOPIC, _O.READ, _TF,
                  "each partition"),
    ResourceCheck(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "handleDescribeShareGroupOffsetsRequest", _R.GROUP,
                  _O.DESCRIBE, _E.GROUP_AUTHORIZATION_FAILED, "each group; topics need DESCRIBE"),
    ResourceCheck(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "handleAlterShareGroupOffsetsRequest", _R.TOPIC, _O.READ, _TF,
                  "each topic"),
    ResourceCheck(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "handleDeleteShareGroupOffsetsRequest", _R.TOPIC, _O.READ, _TF,
                  "each topic"),
)

_BY_API: dict[int, tuple[RequestCheck, ...]] = {}
for _c in REQUEST_CHECKS:
    _BY_API[_c.api_key] = (*_BY_API.get(_c.api_key, ()), _c)


def _applies(check: RequestCheck, version: int, body: Any) -> bool:
    lo, hi = check.versions
    if not lo <= version <= hi:
        return False
    if not check.when:
        return True
    kind, _, rest = check.when.partition(":")
    if kind == "eq":
        name, _, value = rest.partition("=")
        return bool(getattr(body, name, None) == int(value))
    present = bool(getattr(body, rest, None))
    return present if kind == "set" else not present


def gate(ctx: RequestView, body: Any, decide: Callable[[RequestCheck, str], bool]) -> KafkaError | None:
    """The first whole-request check of this API that ``decide`` denies, as the error to answer."""
    for check in _BY_API.get(ctx.api_key, ()):
        if not _applies(check, ctx.api_version, body):
            continue
        value = getattr(body, check.field, "") if check.field else CLUSTER_NAME
        names = [str(v) for v in value] if isinstance(value, list) else [str(value or "")]
        if not all(decide(check, name) for name in names):
            return KafkaError(check.error, None)
    return None


def check_request(acl: Authorizer, ctx: RequestView, body: Any) -> KafkaError | None:
    """The whole-request checks of ``REQUEST_CHECKS`` for this request: the error to answer, or None
    (nothing to check without an authorizer)."""
    if not acl.enabled:
        return None
    principal, host = principal_of(ctx.conn), host_of(ctx.conn)

    def decide(check: RequestCheck, name: str) -> bool:
        if acl.authorize(principal, host, check.operation, check.resource, name):
            return True
        if check.or_operation is not None and acl.authorize(principal, host, check.or_operation,
                                                            check.resource, name):
            return True
        if check.or_any_of_type is not None:
            rtype, op = check.or_any_of_type
            return acl.authorize_by_resource_type(principal, host, op, rtype)
        return False

    return gate(ctx, body, decide)

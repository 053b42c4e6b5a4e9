"""TxnOffsetCommit — key 28, v0–5 (KIP-98, KIP-447 member fields in v3, KIP-890 TV2 in v5).

Behaviour: sent to the group's coordinator (not it → NOT_COORDINATOR on every partition). An
unknown topic or partition → UNKNOWN_TOPIC_OR_PARTITION for it. The rest share one verdict, in
Kafka's order: the transaction first (TX-23, TX-13: the group's offsets partition must be in
the transaction before v5 → INVALID_TXN_STATE (v0–3) or TRANSACTION_ABORTABLE (v4); v5 under
TV2 adds it; INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH for a fenced producer,
CONCURRENT_TRANSACTIONS), then the group (v3+ member id and generation: UNKNOWN_MEMBER_ID,
ILLEGAL_GENERATION, FENCED_INSTANCE_ID), then metadata over 4096 bytes →
OFFSET_METADATA_TOO_LARGE. Accepted offsets are staged and become visible when the
transaction's markers are written (after EndTxn's answer, TX-15); OffsetFetch with
RequireStable answers UNSTABLE_OFFSET_COMMIT meanwhile.
Version notes: v2+ CommittedLeaderEpoch; v3+ GenerationId, MemberId, GroupInstanceId.
Deviations: v6 (topic ids) is not served.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core._group_common import GroupError
from kwire.broker.core.offsets import DEFAULT_OFFSET_METADATA_MAX_BYTES, CommittedOffset
from kwire.broker.core.txn_coordinator import txn_coordinator
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._groups import coordinator, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.TXN_OFFSET_COMMIT
VERSIONS = (0, 5)

R = TxnOffsetCommitResponse


def _verdict(ctx: RequestContext, req: TxnOffsetCommitRequest) -> int:
    """The error shared by every known partition (0 = stage them)."""
    if not is_coordinator(ctx, req.group_id):
        return ErrorCode.NOT_COORDINATOR
    txn = txn_coordinator(ctx.core)
    if txn is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    v = ctx.api_version
    try:
        txn.verify_txn_offset_commit(req.transactional_id, req.producer_id, req.producer_epoch, req.group_id, v)
    except KafkaError as exc:
        return exc.code
    if v >= 3:
        try:
            coordinator(ctx).validate_offset_commit(req.group_id, req.member_id, req.group_instance_id,
                                                    req.generation_id_or_member_epoch, v, transactional=True)
        except GroupError as exc:
            return exc.code
    return ErrorCode.NONE


def handle(ctx: RequestContext, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    v = ctx.api_version
    topics = ctx.core.cluster.topics
    verdict = _verdict(ctx, req)
    staged: dict[tuple[str, int], CommittedOffset] = {}
    out = []
    for t in req.topics:
        rows = []
        for p in t.partitions:
            code = verdict
            topic = topics.get(t.name)
            if topic_denied(ctx, AclOperation.READ, t.name):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not code and p.committed_metadata is not None \
                    and len(p.committed_metadata.encode()) > DEFAULT_OFFSET_METADATA_MAX_BYTES:
                code = ErrorCode.OFFSET_METADATA_TOO_LARGE
            elif not code:
                staged[(t.name, p.partition_index)] = CommittedOffset(
                    p.committed_offset, p.committed_leader_epoch if v >= 2 else -1, p.committed_metadata or "",
                    ctx.now_ms)
            rows.append(R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code))
        out.append(R.TxnOffsetCommitResponseTopic(name=t.name, partitions=rows))
    txn = txn_coordinator(ctx.core)
    if staged and txn is not None:
        txn.stage_txn_offsets(req.transactional_id, req.producer_id, req.group_id, staged)
    return R(topics=out)


def error_response(ctx: RequestContext, req: TxnOffsetCommitRequest, code: int) -> TxnOffsetCommitResponse:
    return R(topics=[R.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
        R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
        for p in t.partitions]) for t in req.topics])

"""AddPartitionsToTxn — key 24, v0–5 (KIP-98; KIP-890: v4+ broker form, v5 TV2).

Behaviour: v0–3 (client form) carry one transaction; v4+ (what a partition leader sends to
verify or add, TX-12) carry several, each answered on its own. Per transaction: not its
coordinator → NOT_COORDINATOR on every partition; an unknown topic or partition →
UNKNOWN_TOPIC_OR_PARTITION for it and OPERATION_NOT_ATTEMPTED for the rest (TX-11); then
the coordinator's one verdict for all of them (TX-11: CONCURRENT_TRANSACTIONS first while the
last EndTxn's markers are still being written (TX-15), then INVALID_PRODUCER_ID_MAPPING,
PRODUCER_FENCED, CONCURRENT_TRANSACTIONS in Prepare*; success → Ongoing). VerifyOnly (v4+) only checks
membership: TRANSACTION_ABORTABLE for a partition not in the transaction (TX-12).
Version notes: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2; v4+ come from TV2 clients'
leaders (the transaction is recorded as TV2).
Deviations: v4+ needs no CLUSTER_ACTION permission (kwire has no authorizer; neither does a
Kafka broker without one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._txn import coordinator_or_error
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequest_AddPartitionsToTxnTopic,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponse_AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResult,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
VERSIONS = (0, 5)

R = AddPartitionsToTxnResponse
TopicPartition = tuple[str, int]


def _requested(topics: Sequence[AddPartitionsToTxnRequest_AddPartitionsToTxnTopic]) -> list[TopicPartition]:
    return [(t.name, p) for t in topics for p in t.partitions]


def _one(ctx: RequestContext, tid: str, producer_id: int, producer_epoch: int, tps: list[TopicPartition],
         verify_only: bool) -> dict[TopicPartition, int]:
    txn = coordinator_or_error(ctx, tid)
    if isinstance(txn, int):
        return {tp: txn for tp in tps}
    topics = ctx.core.cluster.topics
    denied = {tp for tp in tps if ctx.api_version < 4 and topic_denied(ctx, AclOperation.WRITE, tp[0])}
    unknown = {tp for tp in tps if tp[0] not in topics or not 0 <= tp[1] < len(topics[tp[0]].partitions)} - denied
    if unknown or denied:  # TX-11 (ACL-5: a topic it may not write comes first)
        return {tp: (ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp in denied else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                     if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in tps}
    if verify_only:
        return txn.verify_partitions(tid, producer_id, producer_epoch, tps)
    try:
        txn.add_partitions(tid, producer_id, producer_epoch, tps, api_version=ctx.api_version)
    except KafkaError as exc:
        return {tp: exc.code for tp in tps}
    return {tp: ErrorCode.NONE for tp in tps}


def _topic_results(codes: dict[TopicPartition, int]) -> list[AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnResponse_AddPartitionsToTxnPartitionResult]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(
            R.AddPartitionsToTxnPartitionResult(partition_index=partition, partition_error_code=code))
    return [R.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


def handle(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    if ctx.api_version < 4:
        codes = _one(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                     req.v3_and_below_producer_epoch, _requested(req.v3_and_below_topics), False)
        return R(results_by_topic_v3_and_below=_topic_results(codes))
    results = []
    for t in req.transactions:
        codes = _one(ctx, t.transactional_id, t.producer_id, t.producer_epoch, _requested(t.topics), t.verify_only)
        results.append(R.AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                                  topic_results=_topic_results(codes)))
    return R(results_by_transaction=results)


def error_response(ctx: RequestContext, req: AddPartitionsToTxnRequest, code: int) -> AddPartitionsToTxnResponse:
    if ctx.api_version < 4:
        return R(results_by_topic_v3_and_below=_topic_results(
            {tp: code for tp in _requested(req.v3_and_below_topics)}))
    return R(error_code=code, results_by_transaction=[])

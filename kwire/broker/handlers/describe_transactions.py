"""DescribeTransactions — key 65, v0 (KIP-664).

Behaviour, per transactional id: not its coordinator → NOT_COORDINATOR; unknown (or expired)
→ TRANSACTIONAL_ID_NOT_FOUND; otherwise state name (Empty, Ongoing, PrepareCommit, …),
timeout, start time (-1 when none is open), producer id and epoch, and the partitions by topic
(the group's ``__consumer_offsets`` partition included when offsets were added).
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import AclOperation, ResourceType, allowed, topic_denied
from kwire.broker.handlers._txn import coordinator_or_error
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeTransactionsResponse_TopicData,
    DescribeTransactionsResponse_TransactionState,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS
VERSIONS = (0, 0)

_State = DescribeTransactionsResponse_TransactionState
_Topic = DescribeTransactionsResponse_TopicData


def _failed(tid: str, code: int) -> _State:
    return _State(error_code=code, transactional_id=tid, transaction_state="", transaction_timeout_ms=0,
                  transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1, topics=[])


def handle(ctx: RequestContext, req: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    out = []
    for tid in req.transactional_ids:
        if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            out.append(_failed(tid, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        txn = coordinator_or_error(ctx, tid)
        if isinstance(txn, int):
            out.append(_failed(tid, txn))
            continue
        try:
            d = txn.describe_transaction(tid)
        except KafkaError as exc:
            out.append(_failed(tid, exc.code))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in d.partitions:
            if topic_denied(ctx, AclOperation.DESCRIBE, topic):
                continue  # only the partitions it may describe
            by_topic.setdefault(topic, []).append(partition)
        out.append(_State(transactional_id=tid, transaction_state=d.state, transaction_timeout_ms=d.timeout_ms,
                          transaction_start_time_ms=d.start_ms, producer_id=d.producer_id,
                          producer_epoch=d.producer_epoch,
                          topics=[_Topic(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return DescribeTransactionsResponse(transaction_states=out)


def error_response(ctx: RequestContext, req: DescribeTransactionsRequest, code: int) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(transaction_states=[_failed(t, code) for t in req.transactional_ids])

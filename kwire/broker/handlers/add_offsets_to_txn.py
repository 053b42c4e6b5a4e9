"""AddOffsetsToTxn — key 25, v0–4 (KIP-98; TV1 flow, TX-23).

Behaviour: not the transactional id's coordinator → NOT_COORDINATOR; the group's
``__consumer_offsets`` partition joins the transaction with the rules of AddPartitionsToTxn
(TX-11: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS).
Version notes: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2.
Deviations: kwire has no ``__consumer_offsets`` log; the partition is listed in the transaction
and the staged offsets settle through the offset store when the markers are written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._txn import coordinator_or_error
from kwire.errors import KafkaError
from kwire.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
VERSIONS = (0, 4)


def handle(ctx: RequestContext, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    txn = coordinator_or_error(ctx, req.transactional_id)
    if isinstance(txn, int):
        return AddOffsetsToTxnResponse(error_code=txn)
    try:
        txn.add_offsets(req.transactional_id, req.producer_id, req.producer_epoch, req.group_id, ctx.api_version)
    except KafkaError as exc:
        return AddOffsetsToTxnResponse(error_code=exc.code)
    return AddOffsetsToTxnResponse()


def error_response(ctx: RequestContext, req: AddOffsetsToTxnRequest, code: int) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(error_code=code)

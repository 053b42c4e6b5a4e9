"""InitProducerId — key 22, v0–5 (v6 is unstable upstream and not advertised, TX-5).

Behaviour: a null transactional id gets a fresh producer id with epoch 0 (TX-1); an empty one
is INVALID_REQUEST. v3+: an idempotent producer passing its id and epoch gets the epoch
bumped (KIP-360; a new id once the epoch is exhausted); exactly one of them -1 →
INVALID_REQUEST (TX-4). Transactional ids go to the transaction coordinator when one is
installed (TX-2..TX-4: INVALID_TRANSACTION_TIMEOUT, then NOT_COORDINATOR on the wrong broker,
CONCURRENT_TRANSACTIONS while an EndTxn's or a fence's markers are out (TX-15, TX-3),
PRODUCER_FENCED / INVALID_PRODUCER_EPOCH below v4); without it they
are refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.txn_coordinator import txn_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.INIT_PRODUCER_ID
VERSIONS = (0, 5)

MAX_EPOCH = 32766  # epochs at or above this are exhausted (TX-2)


def handle(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse | None:
    core = ctx.core
    if (req.producer_id == -1) != (req.producer_epoch == -1):
        return InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
    if req.transactional_id is not None:
        if req.transactional_id == "":
            return InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
        txn = txn_coordinator(core)
        if txn is None:
            return InitProducerIdResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                          producer_id=-1, producer_epoch=-1)
        max_timeout = txn.settings().transaction_max_timeout_ms
        if 0 < req.transaction_timeout_ms <= max_timeout and not core.is_coordinator(ctx.broker_id,
                                                                                       req.transactional_id):
            return error_response(ctx, req, ErrorCode.NOT_COORDINATOR)
        try:
            got = txn.init_producer_id(req.transactional_id, req.transaction_timeout_ms, ctx.api_version,
                                       req.producer_id, req.producer_epoch)
        except KafkaError as exc:
            return error_response(ctx, req, exc.code)
        return InitProducerIdResponse(producer_id=got.producer_id, producer_epoch=got.producer_epoch)
    ids = core.subsystems.producer_ids
    if req.producer_id >= 0 and req.producer_epoch < MAX_EPOCH:
        return InitProducerIdResponse(producer_id=req.producer_id, producer_epoch=req.producer_epoch + 1)
    return InitProducerIdResponse(producer_id=ids.allocate(), producer_epoch=0)


def error_response(ctx: RequestContext, req: InitProducerIdRequest, code: int) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)

"""EndTxn — key 26, v0–5 (KIP-98, KIP-890 TV2 in v5).

Behaviour: not the transactional id's coordinator → NOT_COORDINATOR; then the coordinator's
TV1 rules (TX-15: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS while
markers are written, INVALID_TXN_STATE for the opposite result or no transaction, a retry of
the same result succeeds) or, v5 (a TV2 client, whatever the finalized level), TV2 (TX-16: every end bumps
the epoch and the response carries the new producer id and epoch; CONCURRENT_TRANSACTIONS is
checked first). The answer goes out with PrepareCommit/PrepareAbort recorded; the markers are
written after it, on the next broker tick (``kwire.transaction.marker.delay.ms``,
``Broker.hold_txn_markers``), then the state is Complete* (TX-15).
Version notes: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2; v5 adds ProducerId and
ProducerEpoch to the response (-1 on error).
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._txn import coordinator_or_error
from kwire.errors import KafkaError
from kwire.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.END_TXN
VERSIONS = (0, 5)


def handle(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    txn = coordinator_or_error(ctx, req.transactional_id)
    if isinstance(txn, int):
        return error_response(ctx, req, txn)
    try:
        got = txn.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed, ctx.api_version)
    except KafkaError as exc:
        return error_response(ctx, req, exc.code)
    if ctx.api_version >= 5:
        return EndTxnResponse(producer_id=got.producer_id, producer_epoch=got.producer_epoch)
    return EndTxnResponse()


def error_response(ctx: RequestContext, req: EndTxnRequest, code: int) -> EndTxnResponse:
    if ctx.api_version >= 5:
        return EndTxnResponse(error_code=code, producer_id=-1, producer_epoch=-1)
    return EndTxnResponse(error_code=code)

"""ListTransactions — key 66, v0–2 (KIP-664, KIP-994 duration filter, KIP-1152 id pattern).

Behaviour: every transaction this broker coordinates (Dead ones excepted) that passes the
filters: StateFilters (state names; names that are no state are returned in
UnknownStateFilters), ProducerIdFilters, v1+ DurationFilter (running longer than that many ms;
-1 none), v2+ TransactionalIdPattern (a regular expression the whole id must match; an invalid
one → INVALID_REGULAR_EXPRESSION). No coordinator installed → COORDINATOR_NOT_AVAILABLE.
Deviations: the pattern is a Python regular expression (Java's syntax differs in corners).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kwire.broker.core.txn_coordinator import txn_coordinator
from kwire.broker.handlers._auth import AclOperation, ResourceType, allowed
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.list_transactions import ListTransactionsRequest, ListTransactionsResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from collections.abc import Callable

    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.LIST_TRANSACTIONS
VERSIONS = (0, 2)


def handle(ctx: RequestContext, req: ListTransactionsRequest) -> ListTransactionsResponse:
    txn = txn_coordinator(ctx.core)
    if txn is None:
        return error_response(ctx, req, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    matches: Callable[[str], bool] | None = None
    if ctx.api_version >= 2 and req.transactional_id_pattern:
        try:
            pattern = re.compile(req.transactional_id_pattern)
        except re.error:
            return error_response(ctx, req, ErrorCode.INVALID_REGULAR_EXPRESSION)
        matches = lambda tid: pattern.fullmatch(tid) is not None  # noqa: E731
    duration = req.duration_filter if ctx.api_version >= 1 else -1
    listed, unknown = txn.list_transactions(req.state_filters, req.producer_id_filters, duration, matches)
    # only the ids this broker coordinates (each broker answers for its own share)
    states = [ListTransactionsResponse.TransactionState(transactional_id=t.transactional_id,
                                                         producer_id=t.producer_id, transaction_state=t.state)
              for t in listed if ctx.core.is_coordinator(ctx.broker_id, t.transactional_id)
              and allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactional_id)]
    return ListTransactionsResponse(unknown_state_filters=unknown, transaction_states=states)


def error_response(ctx: RequestContext, req: ListTransactionsRequest, code: int) -> ListTransactionsResponse:
    return ListTransactionsResponse(error_code=code, unknown_state_filters=[], transaction_states=[])

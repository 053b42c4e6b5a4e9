"""Helpers shared by the transaction handlers: the coordinator, and the coordinator pre-check."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.txn_coordinator import TransactionCoordinator, txn_coordinator
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

__all__ = ["coordinator_or_error"]


def coordinator_or_error(ctx: RequestContext, transactional_id: str | None) -> TransactionCoordinator | int:
    """The transaction coordinator serving ``transactional_id`` on this broker, or the error to answer.

    No coordinator installed → COORDINATOR_NOT_AVAILABLE; the id hashes onto another broker →
    NOT_COORDINATOR (FindCoordinator with key type TRANSACTION names the right one). An empty
    or null id passes: the coordinator itself answers INVALID_REQUEST for it.
    """
    txn = txn_coordinator(ctx.core)
    if txn is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if transactional_id and not ctx.core.is_coordinator(ctx.broker_id, transactional_id):
        return ErrorCode.NOT_COORDINATOR
    return txn

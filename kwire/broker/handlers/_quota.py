"""The handlers' side of client quotas: the controller-mutation quota of a request."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext
    from kwire.broker.core.quotas import MutationQuota

__all__ = ["mutation_quota"]


def mutation_quota(ctx: RequestContext, strict_from: int) -> MutationQuota:
    """ControllerMutationQuotaManager.newQuotaFor(session, header, strictSinceVersion)."""
    quotas = ctx.core.subsystems.quotas
    assert quotas is not None  # always installed
    return quotas.mutation_quota(ctx, strict_from)

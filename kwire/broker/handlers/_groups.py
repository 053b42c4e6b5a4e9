"""Helpers shared by the group handlers: answers that may come now or later, client hosts,
and the coordinator pre-check."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from kwire.broker.core.group_table import GroupTable, group_table
from kwire.broker.handlers._common import GROUP_OPERATIONS
from kwire.protocol._message import Struct

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import Reply, RequestContext

__all__ = ["Waiter", "client_host", "coordinator", "is_coordinator", "fit", "fitted", "ALL_GROUP_OPERATIONS"]

R = TypeVar("R")
S = TypeVar("S", bound=Struct)
F = TypeVar("F", bound=Callable[..., Any])

# AclOperation bits a describing client may perform on a group (AclEntry.supportedOperations).
ALL_GROUP_OPERATIONS = GROUP_OPERATIONS


def fit(msg: S, version: int) -> S:
    """Make an answer encodable at ``version`` (in place): fields the version lacks go back to
    their defaults, and a null where the version allows none becomes the default. The group
    answers are built once for all versions; the codec refuses what a version cannot carry."""
    for f in type(msg)._fields:
        value = getattr(msg, f.attr)
        if not f.present_in(version):
            if value is not None and value != f.make_default():
                setattr(msg, f.attr, f.make_default())
            continue
        if value is None:
            if not f.nullable_in(version) and f.default is not None:
                setattr(msg, f.attr, f.make_default())
            continue
        if f.kind == "struct":
            for item in value if f.is_array else (value,):
                fit(item, version)
    return msg


def fitted(fn: F) -> F:
    """Decorate ``handle``/``error_response``: the answer goes through ``fit`` for the request's version."""

    @functools.wraps(fn)
    def wrapper(ctx: RequestContext, *args: Any) -> Any:
        resp = fn(ctx, *args)
        return None if resp is None else fit(resp, ctx.api_version)

    return cast(F, wrapper)


class Waiter(Generic[R]):
    """Delivers a coordinator result as the handler's return value when it comes at once, or
    later through a deferred ``Reply`` (JoinGroup and SyncGroup wait for the rebalance)."""

    __slots__ = ("_ctx", "_build", "_now", "_reply")

    def __init__(self, ctx: RequestContext, build: Callable[[R], Any]) -> None:
        self._ctx = ctx
        self._build = build
        self._now: tuple[R] | None = None
        self._reply: Reply | None = None

    def __call__(self, result: R) -> None:
        if self._reply is not None:
            self._reply.send(fit(self._build(result), self._ctx.api_version))
        elif self._now is None:
            self._now = (result,)

    def outcome(self) -> Any:
        """The response now, or None after deferring the request."""
        if self._now is not None:
            return self._build(self._now[0])
        self._reply = self._ctx.defer()
        return None


def client_host(ctx: RequestContext) -> str:
    """The client address as upstream prints it (``InetAddress.toString``: "/127.0.0.1")."""
    peer = ctx.conn.peer or ""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return f"/{host.strip('[]')}" if host else ""


def coordinator(ctx: RequestContext) -> GroupTable:
    return group_table(ctx.core)


def is_coordinator(ctx: RequestContext, group_id: str | None) -> bool:
    return ctx.core.is_coordinator(ctx.broker_id, group_id or "")

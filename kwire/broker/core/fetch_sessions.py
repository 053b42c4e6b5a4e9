"""Incremental fetch sessions (KIP-227), as the Java client drives them.

* session 0, epoch -1: a sessionless full fetch.            * session 0, epoch 0: open a session (full).
* session S, epoch N>0: incremental; N must be the next epoch; the request lists only what
  changed (added/updated partitions, plus forgotten ones) and the response lists only
  partitions with news (records, a changed high watermark/LSO/log start, or an error).
* session S, epoch 0: close S and open a new one.           * session S, epoch -1: close S, sessionless fetch.
Errors (raised as ``KafkaError``): unknown session → FETCH_SESSION_ID_NOT_FOUND(70), wrong epoch → INVALID_FETCH_SESSION_EPOCH(71).

Each broker has its own cache in Kafka (``FetchSessionCache`` per broker, with
``max.incremental.fetch.session.cache.slots`` slots each). One core serves every broker here, so a
session belongs to the broker it was opened on: another broker does not know its id, and each
broker's slots are counted and evicted apart.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from kwire.broker.core.context import Subsystem
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

__all__ = ["FetchSessionCache", "FetchSession", "SessionTarget", "SessionContext", "INITIAL_EPOCH", "FINAL_EPOCH", "MAX_SESSIONS"]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_SESSIONS = 1000  # max.incremental.fetch.session.cache.slots

Key = tuple[str, int]  # (topic name, or "id:<uuid>" when the id is unknown; partition)


@dataclass(slots=True)
class SessionTarget:
    """What the client asked for one partition, and what it was last told."""

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    topic_id: Any = None
    sent_hw: int | None = None
    sent_lso: int | None = None
    sent_log_start: int | None = None


@dataclass(slots=True)
class FetchSession:
    session_id: int
    next_epoch: int
    conn_id: int
    broker_id: int = 0
    targets: OrderedDict[Key, SessionTarget] = field(default_factory=OrderedDict)


@dataclass(slots=True)
class SessionContext:
    """One fetch's view of its session: which partitions to read, and whether to send all."""

    session: FetchSession | None  # None: sessionless
    targets: OrderedDict[Key, SessionTarget]
    full: bool  # full response (every partition) vs incremental (only changes)
    response_session_id: int


def _next(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


class FetchSessionCache(Subsystem):
    __slots__ = ("sessions", "_ids", "max_sessions")

    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self.sessions: dict[int, FetchSession] = {}
        self._ids = itertools.count(1)
        self.max_sessions = max_sessions  # per broker

    def _get(self, session_id: int, broker_id: int) -> FetchSession | None:
        """The session with this id on this broker (another broker's is unknown here)."""
        s = self.sessions.get(session_id)
        return s if s is not None and s.broker_id == broker_id else None

    def begin(self, session_id: int, epoch: int, conn_id: int, updates: list[tuple[Key, SessionTarget]],
              forgotten: list[Key], *, broker_id: int = 0) -> SessionContext:
        """Resolve the session a request names and apply its partition changes."""
        if session_id == 0:
            targets = OrderedDict(updates)
            if epoch == INITIAL_EPOCH:
                s = self._new(conn_id, targets, broker_id)
                return SessionContext(s, targets, True, s.session_id if s else 0)
            return SessionContext(None, targets, True, 0)
        s = self._get(session_id, broker_id)
        if epoch == FINAL_EPOCH:
            if s is not None:
                del self.sessions[session_id]
            return SessionContext(None, OrderedDict(updates), True, 0)
        if epoch == INITIAL_EPOCH:
            if s is not None:
                del self.sessions[session_id]
            targets = OrderedDict(updates)
            s = self._new(conn_id, targets, broker_id)
            return SessionContext(s, targets, True, s.session_id if s else 0)
        if s is None:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != s.next_epoch:
            raise KafkaError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        for key in forgotten:
            s.targets.pop(key, None)
        for key, t in updates:
            old = s.targets.get(key)
            if old is not None:
                t.sent_hw, t.sent_lso, t.sent_log_start = old.sent_hw, old.sent_lso, old.sent_log_start
            s.targets[key] = t
        return SessionContext(s, s.targets, False, s.session_id)

    def finish(self, ctx: SessionContext) -> None:
        if ctx.session is not None:
            ctx.session.next_epoch = _next(ctx.session.next_epoch if not ctx.full else INITIAL_EPOCH)

    def _new(self, conn_id: int, targets: OrderedDict[Key, SessionTarget], broker_id: int) -> FetchSession | None:
        mine = [sid for sid, s in self.sessions.items() if s.broker_id == broker_id]
        if len(mine) >= self.max_sessions:
            # Evict this broker's oldest session, as the cache does for sessions of lower priority.
            del self.sessions[mine[0]]
        sid = next(self._ids)
        s = FetchSession(sid, 1, conn_id, broker_id, targets)
        self.sessions[sid] = s
        return s

    def on_disconnect(self, conn_id: int) -> None:
        # Sessions outlive connections in Kafka (a client may reconnect); they are only evicted.
        return None

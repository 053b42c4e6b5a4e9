"""Share sessions (KIP-932), beside the fetch sessions: which partitions a share consumer fetches
from one broker, keyed by (broker id, group id, member id), and the epoch sequence ShareFetch and
ShareAcknowledge share.

Rules: SS-1..SS-5, SS-8, SS-9. Theory of operation:

* Every broker has its own sessions (SS-1): one core serves several brokers, so the broker id is
  part of the key, and ``group.share.max.share.sessions`` counts each broker's sessions apart. A
  consumer fetching from three brokers holds three sessions with three epoch sequences.
* ShareFetch epoch 0 opens a session (an existing one with the same key is dropped first, its
  records stay acquired until their locks expire, SS-2) holding exactly the request's
  partitions; the next expected epoch is 1.
* Other epochs must match the expected one; the request's partitions are added, its forgotten
  ones removed, and the epoch advances (wrapping from 2147483647 to 1, SS-3).
* Epoch -1 is the final request: the handler processes its acknowledgements, then calls
  ``finish``, which removes the session and releases the member's acquired records in its
  partitions (SS-4, SS-5).
* A session does not depend on group membership (SS-9): nothing here asks the group. It ends at
  epoch -1, when it is replaced, or when the connection that opened it drops (SS-8). As in
  upstream's ``connectionIdToSessionMap`` a connection remembers only its **latest** session, and
  removing a session marks its connection's entry stale, so a disconnect releases at most one.
* Sessions that no disconnect will ever end (not their connection's latest) of members their group
  does not know are the only ones kwire evicts, and only when a broker's cache is full: upstream
  never evicts, so one connection opening sessions for made-up member ids would hold every slot
  until a restart and lock real consumers out (SHARE_SESSION_LIMIT_REACHED).
* Releasing is not this module's business: ``release(session)`` is injected (the share
  partitions do it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

__all__ = ["ShareSession", "ShareSessionCache", "ShareSessionContext", "ContextKind", "ShareSessionStats",
           "SessionKey", "INITIAL_EPOCH", "FINAL_EPOCH", "next_epoch"]

INITIAL_EPOCH = 0  # SS-2
FINAL_EPOCH = -1  # SS-4
_MAX_EPOCH = 2_147_483_647  # SS-3: then it wraps to 1

P = TypeVar("P", bound=Hashable)  # a partition key, e.g. (topic id, partition)
SessionKey = tuple[int, str, str]  # (broker id, group id, member id), SS-1


def next_epoch(epoch: int) -> int:
    """SS-3: ShareRequestMetadata.nextEpoch."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


class ContextKind(Enum):
    NEW = "new"  # epoch 0: a fresh session
    UPDATE = "update"  # a session in progress
    FINAL = "final"  # epoch -1: acknowledge, then close


@dataclass(slots=True)
class ShareSession(Generic[P]):
    broker_id: int
    group_id: str
    member_id: str
    conn_id: Hashable
    epoch: int  # the next expected epoch
    partitions: set[P] = field(default_factory=set)
    created_ms: int = 0
    last_used_ms: int = 0

    @property
    def key(self) -> SessionKey:
        return (self.broker_id, self.group_id, self.member_id)


@dataclass(slots=True, frozen=True)
class ShareSessionContext(Generic[P]):
    """What a ShareFetch/ShareAcknowledge request made of its session."""

    kind: ContextKind
    session: ShareSession[P]
    added: frozenset[P] = frozenset()
    removed: frozenset[P] = frozenset()


@dataclass(slots=True, frozen=True)
class ShareSessionStats:
    sessions: int
    max_sessions: int  # per broker
    keys: tuple[tuple[int, str, str, int, int], ...]  # (broker, group, member, next epoch, partition count)


@dataclass(slots=True)
class _ConnEntry:
    """A connection's latest session (upstream's ``SessionKeyAndState``)."""

    key: SessionKey
    stale: bool = False


class ShareSessionCache(Generic[P]):
    """The share sessions of every broker of the core (SS-1), each broker's counted apart."""

    def __init__(self, *, max_sessions: Callable[[], int], now_ms: Callable[[], int],
                 release: Callable[[ShareSession[P]], None],
                 is_member: Callable[[str, str], bool] = lambda _g, _m: True) -> None:
        self._sessions: dict[SessionKey, ShareSession[P]] = {}
        self._per_broker: dict[int, int] = {}
        self._by_conn: dict[Hashable, _ConnEntry] = {}
        self._max_sessions = max_sessions
        self._now_ms = now_ms
        self._release = release
        self._is_member = is_member

    def get(self, group_id: str, member_id: str, broker_id: int | None = None) -> ShareSession[P] | None:
        """The member's session on ``broker_id`` (None: on any broker, for single-broker callers)."""
        if broker_id is not None:
            return self._sessions.get((broker_id, group_id, member_id))
        return next((s for s in self._sessions.values() if s.group_id == group_id and s.member_id == member_id),
                    None)

    def __len__(self) -> int:
        return len(self._sessions)

    def count(self, broker_id: int) -> int:
        return self._per_broker.get(broker_id, 0)

    # --- requests -----------------------------------------------------------------------------
    def fetch_context(self, group_id: str, member_id: str, epoch: int, conn_id: Hashable, *, broker_id: int,
                      partitions: Iterable[P] = (), forgotten: Iterable[P] = (),
                      has_acknowledgements: bool = False,
                      check: Callable[[set[P]], None] | None = None) -> ShareSessionContext[P]:
        """The session a ShareFetch works in (SS-2, SS-3, SS-4). ``check`` sees the partitions the
        session would hold once the request is applied, after the session checks and before
        anything changes; what it raises is the request's answer.

        Raises:
            KafkaError: INVALID_REQUEST (acknowledgements on an opening request),
                SHARE_SESSION_LIMIT_REACHED (the handler answers it after MaxWaitMs),
                SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, or what ``check`` raises.
        """
        key = (broker_id, group_id, member_id)
        now = self._now_ms()
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:  # SS-2
                raise KafkaError(ErrorCode.INVALID_REQUEST, "acknowledgements cannot open a share session")
            wanted = set(partitions)
            if check is not None:
                check(wanted)
            # SS-2: the old session goes without releasing its records (their locks run out).
            old = self._sessions.get(key)
            if old is not None:
                self._remove(old)
            if self.count(broker_id) >= self._max_sessions() and not self._evict_one(broker_id):
                raise KafkaError(ErrorCode.SHARE_SESSION_LIMIT_REACHED, "the share session cache is full")
            session: ShareSession[P] = ShareSession(broker_id, group_id, member_id, conn_id, 1, wanted, now, now)
            self._sessions[key] = session
            self._per_broker[broker_id] = self.count(broker_id) + 1
            self._by_conn[conn_id] = _ConnEntry(key)
            return ShareSessionContext(ContextKind.NEW, session, frozenset(session.partitions))
        session = self._expect(key, epoch)
        if epoch == FINAL_EPOCH:  # SS-4: nothing is fetched; ``finish`` closes it
            session.last_used_ms = now
            return ShareSessionContext(ContextKind.FINAL, session)
        added = frozenset(p for p in partitions if p not in session.partitions)
        gone = frozenset(p for p in forgotten if p in session.partitions or p in added)
        if check is not None:
            check((session.partitions | added) - gone)
        session.last_used_ms = now
        session.partitions |= added
        session.partitions -= gone
        session.epoch = next_epoch(session.epoch)
        return ShareSessionContext(ContextKind.UPDATE, session, added - gone, gone)

    def acknowledge_context(self, group_id: str, member_id: str, epoch: int, *,
                            broker_id: int) -> ShareSessionContext[P]:
        """The session a ShareAcknowledge works in (SS-5).

        Raises:
            KafkaError: INVALID_SHARE_SESSION_EPOCH (epoch 0 or a mismatch), SHARE_SESSION_NOT_FOUND.
        """
        if epoch == INITIAL_EPOCH:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session")
        session = self._expect((broker_id, group_id, member_id), epoch)
        session.last_used_ms = self._now_ms()
        if epoch == FINAL_EPOCH:
            return ShareSessionContext(ContextKind.FINAL, session)
        session.epoch = next_epoch(session.epoch)
        return ShareSessionContext(ContextKind.UPDATE, session)

    def _expect(self, key: SessionKey, epoch: int) -> ShareSession[P]:
        session = self._sessions.get(key)
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session for member {key[2]}")
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                             f"expected share session epoch {session.epoch}, got {epoch}")
        return session

    def finish(self, ctx: ShareSessionContext[P]) -> None:
        """After a final request's acknowledgements: remove the session and release (SS-4, SS-5)."""
        if ctx.kind is ContextKind.FINAL:
            self.close(ctx.session.key)

    # --- endings ------------------------------------------------------------------------------
    def _remove(self, session: ShareSession[P]) -> None:
        """Take a session out of the cache (upstream ``ShareSessionCache.remove``): the entry of
        the connection that opened it is marked stale, whichever session it names now, so the
        connection's disconnect no longer releases anything."""
        if self._sessions.pop(session.key, None) is None:
            return
        self._per_broker[session.broker_id] = self.count(session.broker_id) - 1
        entry = self._by_conn.get(session.conn_id)
        if entry is not None:
            entry.stale = True

    def close(self, key: SessionKey) -> bool:
        """Remove a session and release the member's acquired records in its partitions."""
        session = self._sessions.get(key)
        if session is None:
            return False
        self._remove(session)
        self._release(session)
        return True

    def disconnect(self, conn_id: Hashable) -> int:
        """SS-8: the connection dropped; its latest session, unless already gone, is closed."""
        entry = self._by_conn.pop(conn_id, None)
        if entry is None or entry.stale:
            return 0
        return int(self.close(entry.key))

    def _reachable(self, session: ShareSession[P]) -> bool:
        """Would a disconnect end this session (it is its connection's live latest one)?"""
        entry = self._by_conn.get(session.conn_id)
        return entry is not None and not entry.stale and entry.key == session.key

    def _evict_one(self, broker_id: int) -> bool:
        """A full broker cache makes room by closing its least recently used session that nothing
        would ever end and whose member its group does not know (see the module docstring)."""
        victims = [s for s in self._sessions.values() if s.broker_id == broker_id and not self._reachable(s)
                   and not self._is_member(s.group_id, s.member_id)]
        if not victims:
            return False
        victim = min(victims, key=lambda s: s.last_used_ms)
        # Unlike ``_remove`` it leaves the connection's entry alone: that names another session.
        del self._sessions[victim.key]
        self._per_broker[broker_id] = self.count(broker_id) - 1
        self._release(victim)
        return True

    def statistics(self) -> ShareSessionStats:
        return ShareSessionStats(len(self._sessions), self._max_sessions(), tuple(
            (s.broker_id, s.group_id, s.member_id, s.epoch, len(s.partitions)) for s in self._sessions.values()))

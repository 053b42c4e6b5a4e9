"""Share sessions (KIP-932), beside the fetch sessions: which partitions a share consumer fetches,
keyed by (group id, member id), and the epoch sequence ShareFetch and ShareAcknowledge share.

Rules: SS-1..SS-5, SS-8. Theory of operation:

* ShareFetch epoch 0 opens a session (an existing one with the same key is dropped first, its
  records stay acquired until their locks expire, SS-2) holding exactly the request's
  partitions; the next expected epoch is 1.
* Other epochs must match the expected one; the request's partitions are added, its forgotten
  ones removed, and the epoch advances (wrapping from 2147483647 to 1, SS-3).
* Epoch -1 is the final request: the handler processes its acknowledgements, then calls
  ``finish``, which removes the session and releases the member's acquired records in its
  partitions (SS-4, SS-5). A dropped connection does the same for the sessions it opened (SS-8).
* Releasing is not this module's business: ``release(group_id, member_id, partitions)`` is
  injected (the share partitions do it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

__all__ = ["ShareSession", "ShareSessionCache", "ShareSessionContext", "ContextKind", "ShareSessionStats",
           "INITIAL_EPOCH", "FINAL_EPOCH", "next_epoch"]

INITIAL_EPOCH = 0  # SS-2
FINAL_EPOCH = -1  # SS-4
_MAX_EPOCH = 2_147_483_647  # SS-3: then it wraps to 1

P = TypeVar("P", bound=Hashable)  # a partition key, e.g. (topic id, partition)


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
    group_id: str
    member_id: str
    conn_id: Hashable
    epoch: int  # the next expected epoch
    partitions: set[P] = field(default_factory=set)
    created_ms: int = 0
    last_used_ms: int = 0


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
    max_sessions: int
    keys: tuple[tuple[str, str, int, int], ...]  # (group, member, next epoch, partition count)


class ShareSessionCache(Generic[P]):
    """All share sessions of the broker (SS-1)."""

    def __init__(self, *, max_sessions: Callable[[], int], now_ms: Callable[[], int],
                 release: Callable[[str, str, frozenset[P]], None]) -> None:
        self._sessions: dict[tuple[str, str], ShareSession[P]] = {}
        self._max_sessions = max_sessions
        self._now_ms = now_ms
        self._release = release

    def get(self, group_id: str, member_id: str) -> ShareSession[P] | None:
        return self._sessions.get((group_id, member_id))

    def __len__(self) -> int:
        return len(self._sessions)

    # --- requests -----------------------------------------------------------------------------
    def fetch_context(self, group_id: str, member_id: str, epoch: int, conn_id: Hashable, *,
                      partitions: Iterable[P] = (), forgotten: Iterable[P] = (),
                      has_acknowledgements: bool = False) -> ShareSessionContext[P]:
        """The session a ShareFetch works in (SS-2, SS-3, SS-4).

        Raises:
            KafkaError: INVALID_REQUEST (acknowledgements on an opening request),
                SHARE_SESSION_LIMIT_REACHED (the handler answers it after MaxWaitMs),
                SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH.
        """
        key = (group_id, member_id)
        now = self._now_ms()
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:  # SS-2
                raise KafkaError(ErrorCode.INVALID_REQUEST, "acknowledgements cannot open a share session")
            # SS-2: the old session goes without releasing its records (their locks run out).
            self._sessions.pop(key, None)
            if len(self._sessions) >= self._max_sessions():
                raise KafkaError(ErrorCode.SHARE_SESSION_LIMIT_REACHED, "the share session cache is full")
            session: ShareSession[P] = ShareSession(group_id, member_id, conn_id, 1, set(partitions), now, now)
            self._sessions[key] = session
            return ShareSessionContext(ContextKind.NEW, session, frozenset(session.partitions))
        session = self._expect(key, epoch)
        session.last_used_ms = now
        if epoch == FINAL_EPOCH:  # SS-4: nothing is fetched; ``finish`` closes it
            return ShareSessionContext(ContextKind.FINAL, session)
        added = frozenset(p for p in partitions if p not in session.partitions)
        gone = frozenset(p for p in forgotten if p in session.partitions)
        session.partitions |= added
        session.partitions -= gone
        session.epoch = next_epoch(session.epoch)
        return ShareSessionContext(ContextKind.UPDATE, session, added, gone)

    def acknowledge_context(self, group_id: str, member_id: str, epoch: int) -> ShareSessionContext[P]:
        """The session a ShareAcknowledge works in (SS-5).

        Raises:
            KafkaError: INVALID_SHARE_SESSION_EPOCH (epoch 0 or a mismatch), SHARE_SESSION_NOT_FOUND.
        """
        if epoch == INITIAL_EPOCH:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session")
        session = self._expect((group_id, member_id), epoch)
        session.last_used_ms = self._now_ms()
        if epoch == FINAL_EPOCH:
            return ShareSessionContext(ContextKind.FINAL, session)
        session.epoch = next_epoch(session.epoch)
        return ShareSessionContext(ContextKind.UPDATE, session)

    def _expect(self, key: tuple[str, str], epoch: int) -> ShareSession[P]:
        session = self._sessions.get(key)
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session for member {key[1]}")
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                             f"expected share session epoch {session.epoch}, got {epoch}")
        return session

    def finish(self, ctx: ShareSessionContext[P]) -> None:
        """After a final request's acknowledgements: remove the session and release (SS-4, SS-5)."""
        if ctx.kind is ContextKind.FINAL:
            self.close(ctx.session.group_id, ctx.session.member_id)

    # --- endings ------------------------------------------------------------------------------
    def close(self, group_id: str, member_id: str) -> bool:
        """Remove a session and release the member's acquired records in its partitions."""
        session = self._sessions.pop((group_id, member_id), None)
        if session is None:
            return False
        self._release(group_id, member_id, frozenset(session.partitions))
        return True

    def disconnect(self, conn_id: Hashable) -> int:
        """SS-8: the connection that opened sessions dropped; they go and their records are released."""
        keys = [k for k, s in self._sessions.items() if s.conn_id == conn_id]
        for group_id, member_id in keys:
            self.close(group_id, member_id)
        return len(keys)

    def drop_member(self, group_id: str, member_id: str) -> bool:
        """The member left or was fenced from its group: its session goes too (and its records)."""
        return self.close(group_id, member_id)

    def statistics(self) -> ShareSessionStats:
        return ShareSessionStats(len(self._sessions), self._max_sessions(), tuple(
            (s.group_id, s.member_id, s.epoch, len(s.partitions)) for s in self._sessions.values()))

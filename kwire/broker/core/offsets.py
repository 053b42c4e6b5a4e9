"""Committed offsets: per group, topic and partition, with leader epoch and metadata.

Theory of operation
-------------------
* ``OffsetStore`` is the broker's ``__consumer_offsets`` without the log: a dict per group
  of ``(topic, partition) -> CommittedOffset``. OffsetCommit writes, OffsetFetch reads,
  OffsetDelete and DeleteGroups remove; deleting a topic drops its offsets in every group
  (upstream does the same when the partitions go away).
* Transactional offsets (TxnOffsetCommit, TX-23) are staged per producer id with ``stage``
  and become committed, or vanish, with ``complete`` when the transaction's marker is
  written. While staged, ``is_pending`` is true and OffsetFetch with RequireStable answers
  UNSTABLE_OFFSET_COMMIT for that partition. The transaction work drives these two calls.
* Offsets never expire here (``offsets.retention.minutes`` is not applied).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kwire.broker.core.context import Subsystem

if TYPE_CHECKING:
    from kwire.broker.core.cluster import Topic

__all__ = ["CommittedOffset", "OffsetStore", "OffsetStoreStats", "offset_store", "DEFAULT_OFFSET_METADATA_MAX_BYTES"]

DEFAULT_OFFSET_METADATA_MAX_BYTES = 4096  # offset.metadata.max.bytes (GroupCoordinatorConfig)

TopicPartition = tuple[str, int]


@dataclass(slots=True, frozen=True)
class CommittedOffset:
    """One committed position: the next offset to read, the epoch it was read at, and client metadata."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_ms: int = 0


@dataclass(slots=True, frozen=True)
class OffsetStoreStats:
    groups: int
    partitions: int
    pending_transactions: int


@dataclass(slots=True)
class OffsetStore(Subsystem):
    """Committed and pending (transactional) offsets of every group on this cluster."""

    _committed: dict[str, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)
    # group -> producer id -> staged offsets (TX-23)
    _pending: dict[str, dict[int, dict[TopicPartition, CommittedOffset]]] = field(default_factory=dict)
    # Called with (group, topic, partition, offset or None when removed) on every change of a
    # committed offset, before the request that made it is answered (persistence).
    on_change: list[Callable[[str, str, int, CommittedOffset | None], None]] = field(default_factory=list)
    # Called with (group, producer id, (topic, partition), offset) for each staged offset and with
    # (group, producer id, None, None) when a transaction's staged offsets are settled (persistence).
    on_pending: list[Callable[[str, int, TopicPartition | None, CommittedOffset | None], None]] = field(
        default_factory=list)

    # --- committed ----------------------------------------------------------------------------
    def commit(self, group_id: str, topic: str, partition: int, committed: CommittedOffset) -> None:
        """Store a commit; the listeners (the data dir's journal) hear it first and may refuse it
        with KafkaError, and then nothing is stored."""
        for fn in self.on_change:
            fn(group_id, topic, partition, committed)
        self._committed.setdefault(group_id, {})[(topic, partition)] = committed

    def _removed(self, group_id: str, tps: Iterable[TopicPartition]) -> None:
        for fn in self.on_change:
            for topic, partition in tps:
                fn(group_id, topic, partition, None)

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._committed.get(group_id, {}).get((topic, partition))

    def partitions(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        """Every committed offset of a group, ordered by topic then partition."""
        got = self._committed.get(group_id, {})
        return {tp: got[tp] for tp in sorted(got)}

    def topics(self, group_id: str) -> list[str]:
        return sorted({t for t, _ in self._committed.get(group_id, {})})

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._committed.get(group_id)) or bool(self._pending.get(group_id))

    def groups(self) -> list[str]:
        return sorted(g for g in self._committed if self._committed[g])

    def delete(self, group_id: str, topic: str, partition: int) -> bool:
        got = self._committed.get(group_id)
        if got is None or got.pop((topic, partition), None) is None:
            return False
        if not got:
            del self._committed[group_id]
        self._removed(group_id, [(topic, partition)])
        return True

    def delete_group(self, group_id: str) -> int:
        """Drop every committed and pending offset of a group; returns how many were committed."""
        self._pending.pop(group_id, None)
        gone = self._committed.pop(group_id, {})
        self._removed(group_id, sorted(gone))
        return len(gone)

    # --- transactional (TX-23) --------------------------------------------------------------
    def stage(self, group_id: str, producer_id: int, topic: str, partition: int, committed: CommittedOffset) -> None:
        """A TxnOffsetCommit: held back until the transaction ends."""
        for fn in self.on_pending:
            fn(group_id, producer_id, (topic, partition), committed)
        self._pending.setdefault(group_id, {}).setdefault(producer_id, {})[(topic, partition)] = committed

    def complete(self, group_id: str, producer_id: int, commit: bool) -> int:
        """The transaction's marker: commit (make visible) or abort (drop) its staged offsets."""
        by_pid = self._pending.get(group_id)
        if by_pid is None:
            return 0
        staged = by_pid.get(producer_id, {})
        if commit:
            for (topic, partition), committed in staged.items():
                self.commit(group_id, topic, partition, committed)
        by_pid.pop(producer_id, None)
        if not by_pid:
            del self._pending[group_id]
        for fn in self.on_pending:
            fn(group_id, producer_id, None, None)
        return len(staged)

    def pending_snapshot(self) -> dict[str, dict[str, list[list[Any]]]]:
        """Every staged offset as JSON-able data: group -> producer id -> [topic, partition, fields]."""
        import dataclasses

        return {g: {str(pid): [[t, p, dataclasses.asdict(c)] for (t, p), c in sorted(staged.items())]
                    for pid, staged in sorted(by_pid.items())}
                for g, by_pid in sorted(self._pending.items()) if by_pid}

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in staged for staged in self._pending.get(group_id, {}).values())

    def pending_groups(self) -> list[str]:
        """Groups holding offsets staged in an open transaction."""
        return sorted(g for g, by_pid in self._pending.items() if by_pid)

    def pending_producers(self, group_id: str) -> list[int]:
        return sorted(self._pending.get(group_id, {}))

    # --- hooks ------------------------------------------------------------------------------
    def on_topic_deleted(self, topic: Topic) -> None:
        for group_id in list(self._committed):
            got = self._committed[group_id]
            gone = [tp for tp in got if tp[0] == topic.name]
            for tp in gone:
                del got[tp]
            if not got:
                del self._committed[group_id]
            self._removed(group_id, gone)
        for by_pid in self._pending.values():
            for staged in by_pid.values():
                for tp in [tp for tp in staged if tp[0] == topic.name]:
                    del staged[tp]

    def statistics(self) -> OffsetStoreStats:
        return OffsetStoreStats(
            groups=len(self.groups()),
            partitions=sum(len(v) for v in self._committed.values()),
            pending_transactions=sum(len(v) for v in self._pending.values()),
        )


def offset_store(core: Any) -> OffsetStore:
    """The core's offset store (installed by ``BrokerCore._init_subsystems``)."""
    return core.subsystems.offsets

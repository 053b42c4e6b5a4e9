"""The transaction coordinator (KIP-98, KIP-890 TV2): transactional ids, their state and markers.

Rules: broker-semantics.md section 3 (TX-1..TX-24); state ids TX-14.

Theory of operation
-------------------
* One ``TransactionMetadata`` per transactional id: current producer id/epoch, the previous
  ones (retries and TV2 epoch overflow), the next producer id (TV2 rotation pending the
  Complete state), timeout, partitions, consumer groups whose offsets ride along, start and
  last-update times, the transaction version of the last transition and a pending state.
* Every state change goes through ``_move`` and the ``_MOVES`` table (h11's rule 1: all state
  changes live in this module). A pair missing from the table is a bug in the coordinator,
  not a client error, and raises ``IllegalTransition`` with the state unchanged. The
  conditional choices Kafka makes (is this a retry? is the epoch exhausted? TV1 or TV2?) are
  named functions that return an error code before any move happens, so a rejected request
  changes nothing.
* The coordinator does no I/O. It is given a clock (``now_ms()``), a scheduler
  (``schedule(at_ms, fn) -> handle`` with ``handle.cancel()``; ``core.deadlines.at`` fits),
  a producer-id allocator (``() -> int``), a ``MarkerWriter`` (writes COMMIT/ABORT control
  batches on the data partitions and answers per partition) and a ``TxnOffsetStore`` (the
  offset store's ``stage``/``complete``/``is_pending``).
* Kafka appends each transition to ``__transaction_state`` and acts once the append is
  replicated. kwire has no such log: a transition is in effect when ``_move`` returns, and
  ``snapshot()``/``restore()`` give persistence a JSON-able picture of all of it. So a
  Prepare* state is what a crash in the middle of a commit leaves behind, and ``restore``
  completes it by writing the markers again (Kafka's coordinator does the same on load).
* EndTxn: Ongoing -> Prepare* (answered here, as Kafka answers once Prepare* is logged) ->
  markers -> Complete*. From the answer until the last marker the id is pending Complete*
  (Kafka's ``prepareComplete``), and its AddPartitionsToTxn, produce verification, EndTxn and
  InitProducerId get CONCURRENT_TRANSACTIONS in Kafka's check order (TX-15); the partitions'
  LSO stays at the transaction's first offset and staged offsets stay pending. The markers go
  out on the scheduler: ``marker_delay_ms`` after the answer (``kwire.transaction.marker.delay.ms``,
  0: the next tick), or as ``hold_markers``/``release_markers`` say (tests widen the window). A
  partition whose marker fails stays pending and is retried every ``MARKER_RETRY_BACKOFF_MS``.
  Offsets staged by TxnOffsetCommit become visible (or are dropped) in the same step that
  writes the markers' Complete state (TX-23).
* Consumer-offset "partitions": Kafka adds ``__consumer_offsets-N`` (N from the group id's
  hash) to the transaction and writes a marker there. kwire has no such log: the partition
  is listed in the transaction (DescribeTransactions shows it) but is not given to the
  ``MarkerWriter``; its "marker" is the offset store's ``complete``.
* Timeouts (TX-17): Kafka's ``abortTimedOutTransactions`` scan, every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (10 s) from start-up, fences
  and aborts every Ongoing transaction whose start + timeout is before now; kwire keeps that
  phase and arms the timer only while a transaction is Ongoing. The fence's abort uses the
  server's transaction version: under TV2 one epoch bump with the old epoch kept as last epoch
  (so the fenced producer's InitProducerId(pid, old epoch) is a retry), before TV2 the bumped
  epoch with no last epoch. ``transactional.id.expiration.ms`` is a deadline per id.
* TV1 or TV2 (TX-24): as in Kafka, each request's version decides (EndTxn v5+, Produce v12+,
  TxnOffsetCommit v5+ are TV2 clients: ``tv_for_request``); the finalized
  ``transaction.version`` feature is what clients read in ApiVersions to pick those versions
  (the Java producer caps Produce at v11 and EndTxn at v4 under TV1). New metadata records
  the finalized level.

Deviations (kept on purpose)
----------------------------
* Kafka scans for expired transactional ids every hour
  (``transactional.id.expiration.ms`` checked by ``transaction.remove.expired.transaction.cleanup.interval.ms``);
  kwire forgets an idle id at its exact expiry.
* A restart writes the markers of a Prepare* transaction at once (Kafka hands them to its
  marker channel on load), so a restart inside a held window completes the transaction.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kwire.broker.core.context import Subsystem
from kwire.errors import KafkaError, KwireError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.cluster import Partition
    from kwire.broker.core.offsets import CommittedOffset
    from kwire.records import BatchInfo

__all__ = [
    "TransactionState",
    "Trigger",
    "IllegalTransition",
    "TransactionMetadata",
    "TxnCoordinatorConfig",
    "TransactionCoordinator",
    "MarkerWriter",
    "TxnOffsetStore",
    "Cancellable",
    "ProducerIdAndEpoch",
    "TransactionDescription",
    "TransactionListing",
    "ProducerDescription",
    "TxnCoordinatorStats",
    "describe_producers",
    "txn_coordinator",
    "coordinator_for_core",
    "LogMarkerWriter",
    "settings_from",
    "offsets_partition_for",
    "tv_for_request",
    "OFFSETS_TOPIC",
    "NO_PRODUCER_ID",
    "NO_PRODUCER_EPOCH",
    "MAX_EPOCH",
    "DEFAULT_TRANSACTION_MAX_TIMEOUT_MS",
    "DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS",
    "MARKER_RETRY_BACKOFF_MS",
    "DEFAULT_ABORT_TIMED_OUT_INTERVAL_MS",
]

NO_PRODUCER_ID = -1  # RecordBatch.NO_PRODUCER_ID
NO_PRODUCER_EPOCH = -1  # RecordBatch.NO_PRODUCER_EPOCH
SHORT_MAX = 32767
MAX_EPOCH = SHORT_MAX - 1  # TX-2: an epoch >= 32766 is exhausted (TransactionMetadata.isEpochExhausted)
DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 900_000  # TX-2: transaction.max.timeout.ms
DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS = 604_800_000  # transactional.id.expiration.ms (7 days)
DEFAULT_OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions
MARKER_RETRY_BACKOFF_MS = 100  # retry.backoff.ms of the coordinator's marker channel
DEFAULT_ABORT_TIMED_OUT_INTERVAL_MS = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
OFFSETS_TOPIC = "__consumer_offsets"

TopicPartition = tuple[str, int]


class TransactionState(enum.IntEnum):
    """TX-14: the coordinator's states with their persisted ids."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions/ListTransactions use (``TransactionState.stateName``)."""
        return _STATE_NAMES[self]


_STATE_NAMES = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {v: k for k, v in _STATE_NAMES.items()}


class Trigger(enum.Enum):
    INIT = "init"  # InitProducerId
    ADD = "add"  # AddPartitionsToTxn, AddOffsetsToTxn, TV2 implicit add
    COMMIT = "commit"  # EndTxn(commit)
    ABORT = "abort"  # EndTxn(abort), or the coordinator's own abort after a fence
    FENCE = "fence"  # InitProducerId over an open transaction, or its timeout
    MARKERS_DONE = "markers_done"  # every marker written
    EXPIRE = "expire"  # transactional.id.expiration.ms


S = TransactionState
T = Trigger

# The whole state machine (TransactionState.validPreviousStates, read the other way round).
_MOVES: dict[tuple[TransactionState, Trigger], TransactionState] = {
    (S.EMPTY, T.INIT): S.EMPTY,  # TX-2: epoch bump, nothing open
    (S.COMPLETE_COMMIT, T.INIT): S.EMPTY,  # TX-2
    (S.COMPLETE_ABORT, T.INIT): S.EMPTY,  # TX-2
    (S.EMPTY, T.ADD): S.ONGOING,  # TX-11: first partition starts the transaction
    (S.ONGOING, T.ADD): S.ONGOING,  # TX-11
    (S.COMPLETE_COMMIT, T.ADD): S.ONGOING,  # TX-11: the next transaction
    (S.COMPLETE_ABORT, T.ADD): S.ONGOING,  # TX-11
    (S.ONGOING, T.COMMIT): S.PREPARE_COMMIT,  # TX-15
    (S.ONGOING, T.ABORT): S.PREPARE_ABORT,  # TX-15
    (S.EMPTY, T.ABORT): S.PREPARE_ABORT,  # TX-16: TV2 abort with nothing added
    (S.COMPLETE_COMMIT, T.ABORT): S.PREPARE_ABORT,  # TX-16: TV2
    (S.COMPLETE_ABORT, T.ABORT): S.PREPARE_ABORT,  # TX-16: TV2
    (S.ONGOING, T.FENCE): S.PREPARE_EPOCH_FENCE,  # TX-3, TX-17: epoch bumped, abort follows
    (S.PREPARE_EPOCH_FENCE, T.ABORT): S.PREPARE_ABORT,  # TX-3, TX-17
    (S.PREPARE_COMMIT, T.MARKERS_DONE): S.COMPLETE_COMMIT,  # TX-15, TX-18
    (S.PREPARE_ABORT, T.MARKERS_DONE): S.COMPLETE_ABORT,  # TX-15, TX-18
    (S.EMPTY, T.EXPIRE): S.DEAD,  # transactional.id.expiration.ms
    (S.COMPLETE_COMMIT, T.EXPIRE): S.DEAD,
    (S.COMPLETE_ABORT, T.EXPIRE): S.DEAD,
}

MOVES: Mapping[tuple[TransactionState, Trigger], TransactionState] = _MOVES  # read-only view for tools/tests


class IllegalTransition(KwireError):
    """The coordinator tried a move its table does not have (a bug; the state is unchanged)."""

    def __init__(self, transactional_id: str, state: TransactionState, trigger: Trigger) -> None:
        self.transactional_id = transactional_id
        self.state = state
        self.trigger = trigger
        super().__init__(f"transaction {transactional_id!r}: no move from {state.name} on {trigger.value}")


# --- interfaces --------------------------------------------------------------------------------
class Cancellable(Protocol):
    def cancel(self) -> None: ...


class MarkerWriter(Protocol):
    """Writes COMMIT/ABORT control batches (TX-18) and answers an error code per partition.

    NONE means written (or nothing to write: a partition that no longer exists); any other
    code leaves that partition pending and the coordinator retries it on the clock.
    """

    def write_markers(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      partitions: list[TopicPartition], transaction_version: int = 2) -> Mapping[TopicPartition, int]:
        ...


class TxnOffsetStore(Protocol):
    """The offset store's transactional side (``kwire.broker.core.offsets.OffsetStore`` fits)."""

    def stage(self, group_id: str, producer_id: int, topic: str, partition: int,
              committed: CommittedOffset) -> None: ...

    def complete(self, group_id: str, producer_id: int, commit: bool) -> int: ...

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool: ...


Scheduler = Callable[[int, Callable[[], None]], Cancellable]


@dataclass(slots=True, frozen=True)
class TxnCoordinatorConfig:
    transaction_max_timeout_ms: int = DEFAULT_TRANSACTION_MAX_TIMEOUT_MS  # TX-2
    transactional_id_expiration_ms: int = DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS
    transaction_version: int = 2  # TX-24: the finalized feature level (0, 1 or 2)
    offsets_topic_partitions: int = DEFAULT_OFFSETS_TOPIC_PARTITIONS
    # TX-17: transaction.abort.timed.out.transaction.cleanup.interval.ms
    abort_timed_out_interval_ms: int = DEFAULT_ABORT_TIMED_OUT_INTERVAL_MS
    # TX-15: kwire.transaction.marker.delay.ms: how long after EndTxn is answered the markers go out
    marker_delay_ms: int = 0


@dataclass(slots=True, frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id (TransactionMetadata upstream)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    last_producer_id: int = NO_PRODUCER_ID  # prevProducerId: the id before an epoch-overflow rotation
    last_producer_epoch: int = NO_PRODUCER_EPOCH  # the epoch a retry may still present (TX-4, TX-16)
    next_producer_id: int = NO_PRODUCER_ID  # TV2: the id the Complete state rotates to (epoch overflow)
    partitions: set[TopicPartition] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)  # groups whose offsets are in the transaction (TX-23)
    pending_markers: set[TopicPartition] = field(default_factory=set)  # data partitions still unmarked
    start_ms: int = -1
    last_update_ms: int = -1
    transaction_version: int = 0  # of the last transition (clientTransactionVersion)
    # A transition in progress: Complete* while the markers are being written (TX-15: the
    # requests of this id answer CONCURRENT_TRANSACTIONS until they are all written).
    pending_state: TransactionState | None = None
    # scheduler handles (not persisted)
    marker_handle: Cancellable | None = field(default=None, repr=False, compare=False)
    expire_handle: Cancellable | None = field(default=None, repr=False, compare=False)

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH  # TX-2

    def to_json(self) -> dict[str, Any]:
        return {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "last_producer_id": self.last_producer_id,
            "last_producer_epoch": self.last_producer_epoch,
            "next_producer_id": self.next_producer_id,
            "timeout_ms": self.timeout_ms,
            "state": self.state.name,
            "partitions": sorted([t, p] for t, p in self.partitions),
            "groups": sorted(self.groups),
            "pending_markers": sorted([t, p] for t, p in self.pending_markers),
            "start_ms": self.start_ms,
            "last_update_ms": self.last_update_ms,
            "transaction_version": self.transaction_version,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TransactionMetadata:
        return cls(
            transactional_id=d["transactional_id"],
            producer_id=int(d["producer_id"]),
            producer_epoch=int(d["producer_epoch"]),
            last_producer_id=int(d["last_producer_id"]),
            last_producer_epoch=int(d["last_producer_epoch"]),
            next_producer_id=int(d["next_producer_id"]),
            timeout_ms=int(d["timeout_ms"]),
            state=TransactionState[d["state"]],
            partitions={(t, int(p)) for t, p in d["partitions"]},
            groups=set(d["groups"]),
            pending_markers={(t, int(p)) for t, p in d["pending_markers"]},
            start_ms=int(d["start_ms"]),
            last_update_ms=int(d["last_update_ms"]),
            transaction_version=int(d["transaction_version"]),
        )


@dataclass(slots=True, frozen=True)
class TransactionDescription:
    """DescribeTransactions' view of one transactional id."""

    transactional_id: str
    state: str
    timeout_ms: int
    start_ms: int
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]


@dataclass(slots=True, frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(slots=True, frozen=True)
class TxnCoordinatorStats:
    coordinator_epoch: int
    transactional_ids: int
    by_state: dict[str, int]
    pending_markers: int
    # CONCURRENT_TRANSACTIONS answered to clients, by request (TX-15: a client met the window)
    concurrent_transactions: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class ProducerDescription:
    """DescribeProducers' view of one producer on one partition."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


# --- helpers -----------------------------------------------------------------------------------
def _java_string_hash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):  # String.hashCode runs over UTF-16 code units
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def offsets_partition_for(group_id: str, partitions: int = DEFAULT_OFFSETS_TOPIC_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition of a group: ``Utils.abs(groupId.hashCode) % partitions``."""
    return (_java_string_hash(group_id) & 0x7FFFFFFF) % partitions


def tv_for_request(api: str, version: int) -> int:
    """The transaction version a request runs under: 2 when its version says the client knows
    TV2, else 0 (TX-16, TX-13, TX-23; TransactionVersion.transactionVersionFor*).

    ``api`` is one of "end_txn" (v5+), "add_partitions" (v4+: broker form, sent for TV2
    clients), "produce" (v12+: implicit add), "txn_offset_commit" (v5+: implicit add). The
    finalized ``transaction.version`` feature plays no part here: clients read it from
    ApiVersions and pick these request versions from it (TX-24).
    """
    signals_tv2 = {
        "end_txn": version >= 5,
        "add_partitions": version >= 4,
        "produce": version >= 12,
        "txn_offset_commit": version >= 5,
    }[api]
    return 2 if signals_tv2 else 0


def _fenced(code: int, api_version: int, since: int) -> int:
    """PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for request versions below ``since`` (TX-4, TX-11, TX-15)."""
    if code == ErrorCode.PRODUCER_FENCED and api_version < since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


class TransactionCoordinator(Subsystem):
    """Transactional id -> ``TransactionMetadata``; the requests of TX-2..TX-23 as methods.

    Methods raise ``KafkaError`` for a whole-request error (state unchanged) and return the
    response data otherwise.
    """

    def __init__(
        self,
        clock: Any,
        schedule: Scheduler,
        allocate_producer_id: Callable[[], int],
        markers: MarkerWriter,
        offsets: TxnOffsetStore,
        settings: Callable[[], TxnCoordinatorConfig] = TxnCoordinatorConfig,
    ) -> None:
        self.clock = clock
        self.schedule = schedule
        self.allocate_producer_id = allocate_producer_id
        self.markers = markers
        self.offsets = offsets
        self.settings = settings
        self.coordinator_epoch = 0
        self.transactions: dict[str, TransactionMetadata] = {}
        # producer id -> transactional id, for Produce (its batches carry only the producer id)
        self._by_producer_id: dict[int, str] = {}
        # every move made, for tests and the control API: (transactional id, from, trigger, to)
        self.on_move: list[Callable[[str, TransactionState, Trigger, TransactionState], None]] = []
        # Transactional ids changed since persistence last took them (``take_dirty``): what Kafka
        # appends to __transaction_state before it answers.
        self.dirty: set[str] = set()
        # TX-17: the timed-out-transaction scan runs every abort_timed_out_interval_ms from here
        # (Kafka's fixed-rate scheduler from start-up); armed only while a transaction is Ongoing.
        self._scan_anchor_ms = clock.now_ms()
        self._scan_handle: Cancellable | None = None
        # TX-15 widening (``hold_markers``): markers of transactions that end wait this long
        # instead of marker_delay_ms, or (held) until ``release_markers``.
        self.marker_hold_ms: int | None = None
        self.markers_held = False
        self._held: set[str] = set()
        # CONCURRENT_TRANSACTIONS answers by request name (``statistics``)
        self.concurrent_answers: dict[str, int] = {}

    def _note(self, request: str, code: int) -> int:
        if code == ErrorCode.CONCURRENT_TRANSACTIONS:
            self.concurrent_answers[request] = self.concurrent_answers.get(request, 0) + 1
        return code

    # --- the one place state changes ------------------------------------------------------------
    def _move(self, meta: TransactionMetadata, trigger: Trigger) -> None:
        new = _MOVES.get((meta.state, trigger))
        if new is None:
            raise IllegalTransition(meta.transactional_id, meta.state, trigger)
        old = meta.state
        meta.state = new
        meta.last_update_ms = self.clock.now_ms()
        self.dirty.add(meta.transactional_id)
        for fn in self.on_move:
            fn(meta.transactional_id, old, trigger, new)

    def _index(self, meta: TransactionMetadata) -> None:
        self._by_producer_id[meta.producer_id] = meta.transactional_id
        self.dirty.add(meta.transactional_id)

    def take_dirty(self) -> dict[str, dict[str, Any] | None]:
        """The changed transactional ids as persisted data (None: the id expired), and forget them."""
        out = {tid: (self.transactions[tid].to_json() if tid in self.transactions else None)
               for tid in sorted(self.dirty)}
        self.dirty.clear()
        return out

    def _feature(self) -> int:
        return self.settings().transaction_version

    # --- InitProducerId (TX-2, TX-3, TX-4) ---------------------------------------------------
    def init_producer_id(self, transactional_id: str, timeout_ms: int, api_version: int = 5,
                         producer_id: int = NO_PRODUCER_ID,
                         producer_epoch: int = NO_PRODUCER_EPOCH) -> ProducerIdAndEpoch:
        """InitProducerId with a transactional id.

        Raises:
            KafkaError: INVALID_REQUEST (empty id, or exactly one of id/epoch given, TX-1/TX-4),
                INVALID_TRANSACTION_TIMEOUT (TX-2), CONCURRENT_TRANSACTIONS (TX-3: an open
                transaction is being aborted, retry), PRODUCER_FENCED or INVALID_PRODUCER_EPOCH
                below v4 (TX-4).
        """
        try:
            return self._init_producer_id(transactional_id, timeout_ms, api_version, producer_id, producer_epoch)
        except KafkaError as exc:
            self._note("InitProducerId", exc.code)
            raise

    def _init_producer_id(self, transactional_id: str, timeout_ms: int, api_version: int = 5,
                          producer_id: int = NO_PRODUCER_ID,
                          producer_epoch: int = NO_PRODUCER_EPOCH) -> ProducerIdAndEpoch:
        if not transactional_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "the transactional id must not be empty")  # TX-1
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "producer id and epoch must both be set or both be -1")
        if timeout_ms <= 0 or timeout_ms > self.settings().transaction_max_timeout_ms:
            raise KafkaError(ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                             f"the transaction timeout {timeout_ms} ms is not in (0, "
                             f"{self.settings().transaction_max_timeout_ms}]")  # TX-2
        expected = ProducerIdAndEpoch(producer_id, producer_epoch) if producer_id != NO_PRODUCER_ID else None
        now = self.clock.now_ms()
        meta = self.transactions.get(transactional_id)
        if meta is None:
            # TX-2: a new transactional id; epoch -1 so the bump below yields 0
            meta = TransactionMetadata(transactional_id, self.allocate_producer_id(), NO_PRODUCER_EPOCH, timeout_ms,
                                       last_update_ms=now, transaction_version=self._feature())
            self.transactions[transactional_id] = meta
            self._index(meta)
        if meta.pending_state is not None:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._valid_expected_producer(meta, expected):
            raise KafkaError(_fenced(ErrorCode.PRODUCER_FENCED, api_version, 4))  # TX-4
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS)  # TX-3
        if meta.state is S.ONGOING:
            # TX-3: fence the open transaction and abort it; the client retries and then gets a
            # further-bumped epoch (a new producer id if this bump exhausted the epochs).
            self._fence_and_abort(meta)
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, "aborting the transaction the previous "
                                                                 "producer left open")
        if meta.state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            raise IllegalTransition(transactional_id, meta.state, T.INIT)
        if meta.epoch_exhausted and (expected is None or expected.producer_epoch == meta.producer_epoch):
            # TX-2: rotate to a new producer id with epoch 0
            old_pid, old_epoch = meta.producer_id, meta.producer_epoch
            self._by_producer_id.pop(old_pid, None)
            meta.producer_id = self.allocate_producer_id()
            meta.producer_epoch = 0
            meta.last_producer_id = old_pid
            meta.last_producer_epoch = old_epoch if expected is not None else NO_PRODUCER_EPOCH
        elif expected is None or meta.producer_epoch == NO_PRODUCER_EPOCH \
                or expected.producer_epoch == meta.producer_epoch:
            meta.last_producer_epoch = meta.producer_epoch if expected is not None else NO_PRODUCER_EPOCH
            meta.producer_epoch += 1  # TX-2: fences the previous holder
        elif expected.producer_epoch == meta.last_producer_epoch:
            pass  # TX-4: a retry of a bump that succeeded: the current epoch, no second bump
        else:
            raise KafkaError(_fenced(ErrorCode.PRODUCER_FENCED, api_version, 4))  # TX-4
        meta.timeout_ms = timeout_ms
        meta.partitions.clear()
        meta.groups.clear()
        meta.start_ms = -1
        self._move(meta, T.INIT)
        self._index(meta)
        self._schedule_expiry(meta)
        return ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)

    @staticmethod
    def _valid_expected_producer(meta: TransactionMetadata, expected: ProducerIdAndEpoch) -> bool:
        # TransactionCoordinator.isValidProducerId: a just-created id, the current id, or the
        # previous id presented with an exhausted epoch (a retry spanning the rotation).
        return (meta.producer_epoch == NO_PRODUCER_EPOCH
                or expected.producer_id == meta.producer_id
                or (expected.producer_id == meta.last_producer_id and expected.producer_epoch >= MAX_EPOCH))

    # --- AddPartitionsToTxn / AddOffsetsToTxn (TX-11, TX-12, TX-23) ---------------------------
    def _check_member(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TransactionMetadata:
        if not transactional_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "the transactional id must not be empty")
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.state is S.DEAD or meta.producer_id != producer_id:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)  # TX-11
        if meta.producer_epoch != producer_epoch:
            raise KafkaError(ErrorCode.PRODUCER_FENCED)  # TX-11
        return meta

    def _check_add(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TransactionMetadata:
        """handleAddPartitionsToTransaction's checks, in its order: a pending transition (markers
        being written) first, then the producer id and epoch, then the Prepare states (TX-11, TX-15)."""
        if not transactional_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "the transactional id must not be empty")
        meta = self.transactions.get(transactional_id)
        if meta is not None and meta.state is not S.DEAD and meta.pending_state is not None:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, "the transaction's markers are being written")
        meta = self._check_member(transactional_id, producer_id, producer_epoch)
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS)  # TX-11
        return meta

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], api_version: int = 3,
                       transaction_version: int | None = None) -> None:
        """AddPartitionsToTxn (client form, or the broker form with VerifyOnly false).

        Raises:
            KafkaError: one code for every partition (TX-11): INVALID_PRODUCER_ID_MAPPING,
                PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below v2), CONCURRENT_TRANSACTIONS.
        """
        try:
            self._add_partitions(transactional_id, producer_id, producer_epoch, partitions, api_version, transaction_version)
        except KafkaError as exc:
            self._note("AddPartitionsToTxn", exc.code)
            raise

    def _add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                        partitions: Iterable[TopicPartition], api_version: int = 3,
                        transaction_version: int | None = None) -> None:
        tps = set(partitions)
        try:
            meta = self._check_add(transactional_id, producer_id, producer_epoch)
        except KafkaError as exc:
            raise KafkaError(_fenced(exc.code, api_version, 2), exc.message) from None
        tv = transaction_version if transaction_version is not None else tv_for_request(
            "add_partitions", api_version)
        self._add(meta, tps, tv)

    def _add(self, meta: TransactionMetadata, tps: set[TopicPartition], tv: int) -> None:
        if meta.state is S.ONGOING and tps <= meta.partitions:
            return  # nothing new: no transition (Kafka answers NONE straight away)
        starting = meta.state is not S.ONGOING
        self._move(meta, T.ADD)
        if starting:
            meta.start_ms = meta.last_update_ms
            meta.partitions.clear()
            meta.groups.clear()
            self._cancel(meta, "expire_handle")
            self._arm_scan()
        meta.partitions |= tps
        meta.transaction_version = tv

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+ with VerifyOnly (TX-12): membership only, no state change."""
        tps = list(partitions)
        try:
            meta = self._check_member(transactional_id, producer_id, producer_epoch)
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS)
        except KafkaError as exc:
            return {tp: self._note("AddPartitionsToTxn", exc.code) for tp in tps}
        return {tp: (ErrorCode.NONE if tp in meta.partitions else ErrorCode.TRANSACTION_ABORTABLE) for tp in tps}

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str,
                    api_version: int = 3) -> None:
        """AddOffsetsToTxn (TX-23): the group's offsets partition joins the transaction.

        Raises:
            KafkaError: as ``add_partitions`` (PRODUCER_FENCED from v2 on).
        """
        tp = (OFFSETS_TOPIC, offsets_partition_for(group_id, self.settings().offsets_topic_partitions))
        self.add_partitions(transactional_id, producer_id, producer_epoch, [tp], api_version=api_version,
                            transaction_version=0)
        self.transactions[transactional_id].groups.add(group_id)
        self.dirty.add(transactional_id)

    # --- TxnOffsetCommit (TX-23) --------------------------------------------------------------
    def txn_offset_commit(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str,
                          offsets: Mapping[TopicPartition, CommittedOffset], api_version: int = 4) -> None:
        """Stage offsets in the transaction; visible only once it commits (TX-23).

        ``verify_txn_offset_commit`` then ``stage_txn_offsets``; a handler runs the group
        coordinator's own checks between the two, as Kafka verifies first.
        """
        self.verify_txn_offset_commit(transactional_id, producer_id, producer_epoch, group_id, api_version)
        self.stage_txn_offsets(transactional_id, producer_id, group_id, offsets)

    def verify_txn_offset_commit(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                 group_id: str, api_version: int) -> None:
        """The group's offsets partition is verified (v<5) or added (v5+ under TV2), as Kafka's
        AddPartitionsToTxnManager does before the group coordinator stages the offsets.

        Raises:
            KafkaError: for every partition: INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH
                (a fenced producer), CONCURRENT_TRANSACTIONS, TRANSACTION_ABORTABLE (v4, offsets
                partition not in the transaction) or INVALID_TXN_STATE (v0-3).
        """
        try:
            self._verify_txn_offset_commit(transactional_id, producer_id, producer_epoch, group_id, api_version)
        except KafkaError as exc:
            self._note("TxnOffsetCommit", exc.code)
            raise

    def _verify_txn_offset_commit(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                  group_id: str, api_version: int) -> None:
        tp = (OFFSETS_TOPIC, offsets_partition_for(group_id, self.settings().offsets_topic_partitions))
        tv = tv_for_request("txn_offset_commit", api_version)
        code = self._verify_or_add(transactional_id, producer_id, producer_epoch, tp, add=tv >= 2,
                                   generic_errors=api_version >= 4)
        if code:
            raise KafkaError(code)

    def stage_txn_offsets(self, transactional_id: str, producer_id: int, group_id: str,
                          offsets: Mapping[TopicPartition, CommittedOffset]) -> None:
        """Hold offsets back in the offset store until the transaction's markers (after verification)."""
        self.transactions[transactional_id].groups.add(group_id)
        self.dirty.add(transactional_id)
        for (topic, partition), committed in offsets.items():
            self.offsets.stage(group_id, producer_id, topic, partition, committed)

    def is_offset_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT while this is true (TX-23)."""
        return self.offsets.is_pending(group_id, topic, partition)

    # --- Produce verification (TX-13) ---------------------------------------------------------
    def _verify_or_add(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
                       tp: TopicPartition, *, add: bool, generic_errors: bool) -> int:
        """AddPartitionsToTxnManager's round trip to the coordinator, with its error mapping (TX-13)."""
        if transactional_id is None:
            transactional_id = self._by_producer_id.get(producer_id, "")
        meta = self.transactions.get(transactional_id) if transactional_id else None
        code: int
        if add:  # handleAddPartitionsToTransaction
            try:
                meta = self._check_add(transactional_id or "", producer_id, producer_epoch)
                self._add(meta, {tp}, 2)
                code = ErrorCode.NONE
            except KafkaError as exc:
                code = ErrorCode.INVALID_PRODUCER_ID_MAPPING if exc.code == ErrorCode.INVALID_REQUEST else exc.code
        elif meta is None or meta.state is S.DEAD or meta.producer_id != producer_id:
            code = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif meta.producer_epoch != producer_epoch:
            code = ErrorCode.PRODUCER_FENCED
        elif meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            code = ErrorCode.CONCURRENT_TRANSACTIONS
        else:
            code = ErrorCode.NONE if tp in meta.partitions else ErrorCode.TRANSACTION_ABORTABLE
        if code == ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH  # TX-13: reported to the producer this way
        if code == ErrorCode.TRANSACTION_ABORTABLE and not generic_errors:
            return ErrorCode.INVALID_TXN_STATE  # TX-13: old clients know only this one
        return code

    def verify_append(self, producer_id: int, producer_epoch: int, tp: TopicPartition, produce_version: int,
                      leader_has_open_txn: bool, transactional_id: str | None = None) -> int:
        """May a transactional batch of this producer be appended to ``tp``? 0 = yes (TX-13).

        The leader asks only for the first transactional append of a transaction (it already
        has an open transaction for this producer at this epoch otherwise). Produce v12+ adds
        the partition (TV2 implicit add), v11 verifies with TRANSACTION_ABORTABLE, v10 and
        below verify with INVALID_TXN_STATE.
        """
        if leader_has_open_txn:
            return ErrorCode.NONE
        add = tv_for_request("produce", produce_version) >= 2
        code = self._note("Produce", self._verify_or_add(transactional_id, producer_id, producer_epoch, tp, add=add,
                                                         generic_errors=produce_version >= 11))
        if code == ErrorCode.CONCURRENT_TRANSACTIONS and not add:
            # ReplicaManager: before TV2 a retriable verification error becomes NOT_ENOUGH_REPLICAS,
            # which older clients retry (TV2 clients get CONCURRENT_TRANSACTIONS as it is)
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return code

    def verification_concurrent(self, transactional_id: str) -> bool:
        """Would a produce's verification for this id answer CONCURRENT_TRANSACTIONS now (its last
        transaction's markers are still out, TX-15)? The leader then holds the produce and retries
        (handlers/produce.py); only the answer the client finally gets counts in ``statistics``."""
        meta = self.transactions.get(transactional_id)
        return meta is not None and meta.state is not S.DEAD and (
            meta.pending_state is not None or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT))

    def check_produce(self, ctx: Any, partition: Partition, info: BatchInfo, transactional_id: str | None = None) -> int:
        """Produce's hook (handlers/produce.py): 0, or the error code for this partition (TX-13, TX-8).
        ``transactional_id`` is the request's (verification asks the coordinator about that id)."""
        if not info.is_transactional or info.producer_id < 0:
            return ErrorCode.NONE
        entry = partition.producers.entries.get(info.producer_id)
        if entry is not None and info.producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH  # maybeStartTransactionVerification refuses it first
        open_txn = (entry is not None and entry.txn_first_offset is not None
                    and entry.epoch == info.producer_epoch)
        code = self.verify_append(info.producer_id, info.producer_epoch, (partition.topic, partition.index),
                                  ctx.api_version, open_txn, transactional_id)
        if (code == ErrorCode.NONE and not open_txn and tv_for_request("produce", ctx.api_version) >= 2
                and info.base_sequence != 0 and (entry is None or not entry.batches)):
            # TX-8 (ProducerAppendInfo.checkSequence): a TV2 transactional producer that the leader
            # has no batches of starts at sequence 0 (the verification entry supports epoch bumps)
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        return code

    # --- EndTxn (TX-15, TX-16) ----------------------------------------------------------------
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                api_version: int = 4) -> ProducerIdAndEpoch:
        """EndTxn: returns the producer id/epoch the response carries (TV2: the bumped ones).

        Raises:
            KafkaError: INVALID_REQUEST, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
                (INVALID_PRODUCER_EPOCH below v2), CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE.
        """
        try:
            return self._end_txn(transactional_id, producer_id, producer_epoch, commit, api_version)
        except KafkaError as exc:
            self._note("EndTxn", exc.code)
            raise

    def _end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                 api_version: int = 4) -> ProducerIdAndEpoch:
        if not transactional_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "the transactional id must not be empty")
        tv = tv_for_request("end_txn", api_version)
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.state is S.DEAD:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        try:
            if tv >= 2:
                return self._end_tv2(meta, producer_id, producer_epoch, commit)
            return self._end_tv1(meta, producer_id, producer_epoch, commit)
        except KafkaError as exc:
            raise KafkaError(_fenced(exc.code, api_version, 2), exc.message) from None

    def _end_tv1(self, meta: TransactionMetadata, producer_id: int, producer_epoch: int,
                 commit: bool) -> ProducerIdAndEpoch:
        """TX-15 (endTransactionWithTV1)."""
        if meta.producer_id != producer_id:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if producer_epoch != meta.producer_epoch:
            raise KafkaError(ErrorCode.PRODUCER_FENCED)
        if meta.pending_state is not None:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, "the transaction's markers are being written")
        current = ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)
        state = meta.state
        if state is S.ONGOING:
            self._prepare_end(meta, commit, tv=0, bump=False)
            return current
        if state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
            return current  # TX-15: a retry of the same result
        if state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS)  # TX-15: markers still being written
        raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                         f"cannot {'commit' if commit else 'abort'} a transaction in state {state.kafka_name}")

    def _end_tv2(self, meta: TransactionMetadata, producer_id: int, producer_epoch: int,
                 commit: bool) -> ProducerIdAndEpoch:
        """TX-16 (endTransaction with TV2): every end bumps the epoch; retries carry epoch - 1."""
        retry_on_overflow = (meta.last_producer_id == producer_id and producer_epoch == MAX_EPOCH
                             and meta.producer_epoch == 0)
        retry_on_bump = meta.producer_epoch == producer_epoch + 1
        state = meta.state
        if state in (S.ONGOING, S.EMPTY, S.DEAD, S.PREPARE_EPOCH_FENCE):
            valid_epoch = producer_epoch == meta.producer_epoch
        elif state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        else:
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if meta.pending_state is not None:
            # TV2 checks this first: the markers of the last end are still being written (the
            # producer may already hold the id that only the Complete state installs).
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, "the transaction's markers are being written")
        if meta.producer_id != producer_id and not retry_on_overflow:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            raise KafkaError(ErrorCode.PRODUCER_FENCED)
        bad = KafkaError(ErrorCode.INVALID_TXN_STATE,
                         f"cannot {'commit' if commit else 'abort'} a transaction in state {state.kafka_name}")
        if state is S.ONGOING:
            return self._prepare_end(meta, commit, tv=2, bump=True)
        if state is S.COMPLETE_COMMIT:
            if commit:
                if is_retry:
                    return ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)
                raise bad
            if is_retry:
                raise bad
            return self._prepare_end(meta, False, tv=2, bump=True, nothing_added=True)
        if state is S.COMPLETE_ABORT:
            if commit:
                raise bad
            if is_retry:
                return ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)
            return self._prepare_end(meta, False, tv=2, bump=True, nothing_added=True)
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            if commit == (state is S.PREPARE_COMMIT):
                raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS)
            raise bad
        if state is S.EMPTY:
            if commit:
                raise bad
            return self._prepare_end(meta, False, tv=2, bump=True, nothing_added=True)
        raise IllegalTransition(meta.transactional_id, state, T.COMMIT if commit else T.ABORT)

    def _prepare_end(self, meta: TransactionMetadata, commit: bool, *, tv: int, bump: bool,
                     nothing_added: bool = False) -> ProducerIdAndEpoch:
        """Ongoing (or, TV2 abort, Empty/Complete*) -> Prepare*; the markers go out later (TX-15).

        What the caller answers is in effect now (Kafka answers EndTxn once Prepare* is in the
        transaction log). Until every marker is written the id is pending Complete*:
        ``_write_markers`` runs on the broker clock, ``marker_delay_ms`` after this (the next
        tick by default) or when ``release_markers`` lets held markers go.
        """
        self._move(meta, T.COMMIT if commit else T.ABORT)
        self._cancel(meta, "expire_handle")
        meta.transaction_version = tv
        if bump:
            # TX-16: the epoch is bumped (up to 32767 on overflow: the markers carry it) and, when
            # exhausted, a new producer id with epoch 0 takes over at the Complete state.
            if meta.epoch_exhausted:
                meta.next_producer_id = self.allocate_producer_id()
            meta.last_producer_epoch = meta.producer_epoch
            meta.producer_epoch += 1
        if nothing_added:
            meta.start_ms = meta.last_update_ms
            meta.partitions.clear()
            meta.groups.clear()
        response = (ProducerIdAndEpoch(meta.next_producer_id, 0) if meta.next_producer_id != NO_PRODUCER_ID
                    else ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch))
        meta.pending_markers = {tp for tp in meta.partitions if tp[0] != OFFSETS_TOPIC}
        meta.pending_state = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        self._schedule_markers(meta)
        return response

    # --- fencing and timeouts (TX-3, TX-17) ---------------------------------------------------
    def _fence_and_abort(self, meta: TransactionMetadata) -> None:
        """Fence the producer of an Ongoing transaction and abort it (InitProducerId over it, or
        its timeout): Ongoing -> PrepareEpochFence -> PrepareAbort."""
        self._move(meta, T.FENCE)
        self._abort_fenced(meta, bumped=False)

    def _abort_fenced(self, meta: TransactionMetadata, *, bumped: bool) -> None:
        """The abort after a fence, with the server's transaction version as Kafka's coordinator
        uses (``transactionVersionLevel``). TV2: one bump, the old epoch kept as last epoch, so
        the fenced producer's InitProducerId(pid, old epoch) is a retry (TX-17). Before TV2: the
        bumped epoch with no last epoch (endTransactionWithTV1's epoch fence). ``bumped``: a
        restore found PrepareEpochFence persisted by an earlier kwire (the epoch already up)."""
        if self._feature() >= 2 and not bumped:
            self._prepare_end(meta, False, tv=2, bump=True)
            return
        if not bumped:
            meta.producer_epoch += 1
            meta.last_producer_epoch = NO_PRODUCER_EPOCH
        self._prepare_end(meta, False, tv=0, bump=False)

    def _arm_scan(self) -> None:
        """TX-17: make sure the timed-out-transaction scan is due at its next tick.

        Kafka runs ``abortTimedOutTransactions`` at a fixed rate from start-up; kwire keeps that
        phase (ticks at anchor + k * interval) but arms the timer only while some transaction is
        Ongoing, so an idle broker has no timer.
        """
        if self._scan_handle is not None:
            return
        interval = max(1, self.settings().abort_timed_out_interval_ms)
        now = self.clock.now_ms()
        ticks = (now - self._scan_anchor_ms) // interval + 1
        self._scan_handle = self.schedule(self._scan_anchor_ms + ticks * interval, self._scan_timed_out)

    def _scan_timed_out(self) -> None:
        """abortTimedOutTransactions: every Ongoing transaction without a pending transition whose
        start + timeout is before now is fenced and aborted (TransactionStateManager.timedOutTransactions)."""
        self._scan_handle = None
        now = self.clock.now_ms()
        for tid in sorted(self.transactions):
            meta = self.transactions[tid]
            if meta.state is S.ONGOING and meta.pending_state is None and meta.start_ms + meta.timeout_ms < now:
                self._fence_and_abort(meta)
        if any(m.state is S.ONGOING for m in self.transactions.values()):
            self._arm_scan()

    def _schedule_markers(self, meta: TransactionMetadata) -> None:
        """The marker channel picks the transaction up: on the next tick, ``marker_delay_ms`` (or
        the ``hold_markers`` time) later, or, held, when ``release_markers`` is called."""
        self._cancel(meta, "marker_handle")
        if self.markers_held:
            self._held.add(meta.transactional_id)
            return
        delay = self.marker_hold_ms if self.marker_hold_ms is not None else self.settings().marker_delay_ms
        self._arm_markers(meta, self.clock.now_ms() + max(0, delay))

    def _arm_markers(self, meta: TransactionMetadata, at_ms: int) -> None:
        def send() -> None:
            meta.marker_handle = None
            if self.transactions.get(meta.transactional_id) is meta and meta.pending_state is not None:
                self._write_markers(meta)

        meta.marker_handle = self.schedule(at_ms, send)

    def hold_markers(self, hold_ms: int | None = None) -> None:
        """Widen the PrepareCommit/PrepareAbort window for tests (TX-15): markers of transactions
        that end from now on go out ``hold_ms`` of broker time after EndTxn is answered, or, with
        None, not before ``release_markers``."""
        if hold_ms is None:
            self.markers_held = True
        else:
            if hold_ms < 0:
                raise ValueError("hold_ms must be >= 0")
            self.marker_hold_ms = hold_ms

    def release_markers(self) -> int:
        """End ``hold_markers``: every transaction whose markers wait (held, or for a hold time)
        has them written on the next tick; returns how many transactions that is."""
        self.markers_held = False
        self.marker_hold_ms = None
        waiting = set(self._held)
        self._held.clear()
        waiting |= {tid for tid, m in self.transactions.items()
                    if m.pending_state is not None and m.marker_handle is not None}
        now = self.clock.now_ms()
        for tid in sorted(waiting):
            meta = self.transactions.get(tid)
            if meta is not None and meta.pending_state is not None:
                self._cancel(meta, "marker_handle")
                self._arm_markers(meta, now)
        return len(waiting)

    def _schedule_expiry(self, meta: TransactionMetadata) -> None:
        """transactional.id.expiration.ms: an idle id (Empty/Complete*) is forgotten."""
        self._cancel(meta, "expire_handle")
        last = meta.last_update_ms

        def fire() -> None:
            meta.expire_handle = None
            if (self.transactions.get(meta.transactional_id) is meta and meta.last_update_ms == last
                    and meta.pending_state is None
                    and meta.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)):
                self._move(meta, T.EXPIRE)
                del self.transactions[meta.transactional_id]
                if self._by_producer_id.get(meta.producer_id) == meta.transactional_id:
                    del self._by_producer_id[meta.producer_id]

        meta.expire_handle = self.schedule(last + self.settings().transactional_id_expiration_ms, fire)

    @staticmethod
    def _cancel(meta: TransactionMetadata, slot: str) -> None:
        handle = getattr(meta, slot)
        if handle is not None:
            handle.cancel()
            setattr(meta, slot, None)

    # --- markers (TX-18) ----------------------------------------------------------------------
    def _write_markers(self, meta: TransactionMetadata) -> None:
        """The marker channel's send: the pending partitions get their markers; a partition that
        fails is retried every ``MARKER_RETRY_BACKOFF_MS`` (the id stays pending meanwhile)."""
        commit = meta.state is S.PREPARE_COMMIT
        if meta.pending_markers:
            try:
                result = self.markers.write_markers(meta.producer_id, meta.producer_epoch, commit,
                                                    self.coordinator_epoch, sorted(meta.pending_markers),
                                                    transaction_version=meta.transaction_version)
            except KwireError:  # the writer failed as a whole: every marker is retried
                result = {}
            meta.pending_markers -= {tp for tp, code in result.items() if code == ErrorCode.NONE}
        if meta.pending_markers:
            self._arm_markers(meta, self.clock.now_ms() + MARKER_RETRY_BACKOFF_MS)
            return
        self._complete(meta, commit)

    def _complete(self, meta: TransactionMetadata, commit: bool) -> None:
        """Every marker is written: staged offsets settle and the state becomes Complete* (TX-23)."""
        self._cancel(meta, "marker_handle")
        self._held.discard(meta.transactional_id)
        for group_id in sorted(meta.groups):
            self.offsets.complete(group_id, meta.producer_id, commit)
        meta.pending_state = None
        self._move(meta, T.MARKERS_DONE)
        if meta.next_producer_id != NO_PRODUCER_ID:  # TV2 epoch overflow: the new id takes over
            self._by_producer_id.pop(meta.producer_id, None)
            meta.last_producer_id = meta.producer_id
            meta.producer_id = meta.next_producer_id
            meta.producer_epoch = 0
            meta.next_producer_id = NO_PRODUCER_ID
            self._index(meta)
        meta.partitions.clear()
        meta.groups.clear()
        self._schedule_expiry(meta)

    # --- describe / list ----------------------------------------------------------------------
    def describe_transaction(self, transactional_id: str) -> TransactionDescription:
        """DescribeTransactions; raises KafkaError(TRANSACTIONAL_ID_NOT_FOUND) for an unknown id."""
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.state is S.DEAD:
            raise KafkaError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return TransactionDescription(meta.transactional_id, meta.state.kafka_name, meta.timeout_ms, meta.start_ms,
                                      meta.producer_id, meta.producer_epoch, tuple(sorted(meta.partitions)))

    def list_transactions(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                          duration_ms: int = -1,
                          id_matches: Callable[[str], bool] | None = None) -> tuple[list[TransactionListing], list[str]]:
        """ListTransactions: the matching transactions and the state filters that name no state.

        A transaction matches when its state is among ``states`` (if any), its producer id
        among ``producer_ids`` (if any) and, with ``duration_ms`` >= 0, it has been running
        longer than that (now - start > duration, as upstream computes it, start -1 included),
        and ``id_matches`` (ListTransactions v2's TransactionalIdPattern) accepts its id.
        """
        wanted = set(states)
        unknown = sorted(s for s in wanted if s not in _BY_NAME)
        state_filter = {_BY_NAME[s] for s in wanted if s in _BY_NAME}
        pids = set(producer_ids)
        now = self.clock.now_ms()
        out = []
        for tid in sorted(self.transactions):
            meta = self.transactions[tid]
            if meta.state is S.DEAD:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if wanted and meta.state not in state_filter:
                continue
            if duration_ms >= 0 and now - meta.start_ms <= duration_ms:
                continue
            if id_matches is not None and not id_matches(tid):
                continue
            out.append(TransactionListing(tid, meta.producer_id, meta.state.kafka_name))
        return out, unknown

    # --- persistence ----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The whole coordinator as JSON-able data (what ``__transaction_state`` would hold)."""
        return {
            "coordinator_epoch": self.coordinator_epoch,
            "transactions": [self.transactions[t].to_json() for t in sorted(self.transactions)],
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Load a snapshot, as a coordinator loading its partition does.

        The coordinator epoch goes up (leaders fence markers from the old one, TX-19);
        timeouts and expiries are scheduled again; a transaction found in Prepare* has its
        markers written again (to every partition: which ones succeeded before is not trusted)
        and completes.
        """
        self.on_close()
        self._held.clear()
        self.transactions = {}
        self._by_producer_id = {}
        self.coordinator_epoch = int(data.get("coordinator_epoch", 0)) + 1
        for d in data.get("transactions", []):
            meta = TransactionMetadata.from_json(d)
            self.transactions[meta.transactional_id] = meta
            self._index(meta)
        for tid in sorted(self.transactions):
            meta = self.transactions[tid]
            if meta.state is S.ONGOING:
                self._arm_scan()
            elif meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                meta.pending_markers = {tp for tp in meta.partitions if tp[0] != OFFSETS_TOPIC}
                meta.pending_state = S.COMPLETE_COMMIT if meta.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
                self._write_markers(meta)
            elif meta.state is S.PREPARE_EPOCH_FENCE:
                # the abort after a fence never got logged: do it now (an older kwire had bumped
                # the epoch when it moved to PrepareEpochFence; this one moves on in the same step)
                self._abort_fenced(meta, bumped=True)
            elif meta.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                self._schedule_expiry(meta)

    # --- hooks ----------------------------------------------------------------------------------
    def on_topic_deleted(self, topic: Any) -> None:
        """A deleted topic's partitions leave every transaction; markers no longer wait for them
        (Kafka's marker channel drops markers for partitions that are gone)."""
        name = topic.name
        for tid in sorted(self.transactions):
            meta = self.transactions[tid]
            meta.partitions = {tp for tp in meta.partitions if tp[0] != name}
            before = len(meta.pending_markers)
            meta.pending_markers = {tp for tp in meta.pending_markers if tp[0] != name}
            if before and not meta.pending_markers and meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._complete(meta, meta.state is S.PREPARE_COMMIT)

    def inspect(self) -> list[dict[str, Any]]:
        """Every transactional id as plain data for the control API: the persisted fields plus
        the Kafka state name and, for an Ongoing transaction, when it times out (TX-17)."""
        out = []
        for tid in sorted(self.transactions):
            meta = self.transactions[tid]
            row = meta.to_json()
            row["state_name"] = meta.state.kafka_name
            row["timeout_deadline_ms"] = meta.start_ms + meta.timeout_ms if meta.state is S.ONGOING else None
            out.append(row)
        return out

    def statistics(self) -> TxnCoordinatorStats:
        by_state: dict[str, int] = {}
        for meta in self.transactions.values():
            by_state[meta.state.kafka_name] = by_state.get(meta.state.kafka_name, 0) + 1
        return TxnCoordinatorStats(self.coordinator_epoch, len(self.transactions), dict(sorted(by_state.items())),
                                   sum(len(m.pending_markers) for m in self.transactions.values()),
                                   dict(sorted(self.concurrent_answers.items())))

    def on_close(self) -> None:
        for meta in self.transactions.values():
            for slot in ("marker_handle", "expire_handle"):
                self._cancel(meta, slot)
        if self._scan_handle is not None:
            self._scan_handle.cancel()
            self._scan_handle = None

    def producer_transactional_id(self, producer_id: int) -> str | None:
        return self._by_producer_id.get(producer_id)


def settings_from(configs: Any) -> Callable[[], TxnCoordinatorConfig]:
    """The coordinator's settings from a ``ConfigStore``, as in force at each use (so ``--set``
    and AlterConfigs on the broker take effect at once).

    Read several times per EndTxn and marker write, so resolved once per content of the broker's
    overrides (the only input of a cluster-wide broker key: its own value or a synonym's, else
    the default); the overrides' current items are the key, as they are changed in place and
    replaced.
    """
    from kwire.broker.core.configs import ResourceType

    def resolve() -> TxnCoordinatorConfig:
        def get(key: str) -> int:
            return int(configs.get_int(ResourceType.BROKER, "", key))

        return TxnCoordinatorConfig(get("transaction.max.timeout.ms"), get("transactional.id.expiration.ms"),
                                    get("transaction.version"), get("offsets.topic.num.partitions"),
                                    get("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
                                    get("kwire.transaction.marker.delay.ms"))

    last: list[Any] = [object(), None]  # [key, settings]: the last resolution

    def read() -> TxnCoordinatorConfig:
        key = configs.overrides_key(ResourceType.BROKER, "")
        if key != last[0]:
            last[1] = resolve()
            last[0] = key
        got: TxnCoordinatorConfig = last[1]
        return got

    return read


def coordinator_for_core(core: Any, markers: MarkerWriter) -> TransactionCoordinator:
    """A coordinator on a BrokerCore's clock, deadlines, producer ids, offset store and configs."""
    return TransactionCoordinator(core.clock, core.deadlines.at, core.subsystems.producer_ids.allocate, markers,
                                  core.subsystems.offsets, settings_from(core.configs))


class LogMarkerWriter:
    """The ``MarkerWriter`` of a BrokerCore: each marker goes through the partition log's one append
    path (``PartitionLog.append_marker``: TX-19's epoch checks, the LSO, the aborted-transaction
    index), on the partition's leader, at the broker's time; appends wake waiting fetches."""

    def __init__(self, core: Any) -> None:
        self.core = core
        # Fault injection (Broker.fail_txn_markers): [topic or None, partition or None, error code,
        # writes left or None for every one]; a marker write that matches fails with the code.
        self.forced_failures: list[list[Any]] = []

    def _forced(self, topic: str, index: int) -> int | None:
        for rule in self.forced_failures:
            r_topic, r_part, code, left = rule
            if r_topic not in (None, topic) or r_part not in (None, index):
                continue
            if left is not None:
                rule[3] = left - 1
                if rule[3] <= 0:
                    self.forced_failures.remove(rule)
            return int(code)
        return None

    def write_markers(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      partitions: list[TopicPartition], transaction_version: int = 2) -> dict[TopicPartition, int]:
        core = self.core
        out: dict[TopicPartition, int] = {}
        tv = transaction_version
        for topic, index in partitions:
            p = core.cluster.partition(topic, index)
            if p is None:
                out[(topic, index)] = ErrorCode.NONE  # gone: nothing to write (the marker channel drops it)
                continue
            forced = self._forced(topic, index)
            if forced is not None:
                out[(topic, index)] = forced
                continue
            node = core.cluster.nodes.get(p.leader_id)
            if node is None or not node.up:
                out[(topic, index)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            try:
                p.log.append_marker(producer_id, producer_epoch, commit, coordinator_epoch=coordinator_epoch,
                                    now_ms=core.clock.now_ms(), leader_epoch=p.leader_epoch,
                                    config=core.log_config(topic), transaction_version=tv)
                out[(topic, index)] = ErrorCode.NONE
            except KafkaError as exc:
                out[(topic, index)] = exc.code
        return out


def txn_coordinator(core: Any) -> TransactionCoordinator | None:
    """The core's transaction coordinator, when one is installed (``core.subsystems.transactions``)."""
    got = core.subsystems.transactions
    return got if isinstance(got, TransactionCoordinator) else None


def describe_producers(partition: Partition) -> list[ProducerDescription]:
    """DescribeProducers: the active producers of one partition, by producer id."""
    out = []
    for pid in sorted(partition.producers.entries):
        e = partition.producers.entries[pid]
        last = e.batches[-1] if e.batches else None
        out.append(ProducerDescription(
            producer_id=pid,
            producer_epoch=e.epoch,
            last_sequence=last.last_seq if last is not None else -1,
            last_timestamp=last.timestamp if last is not None else -1,
            coordinator_epoch=e.coordinator_epoch,
            current_txn_start_offset=e.txn_first_offset if e.txn_first_offset is not None else -1,
        ))
    return out

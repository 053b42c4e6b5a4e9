"""Failover: a client produces a keyed stream while a broker dies and leaders move.

Needs a ``ClusterControl`` (kwire's control API) over at least ``MIN_BROKERS`` live
brokers; a wire-only control skips.

1. A topic of ``PARTITIONS`` partitions, replicated over the cluster. The client starts
   one long-lived producer (``adapter.failover_config``: retries and timeouts that ride
   out a dead broker, idempotence where the client has it) and sends ``CHUNKS`` chunks of
   ``CHUNK`` keyed records; its own partitioner spreads them by key.
2. After handing chunk ``i`` to the client, the scenario waits until the broker holds
   every record of the chunks before it (so the stream is flowing and chunk ``i`` is
   queued or in flight), then applies the step planned for ``i``:

   * ``DOWN_AT``: the leader of partition 0 goes down (``broker_down``): its listener
     closes, its connections drop, its partitions move to other replicas;
   * ``MOVE_AT``: partition 1's leader moves to another live node (``move_leader``), so
     the old leader answers NOT_LEADER_OR_FOLLOWER;
   * ``UP_AT``: the dead broker comes back (``broker_up``), leading nothing yet;
   * ``BACK_AT``: partition 0's leader moves back onto the restored broker, which the
     client must reconnect to.

   Waiting for the earlier chunks after a step is where the client has to recover:
   failed requests, a metadata refresh, a new leader.
3. Meanwhile, unless the adapter says why it cannot (``failover_no_live_read``), the same
   client reads the topic without a group, started with the producer (a slow starter such
   as a JVM may join after the first steps): it must follow the leaders too and read every
   record exactly once, in offset order per partition.
4. The producer flushes and closes: every record must be acknowledged, none failed.
5. The same client reads the whole topic back without a group, exactly as many records
   as the broker's logs hold. Asserted for every client:

   * no loss: every sent (key, value) is read at least once, and nothing else is read;
   * an acknowledgement that names (partition, offset) finds its own record there
     (kcat names no record: its acknowledgements must be distinct positions of sent
     records, one per record);
   * the logs hold exactly the records read.

   When ``adapter.failover_idempotent`` (the producer runs with idempotence on, as
   every adapter here does), also: every record exactly once, and within a partition in
   the order sent (idempotence keeps order with up to 5 requests in flight). Without
   idempotence a retried request whose answer was lost may be written twice, so copies
   of sent records are allowed there.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict

from kwire.conformance.clients.base import Ack, ClientAdapter, ProducerSession, Record
from kwire.conformance.scenarios.base import BrokerControl, ClusterControl, ScenarioResult, unique_name
from kwire.errors import ConformanceError

__all__ = ["failover", "failover_records"]

SCENARIO = "failover"
PARTITIONS = 3
MIN_BROKERS = 3
CHUNK = 30
CHUNKS = 10
DOWN_AT, MOVE_AT, UP_AT, BACK_AT = 2, 4, 6, 8
# Per step: recovery after a broker death is bounded by the clients' retry backoffs and
# metadata refreshes (seconds), so a minute means the client did not recover.
STEP_TIMEOUT_S = 60.0
CONSUME_TIMEOUT_S = 60.0
# The live consumer's own deadline: the whole produce phase plus recovery.
LIVE_TIMEOUT_S = 120.0
_LIVE_MARGIN_S = 30.0  # its child process is killed 15 s after LIVE_TIMEOUT_S
# How long one broker-side wait blocks before looking at the client process again.
_WATCH_SLICE_S = 1.0
# "k0000" + ":" + value + "\n" = 128 bytes (see failover_records).
VALUE_BYTES = 121


def failover_records(client: str, start: int, count: int) -> list[Record]:
    """Keyed text records ``k0000``/``failover-<client>-0000…``, partitioned by the client.

    Every value is padded to ``VALUE_BYTES``, so that ``key:value\n`` is exactly 128 bytes:
    kcat 1.7 reads stdin in 128-byte ``fread``s and hands on a record only once it has
    read 128 bytes past the previous one, so only whole 128-byte lines stream through it.
    """
    out = []
    for i in range(start, start + count):
        value = f"failover-{client}-{i:04d}-".encode().ljust(VALUE_BYTES, b".")
        out.append(Record(f"k{i:04d}".encode(), value))
    return out


def _seq_of(value: bytes | None, prefix: bytes) -> int | None:
    if value is None or not value.startswith(prefix):
        return None
    digits = value[len(prefix) :].split(b"-", 1)[0]
    return int(digits) if digits.isdigit() else None


class _LiveRead:
    """``adapter.consume`` of the whole stream on a daemon thread, started at once."""

    def __init__(self, adapter: ClientAdapter, bootstrap: str, topic: str) -> None:
        self._done = threading.Event()
        self._records: list[Record] = []
        self._error: ConformanceError | None = None

        def run() -> None:
            try:
                self._records = adapter.consume(
                    bootstrap,
                    topic,
                    group_id=None,
                    count=CHUNK * CHUNKS,
                    timeout_s=LIVE_TIMEOUT_S,
                    config=adapter.failover_consumer_config,
                )
            except ConformanceError as exc:
                self._error = exc
            finally:
                self._done.set()

        threading.Thread(target=run, name=f"failover-live-{adapter.name}", daemon=True).start()

    def result(self, timeout_s: float) -> list[Record]:
        """The records read; raises ConformanceError on a client error or no answer in time."""
        if not self._done.wait(timeout_s):
            raise ConformanceError(f"no answer in {timeout_s:.0f}s")
        if self._error is not None:
            raise self._error
        return self._records


def _other_live(control: ClusterControl, *avoid: int) -> int:
    live = control.live_node_ids()
    for node in live:
        if node not in avoid:
            return node
    return live[0]


def _wait_for_records(
    control: ClusterControl, producer: ProducerSession, topic: str, count: int, steps: list[str]
) -> None:
    """Wait until the broker holds ``count`` records, watching the producer for an early exit."""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while True:
        left = deadline - time.monotonic()
        if control.wait_for_records(topic, count, min(_WATCH_SLICE_S, max(left, 0.0))):
            return
        producer.pump_nowait()  # raises if the client died or reported an error
        if time.monotonic() >= deadline:
            held = sum(control.end_offsets(topic).values())
            raise ConformanceError(
                f"the broker holds {held} of {count} records {STEP_TIMEOUT_S:.0f}s after "
                f"{steps[-1] if steps else 'the start'}: the client did not recover "
                f"({producer.proc.diagnostics()})"
            )


def _check_live(
    records: list[Record],
    expected: list[tuple[bytes | None, bytes | None]],
    prefix: bytes,
) -> str | None:
    """None when the consumer that read during the faults saw every record (see the module docstring)."""
    seen: Counter[int] = Counter()
    rows: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for r in records:
        seq = _seq_of(r.value, prefix)
        if seq is None or seq >= len(expected) or (r.key, r.value) != expected[seq]:
            return f"read a record never sent: {r.key!r}={r.value!r}"
        seen[seq] += 1
        if r.partition is not None and r.offset is not None:
            rows[r.partition].append((r.offset, seq))
    missing = sorted(set(range(len(expected))) - set(seen))
    if missing:
        return f"read {len(seen)} of {len(expected)} records, first missing {missing[:6]}"
    twice = sorted(s for s, n in seen.items() if n > 1)
    if twice:
        return f"read {len(twice)} records twice, first {twice[:6]}"
    for part, pairs in sorted(rows.items()):
        offsets = [o for o, _ in pairs]
        if offsets != sorted(offsets):
            return f"partition {part} read out of offset order"
    return None


def _check_acks(acks: list[Ack], sent: int, found: dict[tuple[int, int], int]) -> str | None:
    """None when the acknowledgements are consistent with what was read back."""
    if len(acks) != sent:
        return f"{len(acks)} acknowledgements for {sent} records"
    named = [a for a in acks if a.seq is not None]
    if named:
        seqs = Counter(a.seq for a in named if a.seq is not None)
        twice = sorted(s for s, n in seqs.items() if n > 1)
        if twice:
            return f"records acknowledged twice: {twice[:6]}"
        if len(named) != sent or set(seqs) != set(range(sent)):
            return f"acknowledged records {len(seqs)} of {sent}"
    positions = [(a.partition, a.offset) for a in acks if a.partition is not None and a.offset is not None]
    if len(set(positions)) != len(positions):
        return "two acknowledgements name the same (partition, offset)"
    for a in acks:
        if a.partition is None or a.offset is None or a.offset < 0:
            continue
        there = found.get((a.partition, a.offset))
        if there is None:
            return f"acknowledged {a.partition}:{a.offset} holds no record of this run"
        if a.seq is not None and there != a.seq:
            return f"record {a.seq} acknowledged at {a.partition}:{a.offset}, which holds record {there}"
    return None


def failover(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A producer rides out a broker going down, a leader move, the broker coming back and the leader
    moving back; everything acknowledged is then read back."""
    if not isinstance(control, ClusterControl):
        return ScenarioResult.skipped(
            adapter.name, SCENARIO, f"{control.name} control is wire-only (no broker_down/move_leader)"
        )
    if len(control.live_node_ids()) < MIN_BROKERS:
        return ScenarioResult.skipped(adapter.name, SCENARIO, f"needs {MIN_BROKERS} live brokers")
    topic = unique_name(f"kw-fo-{adapter.name}")
    control.create_topic(topic, PARTITIONS)
    prefix = f"failover-{adapter.name}-".encode()
    steps: list[str] = []
    victim = control.leader_of(topic, 0)
    producer: ProducerSession | None = None
    # The live consumer reads while the faults happen, in a child process with its own hard
    # timeout; see ClientAdapter.failover_no_live_read. Its thread is a daemon, so a scenario
    # that fails early never holds the interpreter up waiting for it.
    live: _LiveRead | None = None
    if adapter.failover_no_live_read is None:
        live = _LiveRead(adapter, bootstrap, topic)
    try:
        producer = adapter.start_producer(bootstrap, topic, config=adapter.failover_config, lifetime_s=240)
        for i in range(CHUNKS):
            producer.send(failover_records(adapter.name, i * CHUNK, CHUNK))
            _wait_for_records(control, producer, topic, i * CHUNK, steps)
            if i == DOWN_AT:
                control.broker_down(victim)
                steps.append(f"broker {victim} (leader of p0) down")
            elif i == MOVE_AT:
                old = control.leader_of(topic, 1)
                new = _other_live(control, old)
                control.move_leader(topic, 1, new)
                steps.append(f"p1 leader {old} -> {new}")
            elif i == UP_AT:
                control.broker_up(victim)
                steps.append(f"broker {victim} up")
            elif i == BACK_AT:
                old = control.leader_of(topic, 0)
                control.move_leader(topic, 0, victim)
                steps.append(f"p0 leader {old} -> {victim}")
        producer.stop(timeout_s=STEP_TIMEOUT_S)
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, SCENARIO, f"{exc} (steps: {'; '.join(steps)})")
    finally:
        if producer is not None:
            producer.kill()
        # Leave the cluster whole for whatever runs next, even after a failure.
        if victim not in control.live_node_ids():
            control.broker_up(victim)
    sent = producer.sent
    try:
        live_records = None if live is None else live.result(LIVE_TIMEOUT_S + _LIVE_MARGIN_S)
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, SCENARIO, f"live consumer: {exc}")
    if producer.failures:
        seq, msg = producer.failures[0]
        return ScenarioResult.failed(
            adapter.name, SCENARIO, f"{len(producer.failures)} records failed, first {seq}: {msg}"
        )
    expected = [(r.key, r.value) for r in failover_records(adapter.name, 0, sent)]
    in_log = sum(control.end_offsets(topic).values())
    consumed = adapter.consume(
        bootstrap,
        topic,
        group_id=None,
        count=in_log,
        timeout_s=CONSUME_TIMEOUT_S,
        config=adapter.failover_consumer_config,
    )
    if len(consumed) != in_log:
        return ScenarioResult.failed(
            adapter.name, SCENARIO, f"read {len(consumed)} records back, the logs hold {in_log}"
        )
    found: dict[tuple[int, int], int] = {}
    counts: Counter[int] = Counter()
    by_partition: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for r in consumed:
        seq = _seq_of(r.value, prefix)
        if seq is None or seq >= sent or (r.key, r.value) != expected[seq]:
            return ScenarioResult.failed(
                adapter.name, SCENARIO, f"read a record never sent: {r.key!r}={r.value!r}"
            )
        counts[seq] += 1
        if r.partition is not None and r.offset is not None:
            found[(r.partition, r.offset)] = seq
            by_partition[r.partition].append((r.offset, seq))
    lost = sorted(set(range(sent)) - set(counts))
    if lost:
        return ScenarioResult.failed(adapter.name, SCENARIO, f"{len(lost)} records lost, first {lost[:6]}")
    problem = _check_acks(producer.acks, sent, found)
    if problem is not None:
        return ScenarioResult.failed(adapter.name, SCENARIO, problem)
    problem = None if live_records is None else _check_live(live_records, expected, prefix)
    if problem is not None:
        return ScenarioResult.failed(adapter.name, SCENARIO, f"live consumer: {problem}")
    dups = sorted(s for s, n in counts.items() if n > 1)
    if adapter.failover_idempotent:
        if dups:
            return ScenarioResult.failed(
                adapter.name,
                SCENARIO,
                f"idempotent producer wrote {len(dups)} records twice, first {dups[:6]}",
            )
        for part, rows in sorted(by_partition.items()):
            seqs = [s for _, s in sorted(rows)]
            if seqs != sorted(seqs):
                bad = next(k for k in range(1, len(seqs)) if seqs[k] < seqs[k - 1])
                return ScenarioResult.failed(
                    adapter.name,
                    SCENARIO,
                    f"partition {part} out of send order: record {seqs[bad]} after {seqs[bad - 1]}",
                )
    return ScenarioResult.passed(
        adapter.name,
        SCENARIO,
        steps=steps,
        records=sent,
        duplicates=len(dups),
        idempotent=adapter.failover_idempotent,
        live_consumer=live is not None,
        topic=topic,
    )

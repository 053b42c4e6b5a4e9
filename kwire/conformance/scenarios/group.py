"""Consumer group of two members: split, one leaves, the other resumes from commits.

1. Member A joins and owns all ``PARTITIONS`` partitions; then member B joins. Wait
   until their assignments are disjoint, both non-empty and together cover every
   partition (a rebalance happened).
2. Produce ``BATCH`` records; wait until A and B consumed them between them, each
   from its own partitions. B leaves (LeaveGroup).
3. Wait until A owns every partition; produce a second batch; A must consume it.
4. Every record is reported at least once, and a record reported twice is judged as Kafka's
   guarantee allows (``committed_redeliveries``): before B leaves, the broker holds the commits
   of every record either member reported, so A resuming from the committed offsets sees no
   duplicate and no gap. A driver reports a record once its commit call returned, which is not
   always once the broker has it: kcat and kafkats auto-commit every 100 ms,
   @confluentinc/kafka-javascript's commitOffsets resolves when librdkafka has queued the commit
   (commitCb calls commitAsync), and @platformatic/kafka reported records whose commits the
   broker then refused. A rebalance before such a commit lands (a session expiring under load)
   makes the next owner read the record again, as it would on Kafka. Such a redelivery passes
   when the recording shows an OffsetFetch answer at or below the record, given after its batch
   was produced while no accepted commit covered it; a committed record read again fails. A
   control that records no traffic cannot tell the two apart: there any duplicate fails.

``kip848_group`` runs the same with ``group.protocol=consumer`` (ConsumerGroupHeartbeat).

``group_migration`` is a rolling upgrade and downgrade of one group (KIP-848 online migration,
docs/group-migration.md GM-1, GM-3..GM-6, GM-9, GM-10): members A and B start classic and split
the partitions; A is restarted with ``group.protocol=consumer`` (the group converts to a consumer
group with B still classic inside it), then B; then A is restarted classic again (a classic
member inside the consumer group), then B (the group converts back). After each restart the two
live members split the partitions and consume a fresh batch; over the whole run every record is
reported exactly once and no member fails. Clients with both protocols only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kwire.conformance.clients.base import ClientAdapter, GroupMember, GroupProtocol, Record
from kwire.conformance.scenarios.base import BrokerControl, ScenarioResult, unique_name
from kwire.errors import ConformanceError
from kwire.protocol.registry import ApiKey

__all__ = ["consumer_group", "kip848_group", "group_scenario", "group_migration", "committed_redeliveries"]

PARTITIONS = 4
BATCH = 12
# Generous: a classic rebalance waits for every member's next heartbeat or poll.
STEP_TIMEOUT_S = 45.0
# How long one wait blocks on one member before looking at the other; a deadline loop,
# not a timing assumption.
_PUMP_SLICE_S = 0.05


def _wait(members: list[GroupMember], cond: Callable[[], bool], timeout_s: float, what: str,
          broker_view: Callable[[], str] | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        for m in members:
            m.pump_nowait()
        if cond():
            return
        if time.monotonic() >= deadline:
            state = "; ".join(
                f"{i}: owns {sorted(m.assignment)}, {len(m.records)} records" for i, m in enumerate(members)
            )
            extra = ""
            if broker_view is not None:
                try:
                    extra = f"; {broker_view()}"
                except Exception as exc:  # noqa: BLE001 - a diagnostic must not hide the failure
                    extra = f"; broker view unavailable: {exc}"
            tails = "; ".join(f"{i} stderr: {m.proc.diagnostics()}" for i, m in enumerate(members))
            raise ConformanceError(f"timed out after {timeout_s:.0f}s waiting for {what} ({state}{extra}; {tails})")
        for m in members:
            m.pump(min(deadline, time.monotonic() + _PUMP_SLICE_S))


def _batch(tag: str, start: int) -> list[Record]:
    return [
        Record(f"k{i}".encode(), f"{tag}-{i}".encode(), (("n", str(i).encode()),), partition=i % PARTITIONS)
        for i in range(start, start + BATCH)
    ]


def _seen(members: list[GroupMember]) -> list[tuple[int | None, int | None]]:
    return [(r.partition, r.offset) for m in members for r in m.records]


def _positions(members: Iterable[GroupMember]) -> dict[int, int]:
    """Partition -> the offset after the last record the members reported there."""
    positions: dict[int, int] = {}
    for m in members:
        for r in m.records:
            if r.partition is not None and r.offset is not None:
                positions[r.partition] = max(positions.get(r.partition, 0), r.offset + 1)
    return positions


def _distinct(members: list[GroupMember]) -> list[tuple[int | None, bytes | None]]:
    """(partition, value) of every record reported, once per (partition, offset)."""
    got: dict[tuple[int | None, int | None], Record] = {}
    for m in members:
        for r in m.records:
            got.setdefault((r.partition, r.offset), r)
    return sorted((r.partition, r.value) for r in got.values())


def _topic_names(frames: Sequence[Any]) -> dict[Any, str]:
    """Topic id -> name from the Metadata answers in the recording (OffsetCommit/Fetch v10 use ids)."""
    names: dict[Any, str] = {}
    for f in frames:
        if f.api_key == ApiKey.METADATA and f.response is not None:
            for t in getattr(f.response, "topics", None) or ():
                if getattr(t, "name", None) and getattr(t, "topic_id", None) is not None:
                    names[t.topic_id] = t.name
    return names


def _offset_events(frames: Sequence[Any], group: str, topic: str
                   ) -> list[tuple[tuple[int, int], int, str, int, int]]:
    """((answered at ms, recording index), index, "commit" | "fetch", partition, offset): every
    commit the broker accepted and every committed offset it answered for ``group``/``topic``."""
    ids = _topic_names(frames)

    def ours(t: Any) -> bool:
        name = getattr(t, "name", None) or ids.get(getattr(t, "topic_id", None), "")
        return bool(name == topic)

    out: list[tuple[tuple[int, int], int, str, int, int]] = []
    for f in frames:
        req, resp = f.request, f.response
        if req is None or resp is None:
            continue
        order = (f.response_at_ms if f.response_at_ms is not None else f.at_ms, f.index)
        if f.api_key == ApiKey.OFFSET_COMMIT and req.group_id == group:
            for rt, st in zip(req.topics, resp.topics, strict=False):
                if not ours(rt):
                    continue
                sent = {p.partition_index: p.committed_offset for p in rt.partitions}
                for sp in st.partitions:
                    if sp.error_code == 0 and sp.partition_index in sent:
                        out.append((order, f.index, "commit", sp.partition_index, sent[sp.partition_index]))
        elif f.api_key == ApiKey.OFFSET_FETCH:
            answers: list[tuple[int, Any]] = [(g.error_code, g.topics) for g in getattr(resp, "groups", None) or ()
                                              if g.group_id == group]
            if getattr(req, "group_id", None) == group:  # v1-7: one group, answered at the top level
                answers.append((getattr(resp, "error_code", 0), resp.topics))
            for code, topics in answers:
                if code:
                    continue
                for t in topics or ():
                    if ours(t):
                        out.extend((order, f.index, "fetch", p.partition_index, p.committed_offset)
                                   for p in t.partitions if p.error_code == 0)
    return out


def committed_redeliveries(dups: Iterable[tuple[int, int]], frames: Sequence[Any], group: str, topic: str,
                           produced_from: Mapping[tuple[int, int], int]) -> list[str]:
    """The records of ``dups`` ((partition, offset) reported twice) whose second delivery Kafka's
    at-least-once guarantee does not allow, each with the reason.

    A consumer reads a partition again only from the committed offset an OffsetFetch answered
    (GroupCoordinatorService.fetchOffsets; the new owner after a rebalance, or the old one
    assigned again), and that answer is the last commit the broker accepted
    (OffsetMetadataManager.commitOffset). A redelivery of offset ``o`` is allowed when the
    recording has an OffsetFetch answer at or below ``o`` (-1: nothing committed, the reset policy
    starts at the log start), given after the record's batch began to be produced
    (``produced_from``: (partition, offset) -> recording index) while the last accepted commit did
    not cover ``o``. It is not when the broker answered below a commit it had accepted past ``o``
    (a lost commit), nor when no such answer explains it (the client re-read a committed record)."""
    events = sorted(_offset_events(frames, group, topic))
    bad = []
    for partition, offset in sorted(dups):
        last: int | None = None  # the last commit the broker accepted so far
        first_past: tuple[int, int] | None = None  # (offset, index) of the first commit past ``offset``
        explained = False
        regressed: tuple[int, int, int] | None = None  # (accepted, answered, index)
        since = produced_from.get((partition, offset), 0)
        for _order, index, kind, p, value in events:
            if p != partition:
                continue
            if kind == "commit":
                last = value
                if value > offset and first_past is None:
                    first_past = (value, index)
            elif value <= offset:
                if last is not None and last > offset:
                    regressed = regressed or (last, value, index)
                elif index >= since:
                    explained = True
        if regressed is not None:
            bad.append(f"partition {partition} offset {offset}: the broker accepted commit {regressed[0]}, "
                       f"then answered OffsetFetch {regressed[1]} (recording index {regressed[2]})")
        elif not explained and first_past is not None:
            bad.append(f"partition {partition} offset {offset}: the broker accepted commit {first_past[0]} "
                       f"(recording index {first_past[1]}) and no OffsetFetch answer at or below it, given while "
                       f"it was uncommitted, sent a consumer back")
        elif not explained:
            bad.append(f"partition {partition} offset {offset}: never committed past it, but no OffsetFetch "
                       f"answer at or below it explains a second read")
    return bad


def _judge(members: list[GroupMember], frames_of: Callable[[], Sequence[Any]] | None, group: str, topic: str,
           produced_from: Callable[[int, int], int]) -> str | None:
    """None when no record was delivered twice in a way Kafka forbids, else the failure reason."""
    seen = _seen(members)
    dups = sorted({x for x in seen if seen.count(x) > 1}, key=str)
    if not dups:
        return None
    if frames_of is None:
        return f"records delivered twice: {dups[:6]} (this broker records no traffic to tell whether they were committed)"
    pairs = [(int(p), int(o)) for p, o in dups if p is not None and o is not None]
    bad = committed_redeliveries(pairs, frames_of(), group, topic, {k: produced_from(*k) for k in pairs})
    if bad:
        return f"committed records delivered twice: {bad[:6]}"
    return None


class _Recording:
    """The broker's recording when the control keeps one (``recorded_frames``; the first call
    starts it), and the recording index at which each produced record's batch began."""

    def __init__(self, control: BrokerControl) -> None:
        self.frames_of: Callable[[], Sequence[Any]] | None = getattr(control, "recorded_frames", None)
        self.marks: dict[bytes | None, int] = {}
        if self.frames_of is not None:
            self.frames_of()

    def producing(self, batch: list[Record]) -> None:
        mark = len(self.frames_of()) if self.frames_of is not None else 0
        for r in batch:
            self.marks[r.value] = mark

    def judge(self, members: list[GroupMember], group: str, topic: str) -> str | None:
        values = {(r.partition, r.offset): r.value for m in members for r in m.records}
        return _judge(members, self.frames_of, group, topic,
                      lambda p, o: self.marks.get(values.get((p, o)), 0))


def group_scenario(
    adapter: ClientAdapter, bootstrap: str, control: BrokerControl, *, protocol: GroupProtocol, scenario: str
) -> ScenarioResult:
    """The two-member scenario above with the given group protocol."""
    topic = unique_name(f"kw-grp-{adapter.name}")
    group = unique_name(f"kw-g-{adapter.name}")
    all_parts = frozenset(range(PARTITIONS))
    control.create_topic(topic, PARTITIONS)
    members: list[GroupMember] = []
    describe = getattr(control, "describe_group", None)
    view = (lambda: str(describe(group))) if describe is not None else None
    recording = _Recording(control)
    try:
        a = adapter.start_member(bootstrap, topic, group, group_protocol=protocol)
        members.append(a)
        _wait(members, lambda: a.assignment == all_parts, STEP_TIMEOUT_S, "member A to own every partition", view)
        b = adapter.start_member(bootstrap, topic, group, group_protocol=protocol)
        members.append(b)

        def split() -> bool:
            return (
                bool(a.assignment and b.assignment)
                and not (a.assignment & b.assignment)
                and (a.assignment | b.assignment) == all_parts
            )

        _wait(members, split, STEP_TIMEOUT_S, "the partitions to split between A and B", view)
        split_seen = (sorted(a.assignment), sorted(b.assignment))
        # Produced after the split, so B consumes (and commits) its share itself.
        first = _batch("first", 0)
        recording.producing(first)
        adapter.produce(bootstrap, topic, first)
        _wait(
            members,
            lambda: len(set(_seen(members))) >= BATCH,
            STEP_TIMEOUT_S,
            "the first batch to be consumed",
        )
        wait_commits = getattr(control, "wait_for_commits", None)
        if wait_commits is not None:
            # A member reports a record once its commit call returned, which is not always once
            # the broker has it (item 4 above), so B leaves only once the broker holds the commits
            # of every record A or B reported: the survivor must then resume exactly there (no
            # duplicate), which is what this scenario checks.
            positions = _positions(members)
            if not wait_commits(group, topic, positions, STEP_TIMEOUT_S):
                raise ConformanceError(f"the commits {positions} of the reported records never reached the broker")
        b.stop(timeout_s=STEP_TIMEOUT_S)
        _wait([a], lambda: a.assignment == all_parts, STEP_TIMEOUT_S, "A to take over B's partitions", view)
        second = _batch("second", BATCH)
        recording.producing(second)
        adapter.produce(bootstrap, topic, second)
        _wait(
            [a],
            lambda: len(set(_seen(members))) >= 2 * BATCH,
            STEP_TIMEOUT_S,
            "A to consume the second batch",
        )
        a.stop(timeout_s=STEP_TIMEOUT_S)
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, scenario, str(exc))
    finally:
        for m in members:
            m.kill()
    twice = recording.judge(members, group, topic)
    if twice is not None:
        return ScenarioResult.failed(adapter.name, scenario, twice)
    want = sorted((r.partition, r.value) for r in first + second)
    got = _distinct(members)
    if want != got:
        return ScenarioResult.failed(
            adapter.name, scenario, f"content differs: {len(got)} records vs {len(want)}"
        )
    return ScenarioResult.passed(
        adapter.name,
        scenario,
        split=split_seen,
        a_records=len(members[0].records),
        b_records=len(members[1].records),
    )


def consumer_group(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Two members share a topic in a classic group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)."""
    return group_scenario(adapter, bootstrap, control, protocol="classic", scenario="consumer_group")


def kip848_group(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Two members share a topic in a KIP-848 consumer group (ConsumerGroupHeartbeat)."""
    if not adapter.supports_kip848:
        return ScenarioResult.skipped(adapter.name, "kip848_group", f"{adapter.name} has no KIP-848 consumer")
    return group_scenario(adapter, bootstrap, control, protocol="consumer", scenario="kip848_group")


def group_migration(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A two-member group is restarted member by member from classic to KIP-848 and back, without
    losing or re-reading committed records."""
    name = "group_migration"
    if not adapter.supports_kip848:
        return ScenarioResult.skipped(adapter.name, name, f"{adapter.name} has no KIP-848 consumer")
    topic = unique_name(f"kw-mig-{adapter.name}")
    group = unique_name(f"kw-gm-{adapter.name}")
    all_parts = frozenset(range(PARTITIONS))
    control.create_topic(topic, PARTITIONS)
    members: list[GroupMember] = []  # every member ever started, for the final count
    describe = getattr(control, "describe_group", None)
    view = (lambda: str(describe(group))) if describe is not None else None
    wait_commits = getattr(control, "wait_for_commits", None)
    recording = _Recording(control)
    batches: list[Record] = []
    steps: list[str] = []

    def start(protocol: GroupProtocol) -> GroupMember:
        m = adapter.start_member(bootstrap, topic, group, group_protocol=protocol)
        members.append(m)
        return m

    def split_and_consume(live: list[GroupMember], what: str) -> None:
        x, y = live

        def split() -> bool:
            return bool(x.assignment and y.assignment) and not (x.assignment & y.assignment) and (
                x.assignment | y.assignment) == all_parts

        _wait(live, split, STEP_TIMEOUT_S, f"the partitions to split {what}", view)
        batch = _batch(f"b{len(steps)}", len(batches))
        batches.extend(batch)
        recording.producing(batch)
        adapter.produce(bootstrap, topic, batch)
        _wait(live, lambda: len(set(_seen(members))) >= len(batches), STEP_TIMEOUT_S,
              f"the batch produced {what} to be consumed")
        steps.append(f"{what}: {sorted(x.assignment)} / {sorted(y.assignment)}")

    def restart(old: GroupMember, protocol: GroupProtocol) -> GroupMember:
        if wait_commits is not None:
            # Every reported record committed at the broker (see group_scenario) before a restart.
            positions = _positions(members)
            if not wait_commits(group, topic, positions, STEP_TIMEOUT_S):
                raise ConformanceError(f"the commits {positions} of the reported records never reached the broker")
        old.stop(timeout_s=STEP_TIMEOUT_S)
        return start(protocol)

    try:
        a = start("classic")
        _wait([a], lambda: a.assignment == all_parts, STEP_TIMEOUT_S, "member A to own every partition", view)
        b = start("classic")
        split_and_consume([a, b], "between classic A and B")
        a = restart(a, "consumer")
        split_and_consume([a, b], "after A came back with group.protocol=consumer")
        b = restart(b, "consumer")
        split_and_consume([a, b], "after B came back with group.protocol=consumer")
        a = restart(a, "classic")
        split_and_consume([a, b], "after A went back to classic")
        b = restart(b, "classic")
        split_and_consume([a, b], "after B went back to classic")
        a.stop(timeout_s=STEP_TIMEOUT_S)
        b.stop(timeout_s=STEP_TIMEOUT_S)
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, name, f"{exc} (steps done: {steps})")
    finally:
        for m in members:
            m.kill()
    twice = recording.judge(members, group, topic)
    if twice is not None:
        return ScenarioResult.failed(adapter.name, name, twice)
    want = sorted((r.partition, r.value) for r in batches)
    got = _distinct(members)
    if want != got:
        return ScenarioResult.failed(adapter.name, name, f"content differs: {len(got)} records vs {len(want)}")
    return ScenarioResult.passed(adapter.name, name, steps=steps, members=len(members))

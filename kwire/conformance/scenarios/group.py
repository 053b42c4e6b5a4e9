"""Consumer group of two members: split, one leaves, the other resumes from commits.

1. Member A joins and owns all ``PARTITIONS`` partitions; then member B joins. Wait
   until their assignments are disjoint, both non-empty and together cover every
   partition (a rebalance happened).
2. Produce ``BATCH`` records; wait until A and B consumed them between them, each
   from its own partitions. B leaves (LeaveGroup).
3. Wait until A owns every partition; produce a second batch; A must consume it.
4. Every record is reported exactly once over both members: members report records
   only once committed (or commit before giving a partition up), so A resuming B's
   partitions from B's committed offsets sees no duplicate and no gap.

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
from collections.abc import Callable

from kwire.conformance.clients.base import ClientAdapter, GroupMember, GroupProtocol, Record
from kwire.conformance.scenarios.base import BrokerControl, ScenarioResult, unique_name
from kwire.errors import ConformanceError

__all__ = ["consumer_group", "kip848_group", "group_scenario", "group_migration"]

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
        adapter.produce(bootstrap, topic, first)
        _wait(
            members,
            lambda: len(set(_seen(members))) >= BATCH,
            STEP_TIMEOUT_S,
            "the first batch to be consumed",
        )
        wait_commits = getattr(control, "wait_for_commits", None)
        if wait_commits is not None:
            # A member reports records once committed; with auto-commit (kcat) "committed" means
            # "soon", so B leaves only once the broker holds its commits: the survivor must then
            # resume exactly there (no duplicate), which is what this scenario checks.
            positions: dict[int, int] = {}
            for r in b.records:
                if r.partition is not None and r.offset is not None:
                    positions[r.partition] = max(positions.get(r.partition, 0), r.offset + 1)
            if not wait_commits(group, topic, positions, STEP_TIMEOUT_S):
                raise ConformanceError(f"B's commits {positions} never reached the broker")
        b.stop(timeout_s=STEP_TIMEOUT_S)
        _wait([a], lambda: a.assignment == all_parts, STEP_TIMEOUT_S, "A to take over B's partitions", view)
        second = _batch("second", BATCH)
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
    seen = _seen(members)
    dups = sorted({x for x in seen if seen.count(x) > 1}, key=str)
    if dups:
        return ScenarioResult.failed(adapter.name, scenario, f"records delivered twice: {dups[:6]}")
    want = sorted((r.partition, r.value) for r in first + second)
    got = sorted((r.partition, r.value) for m in members for r in m.records)
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
        adapter.produce(bootstrap, topic, batch)
        _wait(live, lambda: len(set(_seen(members))) >= len(batches), STEP_TIMEOUT_S,
              f"the batch produced {what} to be consumed")
        steps.append(f"{what}: {sorted(x.assignment)} / {sorted(y.assignment)}")

    def restart(old: GroupMember, protocol: GroupProtocol) -> GroupMember:
        if wait_commits is not None:
            positions: dict[int, int] = {}
            for r in old.records:
                if r.partition is not None and r.offset is not None:
                    positions[r.partition] = max(positions.get(r.partition, 0), r.offset + 1)
            if not wait_commits(group, topic, positions, STEP_TIMEOUT_S):
                raise ConformanceError(f"the stopping member's commits {positions} never reached the broker")
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
    seen = _seen(members)
    dups = sorted({x for x in seen if seen.count(x) > 1}, key=str)
    if dups:
        return ScenarioResult.failed(adapter.name, name, f"records delivered twice: {dups[:6]}")
    want = sorted((r.partition, r.value) for r in batches)
    got = sorted((r.partition, r.value) for m in members for r in m.records)
    if want != got:
        return ScenarioResult.failed(adapter.name, name, f"content differs: {len(got)} records vs {len(want)}")
    return ScenarioResult.passed(adapter.name, name, steps=steps, members=len(members))

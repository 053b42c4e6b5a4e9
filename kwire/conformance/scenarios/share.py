"""Share-group scenarios (KIP-932): real share consumers against a broker whose clock and group
configs the scenario controls (kwire's control API; other targets skip).

* ``share_exclusive``: two consumers of one group on one partition: no record is held by both at
  once, and every record is accepted exactly once.
* ``share_lock_expiry``: A sits on a record; the broker clock passes the 30 s lock; B receives it
  with a higher delivery count (+1, or +2 where a client's warm-up fetch spends one: kafkats).
* ``share_delivery_limit``: with ``share.delivery.count.limit`` 2 a record released at its second
  delivery is archived and never delivered again.
* ``share_dead_consumer``: A dies (killed) holding records; once its session has timed out on the
  broker clock, B receives them.
* ``share_commit``: explicit acknowledgement committed synchronously, then asynchronously.
* ``share_dlq``: a rejected record and one released until the delivery limit each land in the
  group's dead-letter topic once (KIP-1191); the consumer's acknowledgements all succeed.
* ``share_empty_first_assignment``: a new group's first heartbeat is answered with epoch 1 and an
  empty assignment, as Kafka answers it before the share state is initialised (HB-6); the
  consumer keeps polling and still gets every record, each once.
* ``share_crash_after_ack``: the broker is killed (kill -9: nothing written after the answer) right
  after a commitSync of ACCEPTs and a REJECT returned, and restarted on its data dir and ports; the
  consumer carries on with two new records: nothing accepted or rejected comes back, and the
  rejected record has exactly one dead letter.
* ``share_ack_after_leave``: a member holding records drops out of the group (its session times
  out on the broker clock while the locks still run); its acknowledgements are still accepted,
  because a share session outlives group membership (SS-9).
* ``dlq_read`` (every client, not only share consumers): kwire writes a share group's dead-letter
  record (KIP-1191); the client reads the DLQ topic as any topic and sees the ``__dlq.errors.*``
  headers in order.
"""

from __future__ import annotations

import time
from typing import Any, Protocol, runtime_checkable

from kwire.conformance.clients.base import ClientAdapter
from kwire.conformance.clients.share import Delivered, ShareMember, register_adapter
from kwire.conformance.scenarios.base import BrokerControl, ScenarioResult, unique_name
from kwire.errors import ConformanceError

__all__ = ["CrashControl", "ShareControl", "SHARE_SCENARIOS"]

LOCK_MS = 30_000
SESSION_MS = 45_000


@runtime_checkable
class ShareControl(Protocol):
    """What the share scenarios need of the broker besides its bootstrap address."""

    name: str

    def create_topic(self, topic: str, partitions: int) -> None: ...
    def produce_values(self, topic: str, values: list[bytes]) -> None: ...
    def set_group_config(self, group: str, key: str, value: str) -> None: ...
    def advance(self, ms: int) -> None: ...
    def enable_dlq(self, group: str, dlq_topic: str) -> None:
        """Create ``dlq_topic`` (opted in) and make it ``group``'s dead-letter topic."""
        ...

    def dead_letters(self, dlq_topic: str) -> list[tuple[int, str]]:
        """(source offset, error message) of each record in ``dlq_topic``."""
        ...

    def reject_into_dlq(self, topic: str, group: str, dlq_topic: str, values: list[bytes]) -> None:
        """Produce ``values`` to ``topic``, have a share member of ``group`` reject them all and wait
        until they are in ``dlq_topic``."""
        ...

    def wait_share_start_offset(self, group: str, topic: str, partition: int, want: int, timeout_s: float) -> bool:
        """Wait until the group's share-partition start offset is ``want``."""
        ...

    def describe_share_group(self, group: str) -> dict[str, Any] | None:
        """The group's members ({"members": {id: {"member_epoch", "assignment", ...}}}), or None."""
        ...


@runtime_checkable
class CrashControl(Protocol):
    """A broker the scenario may kill (as kill -9 does) and start again on its data dir and ports."""

    name: str

    def crash_restart(self) -> None: ...


def _prepare(adapter: ClientAdapter, bootstrap: str, control: BrokerControl, scenario: str,
             needs: tuple[str, ...] = ()) -> tuple[ShareControl, str, str] | ScenarioResult:
    """Skip unless the client's driver announces a share consumer (and ``needs``: ``base.FEATURES``
    names) and the broker offers a clock and group configs; else a fresh topic and group."""
    for capability in ("share_consumer", *needs):
        reason = adapter.lacks(capability)
        if reason is not None:
            return ScenarioResult.skipped(adapter.name, scenario, reason)
    if not isinstance(control, ShareControl):
        return ScenarioResult.skipped(adapter.name, scenario, f"{control.name} offers no clock or group configs")
    register_adapter(adapter)
    topic, group = unique_name(f"kw-share-{adapter.name}"), unique_name(f"kw-sg-{adapter.name}")
    control.create_topic(topic, 1)
    control.set_group_config(group, "share.auto.offset.reset", "earliest")
    return control, topic, group


def _member(adapter: ClientAdapter, bootstrap: str, group: str, topic: str, members: list[ShareMember],
            **kw: Any) -> ShareMember:
    m = ShareMember(adapter, bootstrap, group, **kw)
    members.append(m)
    m.subscribe(topic)
    return m


def _run(scenario: str, adapter: ClientAdapter, bootstrap: str, control: BrokerControl, body: Any,
         needs: tuple[str, ...] = ()) -> ScenarioResult:
    prepared = _prepare(adapter, bootstrap, control, scenario, needs)
    if isinstance(prepared, ScenarioResult):
        return prepared
    ctl, topic, group = prepared
    members: list[ShareMember] = []
    try:
        details = body(ctl, topic, group, lambda **kw: _member(adapter, bootstrap, group, topic, members, **kw))
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, scenario, str(exc))
    finally:
        for m in members:
            m.kill()
    return ScenarioResult.passed(adapter.name, scenario, **(details or {}))


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConformanceError(message)


def _wait_start_offset(ctl: ShareControl, group: str, topic: str, want: int, timeout_s: float = 30) -> None:
    if not ctl.wait_share_start_offset(group, topic, 0, want, timeout_s):
        raise ConformanceError(f"the share start offset never reached {want} in {timeout_s:.0f}s")


def share_exclusive(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Two share consumers on one partition: no record held by both, each accepted once."""

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        ctl.produce_values(topic, [b"%d" % i for i in range(30)])
        a, b = member(), member()
        held: dict[int, set[int]] = {0: set(), 1: set()}
        seen: list[int] = []
        deadline = time.monotonic() + 90
        while len(seen) < 30:
            _check(time.monotonic() < deadline, f"{len(seen)} of 30 records accepted in 90 s")
            for i, m in enumerate((a, b)):
                got = m.poll(300)
                held[i] |= {r.offset for r in got}
                _check(not held[0] & held[1], f"records held by both consumers: {sorted(held[0] & held[1])}")
                for r in got:
                    m.ack(r, "ACCEPT")
                    seen.append(r.offset)
                if got:
                    m.commit()
                    held[i].clear()
        _check(sorted(seen) == list(range(30)), f"accepted {sorted(seen)}")
        return {"accepted": len(seen)}

    return _run("share_exclusive", adapter, bootstrap, control, body)


def share_lock_expiry(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A lock that runs out on the broker clock: the record goes to another member, count up."""

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        ctl.produce_values(topic, [b"x"])
        a = member()
        (held,) = a.poll_until(1)
        ctl.advance(LOCK_MS + 1000)
        b = member()
        (again,) = b.poll_until(1)
        # At least one more delivery (a client's own warm-up fetch may spend another: kafkats).
        _check(again.offset == held.offset and again.delivery_count > held.delivery_count,
               f"after the lock ran out B got {again}, A had {held}")
        b.ack(again, "ACCEPT")
        b.commit()
        _wait_start_offset(ctl, group, topic, 1)
        return {"delivery_counts": [held.delivery_count, again.delivery_count]}

    return _run("share_lock_expiry", adapter, bootstrap, control, body)


def share_delivery_limit(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A record released at every delivery is archived at the limit (2), never delivered again."""

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        ctl.set_group_config(group, "share.delivery.count.limit", "2")
        ctl.produce_values(topic, [b"poison"])
        c = member()
        counts: list[int] = []
        deadline = time.monotonic() + 60
        # Release whatever comes until the broker archives the record (start offset 1).
        while not ctl.wait_share_start_offset(group, topic, 0, 1, 0.05):
            _check(time.monotonic() < deadline, f"not archived after deliveries {counts}")
            for r in c.poll(300):
                counts.append(r.delivery_count)
                c.ack(r, "RELEASE")
                c.commit()
        _check(bool(counts) and counts[-1] == 2 and counts == sorted(set(counts)),
               f"delivery counts {counts}: the last must be the limit 2")
        extra = c.poll(500)
        _check(not extra, f"delivered again past the limit: {extra}")
        return {"delivery_counts": counts}

    return _run("share_delivery_limit", adapter, bootstrap, control, body)


def share_dead_consumer(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A consumer killed mid-batch: once its session is over, its records go to another member."""

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        ctl.produce_values(topic, [b"a", b"b"])
        a = member()
        got = a.poll_until(2)
        a.kill()
        ctl.advance(SESSION_MS + 1000)  # its session is over whatever the connection did
        b = member()
        # Accept each as it comes: records that failed often are handed out one by one (AQ-6).
        again: list[Delivered] = []
        deadline = time.monotonic() + 60
        while len(again) < 2:
            _check(time.monotonic() < deadline, f"B got {again} of what A held {got}")
            for r in b.poll(300):
                again.append(r)
                b.ack(r, "ACCEPT")
                b.commit()
        _check(sorted(r.offset for r in again) == sorted(r.offset for r in got),
               f"B got {again} of what A held {got}")
        _check(all(r2.delivery_count > r1.delivery_count for r1, r2 in
                   zip(sorted(got, key=lambda r: r.offset), sorted(again, key=lambda r: r.offset), strict=True)),
               f"delivery counts did not grow: {got} -> {again}")
        return {}

    return _run("share_dead_consumer", adapter, bootstrap, control, body)


def share_commit(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Explicit acknowledgement committed synchronously, then asynchronously."""

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        ctl.produce_values(topic, [b"a"])
        c = member()
        (r,) = c.poll_until(1)
        c.ack(r, "ACCEPT")
        results = c.commit()
        _check(all(line.endswith(" ok") for line in results), f"commitSync: {results}")
        _wait_start_offset(ctl, group, topic, 1)
        ctl.produce_values(topic, [b"b"])
        (r,) = c.poll_until(1)
        c.ack(r, "ACCEPT")
        c.commit_async()
        c.poll(300)  # the async result arrives with a later poll
        _wait_start_offset(ctl, group, topic, 2)
        _check(all("error" not in line for line in c.async_commits), f"commitAsync: {c.async_commits}")
        return {"sync": results, "async": c.async_commits}

    return _run("share_commit", adapter, bootstrap, control, body)


def share_dlq(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """REJECT and the delivery limit write one dead-letter record each (KIP-1191)."""

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        dlq = f"dlq.{group}"
        ctl.enable_dlq(group, dlq)
        ctl.set_group_config(group, "share.delivery.count.limit", "2")
        ctl.produce_values(topic, [b"bad", b"poison"])
        c = member()
        deadline = time.monotonic() + 60
        while not ctl.wait_share_start_offset(group, topic, 0, 2, 0.05):
            _check(time.monotonic() < deadline, "the two records were never archived")
            for r in c.poll(300):
                c.ack(r, "REJECT" if r.value == "bad" else "RELEASE")
                results = c.commit()
                _check(all(line.endswith(" ok") for line in results), f"commit: {results}")
        written = ctl.dead_letters(dlq)
        _check(sorted(written) == [(0, "Offset rejected by client."),
                                   (1, "Offset delivery count exceeded the threshold.")],
               f"dead letters {written}")
        return {"dead_letters": len(written)}

    return _run("share_dlq", adapter, bootstrap, control, body)


def share_empty_first_assignment(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """HB-6: the first heartbeat of a new group's member gets epoch 1 and no partitions; the member
    keeps polling, gets its partition on a later heartbeat and then every record once."""

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        count = 20
        ctl.produce_values(topic, [b"%d" % i for i in range(count)])
        m = member()
        early: list[Delivered] = []
        deadline = time.monotonic() + 30
        while not (ctl.describe_share_group(group) or {}).get("members"):
            _check(time.monotonic() < deadline, "the consumer never joined the group in 30 s")
            early += m.poll(100)
        (first,) = (ctl.describe_share_group(group) or {})["members"].values()
        _check(first["member_epoch"] == 1 and not first["assignment"] and not early,
               f"first answer: epoch {first['member_epoch']}, assignment {first['assignment']}, "
               f"{len(early)} records before it (a new share group's first assignment is empty)")
        seen: list[int] = []
        deadline = time.monotonic() + 60
        while len(seen) < count:
            _check(time.monotonic() < deadline, f"{len(seen)} of {count} records in 60 s after an empty first "
                                                f"assignment")
            got = m.poll(500)
            for r in got:
                m.ack(r, "ACCEPT")
                seen.append(r.offset)
            if got:
                _check(all(x.endswith(" ok") for x in m.commit()), "a commit failed")
        _check(sorted(seen) == list(range(count)), f"accepted {sorted(seen)}")
        return {"first_epoch": 1, "accepted": len(seen)}

    return _run("share_empty_first_assignment", adapter, bootstrap, control, body)


def share_crash_after_ack(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A broker crash right after a confirmed acknowledgement: nothing confirmed comes back."""
    if not isinstance(control, CrashControl):
        return ScenarioResult.skipped(adapter.name, "share_crash_after_ack",
                                      f"{control.name} cannot crash and restart the broker")

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        dlq = f"dlq.{group}"
        ctl.enable_dlq(group, dlq)
        ctl.produce_values(topic, [b"%d" % i for i in range(6)])
        c = member()
        got = {r.offset: r for r in c.poll_until(6)}
        _check(sorted(got) == list(range(6)), f"first deliveries {sorted(got)}")
        for off in (0, 1, 2, 4, 5):
            c.ack(got[off], "ACCEPT")
        c.ack(got[3], "REJECT")
        results = c.commit()
        _check(all(line.endswith(" ok") for line in results), f"commitSync before the crash: {results}")
        assert isinstance(control, CrashControl)
        control.crash_restart()  # kill -9 right after the answer
        ctl.produce_values(topic, [b"6", b"7"])
        after: list[Delivered] = []
        deadline = time.monotonic() + 90
        while not ctl.wait_share_start_offset(group, topic, 0, 8, 0.05):
            _check(time.monotonic() < deadline, f"after the crash: {after} in 90 s, 6 and 7 expected")
            for r in c.poll(300):
                after.append(r)
                _check(r.offset >= 6, f"offset {r.offset} came back after its acknowledgement was confirmed")
                c.ack(r, "ACCEPT")
                c.commit()
        _check(sorted(r.offset for r in after) == [6, 7], f"after the crash: {after}")
        extra = c.poll(500)
        _check(not extra, f"delivered after everything was acknowledged: {extra}")
        letters = ctl.dead_letters(dlq)
        _check(letters == [(3, "Offset rejected by client.")], f"dead letters {letters}")
        return {"after_crash": [r.offset for r in after]}

    return _run("share_crash_after_ack", adapter, bootstrap, control, body)


def share_ack_after_leave(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Acknowledgements after the member left the group: the share session still works (SS-9)."""

    def body(ctl: ShareControl, topic: str, group: str, member: Any) -> dict[str, Any]:
        # Locks (60 s, the broker's maximum) outlast the member's 45 s session timeout.
        ctl.set_group_config(group, "share.record.lock.duration.ms", "60000")
        ctl.produce_values(topic, [b"a", b"b"])
        c = member()
        got = c.poll_until(2)
        ctl.advance(SESSION_MS + 1000)  # the member is out of the group; its records are still locked
        for r in got:
            c.ack(r, "ACCEPT")
        results = c.commit()
        _check(all(line.endswith(" ok") for line in results), f"commit after leaving the group: {results}")
        _wait_start_offset(ctl, group, topic, 2)
        return {"committed": results}

    return _run("share_ack_after_leave", adapter, bootstrap, control, body)


DLQ_HEADERS = ["__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset", "__dlq.errors.group",
               "__dlq.errors.delivery.count", "__dlq.errors.message"]


def dlq_read(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Any client reads a share group's dead-letter topic with its headers."""
    if not isinstance(control, ShareControl):
        return ScenarioResult.skipped(adapter.name, "dlq_read", f"{control.name} writes no dead-letter records")
    topic, group = unique_name("kw-dlqsrc"), unique_name("kw-dlqg")
    dlq = "dlq." + unique_name("kw")
    control.create_topic(topic, 1)
    try:
        control.reject_into_dlq(topic, group, dlq, [b"rejected"])
        got = adapter.consume(bootstrap, dlq, group_id=None, count=1, timeout_s=30)
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, "dlq_read", str(exc))
    if len(got) != 1:
        return ScenarioResult.failed(adapter.name, "dlq_read", f"read {len(got)} dead-letter records, not 1")
    keys = [k for k, _ in got[0].headers]
    if keys != DLQ_HEADERS:
        return ScenarioResult.failed(adapter.name, "dlq_read", f"headers {keys}")
    values = {k: (v or b"").decode() for k, v in got[0].headers}
    if values["__dlq.errors.group"] != group or values["__dlq.errors.message"] != "Offset rejected by client.":
        return ScenarioResult.failed(adapter.name, "dlq_read", f"header values {values}")
    return ScenarioResult.passed(adapter.name, "dlq_read")


SHARE_SCENARIOS = {
    "share_exclusive": share_exclusive,
    "share_lock_expiry": share_lock_expiry,
    "share_delivery_limit": share_delivery_limit,
    "share_dead_consumer": share_dead_consumer,
    "share_commit": share_commit,
    "share_dlq": share_dlq,
    "share_empty_first_assignment": share_empty_first_assignment,
    "share_crash_after_ack": share_crash_after_ack,
    "dlq_read": dlq_read,
    "share_ack_after_leave": share_ack_after_leave,
}

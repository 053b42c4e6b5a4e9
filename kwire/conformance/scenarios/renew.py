"""RENEW (KIP-1222) scenarios: a share consumer extends its acquisition lock instead of finishing a
record, against a broker whose clock the scenario drives (kwire's control API; other targets skip).
Every scenario needs the driver's ``share_renew`` capability; a client without it skips with the
reason its driver gives.

* ``renew_hold`` (RN-4, RN-7, AQ-12): with the group's lock at 15 s, A holds a record for 30 s of
  broker time by renewing every 10 s while B polls the same partition all the while and never
  receives it; the delivery count never changes, the client reports the 15 s lock, and A's ACCEPT
  finishes the record; both consumers then close.
* ``renew_expired`` (RN-5, AQ-12): A renews after the lock ran out: the client reports the
  acknowledgement error (INVALID_RECORD_STATE) and B receives the record with delivery count 2.
* ``renew_mixed`` (RN-4, AK-4, AK-12): ACCEPT, RELEASE, REJECT and RENEW of four records in one
  commit: one accepted, one redelivered (count 2), one archived, one still held past its first lock.
* ``renew_only_fetch`` (RN-2, RN-3, CR-7): a RENEW acknowledged without a commit reaches the broker
  with the next poll; in a ShareFetch (the Java client) that fetch is renew-only (IsRenewAck,
  MaxWaitMs, MinBytes, MaxBytes and MaxRecords 0) and acquires nothing; a client that sends it in
  a ShareAcknowledge at once (@kafkats/client) passes too, the details count both.
* ``renew_disabled`` (RN-6, RN-1, CR-6): with ``share.renew.acknowledge.enable=false`` the broker
  refuses RENEW (the client sees the error and the lock runs out as if nothing was sent); against
  a broker before KIP-1222 (share.version 1, ShareFetch/ShareAcknowledge up to v1) the client
  refuses RENEW itself and sends none.

The client rules CR-6 (RENEW only after v2 was advertised), CR-7 (renew-only fetch fields 0),
CR-9 (only held records) and CR-11 (a record is renewed again only after the broker answered its
previous renewal: the client polls in between) are checked over every scenario's recording.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kwire.conformance.clients.base import ClientAdapter
from kwire.conformance.clients.share import Delivered, ShareMember
from kwire.conformance.scenarios.base import BrokerControl, ScenarioResult
from kwire.conformance.scenarios.share import LOCK_MS, ShareControl, _check, _run, _wait_start_offset
from kwire.errors import ConformanceError

__all__ = ["RENEW_SCENARIOS"]

# The group's lock is the shortest Kafka allows (group.share.min.record.lock.duration.ms 15 s) and
# the scenario renews every 10 s of broker time: the clock jumps stay well inside the member's
# 45 s session, which a client keeps alive with heartbeats on its own, real-time clock.
RENEW_LOCK_MS = 15_000
RENEW_EVERY_MS = 10_000
Member = Callable[..., ShareMember]


def _short_lock(ctl: ShareControl, group: str) -> None:
    ctl.set_group_config(group, "share.record.lock.duration.ms", str(RENEW_LOCK_MS))


def _states(ctl: ShareControl, group: str, topic: str) -> dict[int, tuple[str, int]] | None:
    """offset -> (state, delivery count), where the control can tell."""
    states = getattr(ctl, "share_states", None)
    return None if states is None else dict(states(group, topic, 0))


def _renew(m: ShareMember, r: Delivered) -> list[str]:
    """acknowledge(RENEW) and commit: the commit's per-partition results (none where the client
    sends each acknowledgement as it is made)."""
    m.ack(r, "RENEW")
    return m.commit()


def _again(m: ShareMember, r: Delivered, timeout_s: float = 30.0) -> Delivered:
    """Poll until the renewed record comes back, as the driver protocol promises (KafkaShareConsumer's
    contract: a successfully renewed record is returned again by poll and must be acknowledged
    anew); its delivery count is unchanged."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = m.poll(300)
        same = [x for x in got if x.offset == r.offset]
        others = [x for x in got if x.offset != r.offset]
        _check(not others, f"renewing {r.offset} the poll returned other records: {others}")
        if same:
            _check(same[0].delivery_count == r.delivery_count,
                   f"the renewed record came back with delivery count {same[0].delivery_count}, "
                   f"not {r.delivery_count}")
            return same[0]
        _check(time.monotonic() < deadline, f"the renewed record {r.offset} did not come back from poll in "
                                            f"{timeout_s:.0f}s")


def renew_hold(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """RENEW keeps a record past twice its lock while another consumer polls; its delivery count stays."""

    def body(ctl: ShareControl, topic: str, group: str, member: Member) -> dict[str, Any]:
        _short_lock(ctl, group)
        ctl.produce_values(topic, [b"slow"])
        a = member()
        (r,) = a.poll_until(1)
        first = r.delivery_count  # 1, or 2 where a client's warm-up fetch spent one (kafkats)
        b = member()
        stolen: list[Delivered] = []
        renewals = 0
        for _ in range(3):  # 30 s of broker time, twice the lock
            stolen += b.poll(300)
            ctl.advance(RENEW_EVERY_MS)
            results = _renew(a, r)
            _check(all(x.endswith(" ok") for x in results), f"RENEW {renewals + 1}: {results}")
            renewals += 1
            stolen += b.poll(300)
            r = _again(a, r)  # the client hands the renewed record back; it is renewed anew next round
            _check(not stolen, f"the competing consumer received {stolen} while it was renewed")
        states = _states(ctl, group, topic)
        if states is not None:
            _check(states.get(r.offset) == ("ACQUIRED", first),
                   f"after {renewals * RENEW_EVERY_MS // 1000} s of renewals the broker has {states}")
        lock = a.lock_timeout_ms() if adapter.lacks("share_lock_timeout") is None else None
        _check(lock in (None, RENEW_LOCK_MS), f"the client reports an acquisition lock timeout of {lock} ms")
        a.ack(r, "ACCEPT")
        results = a.commit()
        _check(all(x.endswith(" ok") for x in results), f"ACCEPT after the renewals: {results}")
        _wait_start_offset(ctl, group, topic, 1)
        stolen += b.poll(300)
        _check(not stolen, f"the competing consumer received {stolen}")
        a.close()  # the client's last acknowledgements and its leaving: nothing more is acknowledged
        b.close()
        return {"renewals": renewals, "held_ms": renewals * RENEW_EVERY_MS, "lock_timeout_ms": lock}

    return _run("renew_hold", adapter, bootstrap, control, body, needs=("share_renew",))


def renew_expired(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """RENEW after the lock ran out fails at the client; another consumer gets the record with a
    higher delivery count."""

    def body(ctl: ShareControl, topic: str, group: str, member: Member) -> dict[str, Any]:
        ctl.produce_values(topic, [b"late"])
        a = member()
        (r,) = a.poll_until(1)
        ctl.advance(LOCK_MS + 1000)
        error = ""
        try:
            results = _renew(a, r)
            error = " ".join(x for x in results if not x.endswith(" ok"))
        except ConformanceError as exc:  # a client that sends at once may fail the acknowledge itself
            error = str(exc)
        _check(bool(error), "RENEW of a record whose lock had run out was reported as a success")
        b = member()
        (again,) = b.poll_until(1)
        # At least one more delivery (a client's own warm-up fetch may spend another: kafkats).
        _check(again.offset == r.offset and again.delivery_count > r.delivery_count,
               f"after the failed RENEW B got {again}, A had {r}")
        b.ack(again, "ACCEPT")
        results = b.commit()
        _check(all(x.endswith(" ok") for x in results), f"B's ACCEPT: {results}")
        _wait_start_offset(ctl, group, topic, 1)
        return {"renew_error": error[:200], "delivery_counts": [r.delivery_count, again.delivery_count]}

    return _run("renew_expired", adapter, bootstrap, control, body, needs=("share_renew",))


def renew_mixed(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """ACCEPT, RELEASE, REJECT and RENEW in one commit; each record ends as its type says."""

    def body(ctl: ShareControl, topic: str, group: str, member: Member) -> dict[str, Any]:
        _short_lock(ctl, group)
        ctl.produce_values(topic, [b"accept", b"release", b"reject", b"renew"])
        a = member()
        got = a.poll_until(4)
        _check(sorted(r.offset for r in got) == [0, 1, 2, 3], f"first poll(s): {got}")
        by_value = {r.value: r for r in got}
        ctl.advance(RENEW_EVERY_MS)
        for value, kind in (("accept", "ACCEPT"), ("release", "RELEASE"), ("reject", "REJECT"), ("renew", "RENEW")):
            a.ack(by_value[value], kind)
        results = a.commit()
        _check(all(x.endswith(" ok") for x in results), f"the mixed commit: {results}")
        ctl.advance(RENEW_EVERY_MS)  # past the first lock: only the renewal keeps offset 3 held
        count = {r.offset: r.delivery_count for r in got}
        states = _states(ctl, group, topic)
        if states is not None:
            # The released record is acquirable at once: a ShareFetch the client has parked (or sends
            # meanwhile) may already hold it again, one delivery later, as on Kafka, where the
            # acknowledgement completes delayed share fetches (SharePartitionManager.acknowledge).
            released_ok = states.get(1) in (("AVAILABLE", count[1]), ("ACQUIRED", count[1] + 1))
            _check(released_ok and states.get(3) == ("ACQUIRED", count[3])
                   and states.get(2, ("ARCHIVED", 0))[0] == "ARCHIVED",
                   f"after the mixed commit the broker has {states}")
        renewed = _again(a, by_value["renew"])  # handed back first: it must be acknowledged anew
        a.ack(renewed, "ACCEPT")
        a.commit()
        released: Delivered | None = None
        deadline = time.monotonic() + 60
        while released is None:
            _check(time.monotonic() < deadline, "the released record never came back")
            for r in a.poll(300):
                _check(r.offset == 1, f"offset {r.offset} ({r.value}) delivered again after its "
                                      f"{r.value.upper()}")
                released = r
        _check(released.delivery_count > count[1],
               f"the released record came back with count {released.delivery_count}")
        a.ack(released, "ACCEPT")
        results = a.commit()
        _check(all(x.endswith(" ok") for x in results), f"the final ACCEPT: {results}")
        _wait_start_offset(ctl, group, topic, 4)
        return {"released_count": released.delivery_count}

    return _run("renew_mixed", adapter, bootstrap, control, body, needs=("share_renew",))


def renew_only_fetch(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A RENEW acknowledged without a commit reaches the broker with the next poll; where it travels
    in a ShareFetch, that fetch is renew-only (all limits 0) and acquires nothing."""
    frames_of = getattr(control, "recorded_frames", None)
    if frames_of is None:
        return ScenarioResult.skipped(adapter.name, "renew_only_fetch", f"{control.name} records no traffic")

    def body(ctl: ShareControl, topic: str, group: str, member: Member) -> dict[str, Any]:
        _short_lock(ctl, group)
        ctl.produce_values(topic, [b"a", b"b"])
        a = member()
        got = a.poll_until(2)
        count = {r.offset: r.delivery_count for r in got}
        first = len(frames_of())
        ctl.advance(RENEW_EVERY_MS)
        for r in got:
            a.ack(r, "RENEW")
        # No commit: the renewals leave with the next poll, which must not fetch anything else;
        # the renewed records then come back from poll.
        back: dict[int, Delivered] = {}
        deadline = time.monotonic() + 30
        while len(back) < len(got):
            _check(time.monotonic() < deadline, f"renewed records back after 30 s: {sorted(back)}")
            for r in a.poll(300):
                _check(r.offset in count and r.delivery_count == count[r.offset],
                       f"after RENEW the poll returned {r}")
                back[r.offset] = r
        renews = [f for f in frames_of()[first:] if f.api_key in (78, 79) and f.request is not None
                  and getattr(f.request, "is_renew_ack", False)]
        fetches = [f for f in renews if f.api_key == 78]
        _check(bool(renews), "no request with IsRenewAck reached the broker")
        for f in fetches:
            req = f.request
            _check((req.max_wait_ms, req.min_bytes, req.max_bytes, req.max_records) == (0, 0, 0, 0),
                   f"renew-only ShareFetch #{f.index} with MaxWaitMs {req.max_wait_ms}, MinBytes {req.min_bytes}, "
                   f"MaxBytes {req.max_bytes}, MaxRecords {req.max_records}")
            acquired = [x for t in (f.response.responses if f.response is not None else ()) or ()
                        for p in t.partitions or () for x in p.acquired_records or ()]
            _check(not acquired, f"renew-only ShareFetch #{f.index} acquired records: {acquired}")
        ctl.advance(RENEW_EVERY_MS)  # past the first lock
        states = _states(ctl, group, topic)
        if states is not None:
            _check(states == {o: ("ACQUIRED", n) for o, n in count.items()},
                   f"after the renewals the broker has {states}")
        for r in back.values():
            a.ack(r, "ACCEPT")
        a.commit()
        _wait_start_offset(ctl, group, topic, 2)
        return {"renew_fetches": len(fetches), "renew_acknowledges": len(renews) - len(fetches)}

    return _run("renew_only_fetch", adapter, bootstrap, control, body, needs=("share_renew",))


def renew_disabled(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """RENEW refused by a group (share.renew.acknowledge.enable=false) and by a pre-KIP-1222 broker."""
    cap = getattr(control, "cap_api_version", None)
    set_broker = getattr(control, "set_broker_config", None)
    if cap is None or set_broker is None:
        return ScenarioResult.skipped(adapter.name, "renew_disabled", f"{control.name} cannot change API versions")

    def body(ctl: ShareControl, topic: str, group: str, member: Member) -> dict[str, Any]:
        # 1. The group refuses RENEW (RN-6): the client sees the error, the lock runs out as usual.
        ctl.set_group_config(group, "share.renew.acknowledge.enable", "false")
        ctl.produce_values(topic, [b"x"])
        a = member()
        (r,) = a.poll_until(1)
        refused = ""
        try:
            refused = " ".join(x for x in _renew(a, r) if not x.endswith(" ok"))
        except ConformanceError as exc:
            refused = str(exc)
        _check(bool(refused), "RENEW with share.renew.acknowledge.enable=false was reported as a success")
        ctl.advance(LOCK_MS + 1000)
        b = member()
        (again,) = b.poll_until(1)
        _check(again.delivery_count > r.delivery_count, f"after the refused RENEW B got {again}, A had {r}")
        b.ack(again, "ACCEPT")
        b.commit()
        _wait_start_offset(ctl, group, topic, 1)
        # 2. A broker before KIP-1222 (RN-1): share.version 1, ShareFetch/ShareAcknowledge v1 only.
        # The consumers connected to the newer broker go first: a client does not ask a live
        # connection's versions again, and a broker is not downgraded under its connections.
        a.kill()
        b.kill()
        set_broker("share.version", "1")
        cap("ShareFetch", 1)
        cap("ShareAcknowledge", 1)
        try:
            ctl.produce_values(topic, [b"y"])
            c = member()
            try:
                (r2,) = c.poll_until(1, timeout_s=30)
            except ConformanceError as exc:
                raise ConformanceError(f"the client read nothing from a broker that advertises ShareFetch and "
                                       f"ShareAcknowledge up to v1 only (Kafka before KIP-1222, share.version 1): "
                                       f"{exc}") from exc
            unsupported = ""
            try:
                unsupported = " ".join(x for x in _renew(c, r2) if not x.endswith(" ok"))
            except ConformanceError as exc:
                unsupported = str(exc)
            _check(bool(unsupported), "RENEW against a v1 broker was reported as a success")
            # The record's lock simply runs out; a client may consider it acknowledged already.
        finally:
            cap("ShareFetch", None)
            cap("ShareAcknowledge", None)
            set_broker("share.version", None)
        return {"group_refused": refused[:160], "v1_refused": unsupported[:160]}

    return _run("renew_disabled", adapter, bootstrap, control, body, needs=("share_renew",))


RENEW_SCENARIOS = {
    "renew_hold": renew_hold,
    "renew_expired": renew_expired,
    "renew_mixed": renew_mixed,
    "renew_only_fetch": renew_only_fetch,
    "renew_disabled": renew_disabled,
}

"""Client quotas (KIP-219): a produce and a consume quota, and whether the client honours the throttle.

The broker gets a default client-id quota (``producer_byte_rate`` and ``consumer_byte_rate``)
for the scenario; the client produces more than the quota allows in the first window and
reads it back. The broker answers at once with ThrottleTimeMs and mutes the connection
(QUO-5); the records all arrive either way. Whether the client waited the throttle out
before sending on that connection is client rule CR-10, checked from the recording: a client
that sends early fails the cell with a CR-10 violation (docs/authorization.md).
"""

from __future__ import annotations

from typing import Any

from kwire.conformance.clients.base import ClientAdapter, Record
from kwire.conformance.scenarios.base import BrokerControl, ScenarioResult, unique_name

__all__ = ["quota_throttle", "QUOTA_BYTES_PER_S"]

SCENARIO = "quota_throttle"
# 4 produce calls of 16 records of 4 KiB against 16 KiB/s: the first 10 s window holds 160 KiB, so
# producing and fetching 256 KiB throttle both (QUO-2). A fetch asks for at most 160 KiB (QUO-3) and
# each produce call stays below that, so every batch can be fetched.
QUOTA_BYTES_PER_S = 16 * 1024
_CALLS, _PER_CALL = 4, 16
_RECORDS = _CALLS * _PER_CALL
_VALUE = b"q" * 4096


def quota_throttle(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Produce and consume over a byte-rate quota; the records arrive and the throttle is honoured (CR-10)."""
    set_quota: Any = getattr(control, "set_quota", None)
    if set_quota is None:
        return ScenarioResult.skipped(adapter.name, SCENARIO, f"{control.name} cannot set client quotas")
    topic = unique_name(f"kw-quota-{adapter.name}")
    control.create_topic(topic, 1)
    records = [Record(f"k{i}".encode(), _VALUE + str(i).encode(), (), partition=0) for i in range(_RECORDS)]
    set_quota("client-id=<default>", producer_byte_rate=QUOTA_BYTES_PER_S, consumer_byte_rate=QUOTA_BYTES_PER_S)
    try:
        for i in range(_CALLS):
            adapter.produce(bootstrap, topic, records[i * _PER_CALL:(i + 1) * _PER_CALL], timeout_s=90)
        consumed = adapter.consume(bootstrap, topic, group_id=None, count=len(records), timeout_s=90)
    finally:
        set_quota("client-id=<default>", producer_byte_rate=None, consumer_byte_rate=None)
    if len(consumed) != len(records):
        return ScenarioResult.failed(adapter.name, SCENARIO, f"consumed {len(consumed)} of {len(records)} records")
    got = sorted((r.value or b"") for r in consumed)
    if got != sorted(r.value or b"" for r in records):
        return ScenarioResult.failed(adapter.name, SCENARIO, "the records read back differ from those produced")
    return ScenarioResult.passed(adapter.name, SCENARIO, records=len(records), topic=topic)

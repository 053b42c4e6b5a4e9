#!/usr/bin/env python3
"""A share-consumer driver that misbehaves on purpose, built on kwire's raw ``WireClient``.

It speaks the ``share_consumer`` part of docs/driver-protocol.md like any driver (joins with
ShareGroupHeartbeat, fetches with ShareFetch v2, commits with ShareAcknowledge v2) and breaks two
client rules on the wire:

* after every commit that renewed a record it also renews offset 999 of the partition, a record it
  does not hold (CR-9);
* on close it closes its share session (ShareAcknowledge epoch -1) and then sends its last
  acknowledgements again, after the close (CR-9, CR-5).
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any

from kwire.conformance.wire_client import WireClient
from kwire.records import iter_batches

TYPES = {"ACCEPT": 1, "RELEASE": 2, "REJECT": 3, "RENEW": 4}
SHARE_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE, METADATA = 76, 78, 79, 3


def emit(**event: object) -> None:
    print(json.dumps(event), flush=True)


class RawShareConsumer:
    def __init__(self, cmd: dict[str, Any]) -> None:
        self.c = WireClient(cmd["bootstrap"], timeout_s=30, client_id="broken-share").connect()
        self.c.request(18, 3, {"ClientSoftwareName": "broken-share", "ClientSoftwareVersion": "0"})
        self.group, self.member = cmd["group_id"], str(uuid.uuid4())
        self.epoch = 0  # share session epoch of the next request
        self.member_epoch = 0
        self.topic = ""
        self.topic_id = ""
        self.partitions: list[int] = []
        self.pending: dict[int, list[tuple[int, int]]] = {}  # partition -> [(offset, type)]
        self.last_sent: dict[int, list[tuple[int, int]]] = {}
        self.records: dict[tuple[int, int], dict[str, Any]] = {}  # share_record events by (partition, offset)
        self.renewed: list[dict[str, Any]] = []  # handed back by the next poll, as the protocol promises

    def _heartbeat(self) -> None:
        body = {"GroupId": self.group, "MemberId": self.member, "MemberEpoch": self.member_epoch, "RackId": None,
                "SubscribedTopicNames": [self.topic] if self.member_epoch == 0 else None}
        r = self.c.request(SHARE_GROUP_HEARTBEAT, 1, body)
        if r.error_code == 0:
            self.member_epoch = r.member_epoch
            if r.assignment is not None:
                self.partitions = sorted(p for t in r.assignment.topic_partitions or ()
                                         for p in t.partitions if str(t.topic_id) == self.topic_id)

    def subscribe(self, topics: list[str]) -> None:
        self.topic = topics[0]
        md = self.c.request(METADATA, 12, {"Topics": [{"TopicId": "00000000-0000-0000-0000-000000000000", "Name": self.topic}],
                                           "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False})
        self.topic_id = str(md.topics[0].topic_id)
        self._heartbeat()

    def _batches(self, partition: int, acks: list[tuple[int, int]]) -> list[dict[str, Any]]:
        return [{"FirstOffset": o, "LastOffset": o, "AcknowledgeTypes": [t]} for o, t in sorted(acks)]

    def poll(self, timeout_ms: int) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        self._heartbeat()
        while not self.partitions and time.monotonic() < deadline:
            time.sleep(0.1)
            self._heartbeat()
        if not self.partitions:
            return
        if self.renewed:
            for ev in self.renewed:
                emit(**ev)
            self.renewed = []
            return
        body = {"GroupId": self.group, "MemberId": self.member, "ShareSessionEpoch": self.epoch,
                "MaxWaitMs": max(0, min(timeout_ms, 500)), "MinBytes": 1, "MaxBytes": 1 << 20,
                "MaxRecords": 500, "BatchSize": 500, "IsRenewAck": False,
                "Topics": [{"TopicId": self.topic_id, "Partitions": [
                    {"PartitionIndex": p, "PartitionMaxBytes": 0, "AcknowledgementBatches": []}
                    for p in self.partitions]}], "ForgottenTopicsData": []}
        r = self.c.request(SHARE_FETCH, 2, body)
        self.epoch = 0 if r.error_code else self.epoch + 1
        for t in r.responses or ():
            for p in t.partitions or ():
                acquired = {o: a.delivery_count for a in p.acquired_records or ()
                            for o in range(a.first_offset, a.last_offset + 1)}
                for batch in iter_batches(bytes(p.records or b""), verify_crc=False):
                    for rec in batch:
                        if rec.offset in acquired:
                            ev = {"event": "share_record", "topic": self.topic, "partition": p.partition_index,
                                  "offset": rec.offset, "key": None if rec.key is None else bytes(rec.key).hex(),
                                  "value": None if rec.value is None else bytes(rec.value).hex(), "headers": [],
                                  "delivery_count": acquired[rec.offset]}
                            self.records[(p.partition_index, rec.offset)] = ev
                            emit(**ev)

    def acknowledge(self, partition: int, offset: int, kind: str) -> None:
        self.pending.setdefault(partition, []).append((offset, TYPES[kind]))

    def _ack(self, acks: dict[int, list[tuple[int, int]]], epoch: int) -> Any:
        renew = any(t == 4 for a in acks.values() for _, t in a)
        body = {"GroupId": self.group, "MemberId": self.member, "ShareSessionEpoch": epoch, "IsRenewAck": renew,
                "Topics": [{"TopicId": self.topic_id, "Partitions": [
                    {"PartitionIndex": p, "AcknowledgementBatches": self._batches(p, a)} for p, a in acks.items()]}]}
        return self.c.request(SHARE_ACKNOWLEDGE, 2, body)

    def commit(self) -> None:
        acks, self.pending = self.pending, {}
        if not acks:
            return
        r = self._ack(acks, self.epoch)
        self.epoch = 0 if r.error_code else self.epoch + 1
        self.last_sent = acks
        for t in r.responses or ():
            for p in t.partitions or ():
                emit(event="committed", topic=self.topic, partition=p.partition_index,
                     error=None if p.error_code == 0 else f"error {p.error_code}", message=p.error_message)
                if p.error_code == 0:
                    self.renewed += [self.records[(p.partition_index, o)] for o, kind in acks.get(p.partition_index, ())
                                     if kind == 4 and (p.partition_index, o) in self.records]
        if any(t == 4 for a in acks.values() for _, t in a) and self.epoch:
            # Misbehaviour 1: renew a record this member never held.
            r = self._ack({p: [(999, 4)] for p in acks}, self.epoch)
            self.epoch = 0 if r.error_code else self.epoch + 1

    def close(self) -> None:
        if self.epoch:
            self.c.request(SHARE_ACKNOWLEDGE, 2, {"GroupId": self.group, "MemberId": self.member,
                                                  "ShareSessionEpoch": -1, "IsRenewAck": False, "Topics": []})
            # Misbehaviour 2: acknowledgements after the session was closed.
            if self.last_sent:
                self._ack({p: [(o, 1) for o, _ in a] for p, a in self.last_sent.items()}, self.epoch)
        self.member_epoch = -1
        self.c.request(SHARE_GROUP_HEARTBEAT, 1, {"GroupId": self.group, "MemberId": self.member, "MemberEpoch": -1,
                                                  "RackId": None, "SubscribedTopicNames": None})
        self.c.close()


def main() -> None:
    cmd = json.loads(sys.stdin.readline())
    if cmd.get("op") == "describe":
        emit(event="describe", name="broken-share", version="0", ops=["share_consumer"],
             features=["share_consumer", "share_renew"], lacks={"share_lock_timeout": "not told"})
        emit(event="done")
        return
    consumer = RawShareConsumer(cmd)
    emit(event="ready")
    for line in sys.stdin:
        step = json.loads(line)
        op = step["op"]
        if op == "close":
            break
        try:
            if op == "subscribe":
                consumer.subscribe(step["topics"])
            elif op == "poll":
                consumer.poll(step["timeout_ms"])
            elif op == "acknowledge":
                consumer.acknowledge(step["partition"], step["offset"], step["type"])
            elif op in ("commit", "commit_async"):
                consumer.commit()
            else:
                raise ValueError(op)
            emit(event="ok", op=op)
        except Exception as exc:  # noqa: BLE001
            emit(event="failed", op=op, error=type(exc).__name__, message=str(exc))
    consumer.close()
    emit(event="closed")


if __name__ == "__main__":
    main()

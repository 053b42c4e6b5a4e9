"""``kill -9`` under a share consumer with a dead-letter queue (issue 20.11): a ``kwire broker
--data-dir`` process is SIGKILLed right after it confirmed an acknowledgement, again and again,
and restarted on the same data dir and port while a share consumer keeps consuming with explicit
acknowledgements (ACCEPT, REJECT into the DLQ, RELEASE up to the delivery limit).

Verdict, counted over the whole run: no acknowledgement the broker confirmed (ACCEPT or REJECT
answered with no error) is followed by a delivery of that record; no source offset has two dead
letters; no record is lost (every offset is accepted or dead-lettered in the end). Kafka completes
an acknowledgement only after the share coordinator persisted it (SharePartition.
rollbackOrProcessStateUpdates → writeShareGroupState; ShareCoordinatorShard at d79bd502), so a
crash after the answer can bring nothing confirmed back.

The consumer is kwire's own WireClient speaking ShareGroupHeartbeat, ShareFetch (acknowledgements
piggybacked every other round) and ShareAcknowledge, so every kill point is chosen by the test,
never by timing: the kill follows the N-th confirming answer. Waits are bounded polls.

    python -m tests.broker.server.test_share_kill --kills 20 [--seed 1]    # the long run, figures printed
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kwire.client import WireClient
from kwire.errors import WireClientError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.framing import encode_request
from kwire.protocol.messages.create_topics import CreateTopicsRequest
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as IAC
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.messages.share_acknowledge import ShareAcknowledgeRequest as SAR
from kwire.protocol.messages.share_fetch import ShareFetchRequest as SFR
from kwire.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from kwire.records import BatchBuilder, iter_batches

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="SIGKILL")]

TOPIC, DLQ, GROUP = "t", "dlq.t", "sg"
ACCEPT, RELEASE, REJECT = 1, 2, 3
DELIVERY_LIMIT = 2
MAX_RECORDS = 20
WAIT_S = 30.0  # bound of every wait (a broker start, an assignment, the rest of the records)


def _ack_for(value: int, delivery_count: int) -> int:
    """The consumer's decision: every 10th record is rejected (a dead letter), every 50th is
    released at every delivery (a dead letter at the delivery limit), every 10th from 7 is released
    once, the rest accepted."""
    if value % 50 == 9:
        return RELEASE
    if value % 10 == 3:
        return REJECT
    if value % 10 == 7 and delivery_count == 1:
        return RELEASE
    return ACCEPT


# --- the broker process ---------------------------------------------------------------------------
class BrokerProcess:
    """``kwire broker --data-dir`` as users run it; ``kill()`` is SIGKILL, ``start()`` reuses the port."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def start(self) -> None:
        env = dict(os.environ)
        if env.pop("PYTHONDONTWRITEBYTECODE", None):
            # Restarts compile nothing twice: bytecode in a private cache beside the data dir.
            env["PYTHONPYCACHEPREFIX"] = str(self.data_dir.parent / "pycache")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kwire", "broker", "--port", str(self.port), "--quiet",
             "--data-dir", str(self.data_dir), "--topic", f"{TOPIC}:1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
            cwd=Path(__file__).resolve().parents[3])
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = re.search(r"bootstrap servers (\S+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"kwire broker did not start: {line!r}")
        self.bootstrap = m.group(1)
        self.port = int(self.bootstrap.rsplit(":", 1)[1])

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(WAIT_S)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _check(errors: list[int], what: str) -> None:
    bad = [e for e in errors if e not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)]
    if bad:
        raise AssertionError(f"{what}: {[ErrorCode(e).name for e in bad]}")


def prepare(bootstrap: str, records: int) -> None:
    """The DLQ topic, the group's configs and ``records`` records valued 0..records-1."""
    with WireClient(bootstrap) as c:
        r = c.request(CreateTopicsRequest(timeout_ms=10_000, topics=[CreateTopicsRequest.CreatableTopic(
            name=DLQ, num_partitions=1, replication_factor=1, configs=[CreateTopicsRequest.CreatableTopicConfig(
                name="errors.deadletterqueue.group.enable", value="true")])]))
        _check([t.error_code for t in r.topics], "CreateTopics")
        settings = {"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": DLQ,
                    "share.delivery.count.limit": str(DELIVERY_LIMIT)}
        r = c.request(IAC(resources=[IAC.AlterConfigsResource(resource_type=32, resource_name=GROUP, configs=[
            IAC.AlterableConfig(name=k, config_operation=0, value=v) for k, v in settings.items()])]))
        _check([x.error_code for x in r.responses], "IncrementalAlterConfigs")
        for lo in range(0, records, 50):
            b = BatchBuilder(0)
            for v in range(lo, min(lo + 50, records)):
                b.append(b"%d" % v, timestamp_ms=int(time.time() * 1000))
            r = c.request(ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[ProduceRequest.TopicProduceData(
                name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b.build())])]), version=11)
            _check([p.error_code for t in r.responses for p in t.partition_responses], "Produce")


def dead_letters(bootstrap: str) -> Counter[int]:
    """Source offset -> how many dead letters the DLQ topic holds for it."""
    out: Counter[int] = Counter()
    with WireClient(bootstrap) as c:
        offset = 0
        while True:
            r = c.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 24, topics=[
                FetchRequest.FetchTopic(topic=DLQ, partitions=[FetchRequest.FetchPartition(
                    partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                    partition_max_bytes=1 << 24)])]), version=12)
            p = r.responses[0].partitions[0]
            got = [rec for b in iter_batches(p.records or b"") for rec in b]
            if not got:
                return out
            for rec in got:
                h = {k: bytes(v).decode() for k, v in rec.headers if v is not None}
                if h.get("__dlq.errors.group") == GROUP:
                    out[int(h["__dlq.errors.offset"])] += 1
            offset = got[-1].offset + 1


# --- the consumer ----------------------------------------------------------------------------------
class Gone(Exception):
    """The broker died under a request (its answer never came)."""


@dataclass(slots=True)
class Tally:
    records: int
    deliveries: int = 0
    confirmed: dict[int, int] = field(default_factory=dict)  # offset -> ACCEPT/REJECT confirmed
    accepted_sent: set[int] = field(default_factory=set)  # ACCEPT sent, answered or not
    redelivered_after_confirm: list[tuple[int, int]] = field(default_factory=list)  # (offset, ack type)
    kills: int = 0
    unanswered_acks: int = 0  # acknowledgements in flight when the broker died
    finished_by_limit: set[int] = field(default_factory=set)  # released at the limit, confirmed

    def done(self) -> bool:
        return len(self.confirmed) + len(self.finished_by_limit) >= self.records


class ShareConsumer:
    """One share member over kwire's WireClient: join, fetch, acknowledge, rejoin after a restart."""

    def __init__(self, broker: BrokerProcess, tally: Tally) -> None:
        self.broker = broker
        self.tally = tally
        self.member_id = str(uuid.uuid4())  # KIP-1082: the client names itself
        self.client: WireClient | None = None
        self._reset()

    def _reset(self) -> None:
        if self.client is not None:
            self.client.close()
        self.client = WireClient(self.broker.bootstrap, timeout_s=WAIT_S)
        self.member_epoch = 0
        self.session_epoch = 0
        self.topic_id: uuid.UUID | None = None
        self.pending: list[tuple[int, int, int]] = []  # (offset, ack type, delivery count) to send
        self.round = 0

    def _request(self, body: Any) -> Any:
        assert self.client is not None
        try:
            return self.client.request(body)
        except (OSError, WireClientError) as exc:
            raise Gone(str(exc)) from None

    def join(self) -> None:
        """Heartbeat until the partition is assigned (HB-6: the first answer may be empty)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            r = self._request(ShareGroupHeartbeatRequest(
                group_id=GROUP, member_id=self.member_id, member_epoch=self.member_epoch,
                subscribed_topic_names=[TOPIC] if self.member_epoch == 0 else None))
            if r.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH):
                self.member_epoch = 0
                continue
            assert r.error_code == 0, ErrorCode(r.error_code).name
            self.member_epoch = r.member_epoch
            if r.assignment is not None and r.assignment.topic_partitions:
                self.topic_id = r.assignment.topic_partitions[0].topic_id
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no assignment in {WAIT_S:.0f}s")
            time.sleep(0.05)  # a bounded poll for the assignment, not a timing assumption

    def _batches(self, acks: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
        return [(o, t) for o, t, _ in sorted(acks)]

    def _confirm(self, acks: list[tuple[int, int, int]], error: int) -> None:
        if error != 0:
            return  # not confirmed: the records may come again
        for off, kind, count in acks:
            if kind in (ACCEPT, REJECT):
                self.tally.confirmed[off] = kind
            elif count >= DELIVERY_LIMIT:
                self.tally.finished_by_limit.add(off)

    def _acknowledge(self, acks: list[tuple[int, int, int]]) -> SAR:
        assert self.topic_id is not None
        return SAR(group_id=GROUP, member_id=self.member_id, share_session_epoch=self.session_epoch,
                   topics=[SAR.AcknowledgeTopic(topic_id=self.topic_id, partitions=[SAR.AcknowledgePartition(
                       partition_index=0, acknowledgement_batches=[
                           SAR.AcknowledgementBatch(first_offset=o, last_offset=o, acknowledge_types=[t])
                           for o, t in self._batches(acks)])])])

    def ack_and_vanish(self) -> None:
        """Send the pending acknowledgements and never read the answer (the broker is killed next)."""
        acks, self.pending = self.pending, []
        if not acks:
            return
        self.tally.accepted_sent.update(o for o, kind, _ in acks if kind == ACCEPT)
        self.tally.unanswered_acks += len(acks)
        assert self.client is not None
        body = self._acknowledge(acks)
        conn = self.client._bootstrap_conn()
        conn.sock.sendall(encode_request(body, self.client.pick_version(conn, body.API_KEY),
                                         correlation_id=1 << 30, client_id="kill-test"))

    def step(self) -> bool:
        """One round: a ShareFetch (carrying the pending acknowledgements every other round, else
        a ShareAcknowledge first). True when the round's answer confirmed an acknowledgement."""
        assert self.topic_id is not None
        acks, self.pending = self.pending, []
        confirmed = False
        piggyback = self.round % 2 == 0
        self.round += 1
        for off, kind, _ in acks:
            if kind == ACCEPT:
                self.tally.accepted_sent.add(off)
        if acks and not piggyback:
            try:
                r = self._request(self._acknowledge(acks))
            except Gone:
                self.tally.unanswered_acks += len(acks)
                raise
            err = r.error_code or r.responses[0].partitions[0].error_code
            if r.error_code == 0:
                self.session_epoch += 1
            self._confirm(acks, err)
            confirmed = err == 0
            acks = []
        try:
            r = self._request(SFR(
                group_id=GROUP, member_id=self.member_id, share_session_epoch=self.session_epoch,
                max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, max_records=MAX_RECORDS, batch_size=MAX_RECORDS,
                topics=[SFR.FetchTopic(topic_id=self.topic_id, partitions=[SFR.FetchPartition(
                    partition_index=0, acknowledgement_batches=[
                        SFR.AcknowledgementBatch(first_offset=o, last_offset=o, acknowledge_types=[t])
                        for o, t in self._batches(acks)])])]))
        except Gone:
            self.tally.unanswered_acks += len(acks)
            raise
        if r.error_code != 0:
            raise AssertionError(f"ShareFetch: {ErrorCode(r.error_code).name}")
        self.session_epoch += 1
        parts = [p for t in r.responses for p in t.partitions if p.partition_index == 0]
        if not parts:  # nothing to say about the partition (no records, no acknowledgements)
            assert not acks, f"acknowledgements of {acks} went unanswered"
            return confirmed
        p = parts[0]
        if acks:
            self._confirm(acks, p.acknowledge_error_code)
            confirmed = confirmed or p.acknowledge_error_code == 0
        counts = {o: a.delivery_count for a in p.acquired_records
                  for o in range(a.first_offset, a.last_offset + 1)}
        for b in iter_batches(p.records or b""):
            for rec in b:
                if rec.offset not in counts:
                    continue
                self.tally.deliveries += 1
                if rec.offset in self.tally.confirmed:
                    self.tally.redelivered_after_confirm.append((rec.offset, self.tally.confirmed[rec.offset]))
                value = int(bytes(rec.value or b"0"))
                count = counts[rec.offset]
                self.pending.append((rec.offset, _ack_for(value, count), count))
        return confirmed

    def restarted(self) -> None:
        """The broker came back: a new connection, session and membership; held records are gone."""
        self.pending = []
        self._reset()
        self.join()


# --- the run ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class Figures:
    kills: int
    records: int
    deliveries: int
    confirmed: int
    unanswered_acks: int
    redelivered_confirmed: int
    dlq_records: int
    dlq_duplicated: int
    dlq_of_accepted: int  # dead letters of records whose ACCEPT was confirmed
    lost: int
    seconds: float

    def line(self) -> str:
        return (f"kills {self.kills}, records {self.records}, deliveries {self.deliveries}, confirmed acks "
                f"{self.confirmed}, acks unanswered at a kill {self.unanswered_acks}; confirmed redelivered "
                f"{self.redelivered_confirmed}, dead letters {self.dlq_records} (duplicated {self.dlq_duplicated}, "
                f"of accepted records {self.dlq_of_accepted}), lost {self.lost}; {self.seconds:.1f} s")


def run(data_dir: Path, kills: int, seed: int = 1) -> Figures:
    """Consume under ``kills`` SIGKILLs, each right after a confirming answer chosen by ``seed``."""
    t0 = time.monotonic()
    rng = random.Random(seed)
    records = kills * 10 * MAX_RECORDS + 100
    broker = BrokerProcess(data_dir)
    broker.start()
    try:
        prepare(broker.bootstrap, records)
        tally = Tally(records)
        consumer = ShareConsumer(broker, tally)
        consumer.join()
        until_kill = rng.randint(1, 5)
        deadline = time.monotonic() + WAIT_S + kills * 10
        while not tally.done():
            if time.monotonic() > deadline:
                raise AssertionError(f"not finished: {len(tally.confirmed)} confirmed of {records}")
            try:
                confirmed = consumer.step()
            except Gone:
                raise AssertionError("the broker died without being killed") from None
            if confirmed and tally.kills < kills:
                until_kill -= 1
                if until_kill == 0:
                    if tally.kills % 2 == 1:
                        # Every other kill leaves an acknowledgement in flight: the broker may
                        # have applied (and written) it or not; its answer is lost either way.
                        consumer.ack_and_vanish()
                    broker.kill()
                    tally.kills += 1
                    broker.start()
                    consumer.restarted()
                    until_kill = rng.randint(1, 5)
        letters = dead_letters(broker.bootstrap)
        expected_dlq = {o for o in range(records) if o % 10 == 3 or o % 50 == 9}
        # Wait for phase 2 of the last dead letters (written right after their answers).
        end = time.monotonic() + WAIT_S
        while not expected_dlq <= set(letters) and time.monotonic() < end:
            time.sleep(0.05)
            letters = dead_letters(broker.bootstrap)
        lost = [o for o in range(records) if o not in tally.accepted_sent and o not in letters]
        return Figures(tally.kills, records, tally.deliveries, len(tally.confirmed) + len(tally.finished_by_limit),
                       tally.unanswered_acks, len(tally.redelivered_after_confirm), sum(letters.values()),
                       sum(n - 1 for n in letters.values() if n > 1),
                       sum(1 for o, kind in tally.confirmed.items() if kind == ACCEPT and o in letters),
                       len(lost), time.monotonic() - t0)
    finally:
        broker.stop()


def _assert_clean(f: Figures, kills: int) -> None:
    assert f.kills == kills, f.line()
    assert (f.redelivered_confirmed, f.dlq_duplicated, f.dlq_of_accepted, f.lost) == (0, 0, 0, 0), f.line()


@pytest.mark.rule("ST-5, DLQ-4")
def test_kill_9_after_confirmed_acknowledgements_brings_nothing_back(tmp_path: Path) -> None:
    """ST-5, DLQ-4: three SIGKILLs right after confirming answers: 0 confirmed acknowledgements
    redelivered, 0 dead letters duplicated, 0 records lost."""
    f = run(tmp_path / "data", kills=3)
    _assert_clean(f, 3)


@pytest.mark.slow
@pytest.mark.rule("ST-5, DLQ-4")
def test_kill_9_twenty_times(tmp_path: Path) -> None:
    """The issue's goal, 20 SIGKILLs (slow: about a second per restart)."""
    f = run(tmp_path / "data", kills=20, seed=7)
    _assert_clean(f, 20)


def main() -> int:
    ap = argparse.ArgumentParser(description="kill -9 under a share consumer with a DLQ")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kwire-share-kill-") as d:
        f = run(Path(d) / "data", args.kills, args.seed)
    print(f.line())
    return 0 if (f.redelivered_confirmed, f.dlq_duplicated, f.dlq_of_accepted, f.lost) == (0, 0, 0, 0) else 1


if __name__ == "__main__":
    raise SystemExit(main())

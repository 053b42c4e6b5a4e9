"""Transactions with real clients against kwire: confluent-kafka (TV1 flow: AddPartitionsToTxn,
EndTxn v1), the Java producer (TV2: implicit add through Produce v12, EndTxn v5), kcat; commits,
aborts, read_committed, offsets in transactions, fencing, timeouts on the broker clock and a restart
on the same data dir."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.clock import JumpClock, ManualClock
from kwire.conformance.paths import java_lib_dir
from kwire.control import Broker, BrokerConfig

pytestmark = pytest.mark.conformance

ck = pytest.importorskip("confluent_kafka")


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False, settings={"group.initial.rebalance.delay.ms": "0"}),
                clock=JumpClock()) as b:
        b.create_topic("t", partitions=2)
        yield b


def _drain(c: Any, expect: int, timeout_s: float, poll_s: float) -> list[bytes]:
    """What the consumer reads until ``expect`` records or the deadline, plus three more polls
    (nothing further may come); closes it."""
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + timeout_s
        while len(got) < expect and time.monotonic() < deadline:
            m = c.poll(poll_s)
            if m is not None and m.error() is None:
                got.append(m.value())
        for _ in range(3):
            m = c.poll(poll_s)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return sorted(got)


def read_all(b: Broker, isolation: str, expect: int, timeout_s: float = 20) -> list[bytes]:
    c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"r-{isolation}-{time.monotonic_ns()}",
                     "auto.offset.reset": "earliest", "isolation.level": isolation, "enable.auto.commit": False})
    c.subscribe(["t"])
    return _drain(c, expect, timeout_s, 0.3)


def producer(b: Broker, tid: str = "tx", **conf: Any) -> Any:
    p = ck.Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid, "log_level": 0, **conf})
    p.init_transactions(20)
    return p


@pytest.mark.rule("TX-11, TX-15, TX-18, TX-21, TX-22")
def test_commit_and_abort_with_read_committed(broker: Broker) -> None:
    """TX-11/TX-15: the TV1 flow (AddPartitionsToTxn, EndTxn); TX-18: markers end each transaction;
    TX-21/TX-22: read_committed sees only committed records, read_uncommitted sees all."""
    broker.start_recording()
    p = producer(broker)
    p.begin_transaction()
    p.produce("t", b"c1", partition=0)
    p.produce("t", b"c2", partition=1)
    p.commit_transaction(20)
    p.begin_transaction()
    p.produce("t", b"a1", partition=0)
    p.flush(20)
    p.abort_transaction(20)
    assert read_all(broker, "read_committed", 2) == [b"c1", b"c2"]
    assert read_all(broker, "read_uncommitted", 3) == [b"a1", b"c1", b"c2"]
    apis = {(e.api_key, e.api_version) for e in broker.recorded()}
    assert any(k == 24 for k, _ in apis) and any(k == 26 for k, _ in apis)  # AddPartitionsToTxn, EndTxn


@pytest.mark.rule("TX-23")
def test_offsets_in_a_transaction_are_visible_only_after_commit(broker: Broker) -> None:
    """TX-23: send_offsets_to_transaction stages the group's offsets; they appear on commit, not on abort."""
    broker.produce("t", [b"x"] * 5)
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    c.subscribe(["t"])
    msgs: list[Any] = []
    deadline = time.monotonic() + 20
    while len(msgs) < 5 and time.monotonic() < deadline:
        m = c.poll(0.3)
        if m is not None and m.error() is None:
            msgs.append(m)
    p = producer(broker)
    p.begin_transaction()
    p.produce("t", b"out", partition=1)
    p.send_offsets_to_transaction([ck.TopicPartition("t", 0, 3)], c.consumer_group_metadata(), 20)
    p.abort_transaction(20)
    assert c.committed([ck.TopicPartition("t", 0)], 10)[0].offset < 0
    p.begin_transaction()
    p.send_offsets_to_transaction([ck.TopicPartition("t", 0, 4)], c.consumer_group_metadata(), 20)
    p.commit_transaction(20)
    assert c.committed([ck.TopicPartition("t", 0)], 10)[0].offset == 4
    c.close()


@pytest.mark.rule("TX-3")
def test_a_second_instance_fences_the_first(broker: Broker) -> None:
    """TX-3: InitProducerId for the same transactional id bumps the epoch and aborts the open
    transaction; the first instance is fenced and its records never become visible."""
    first = producer(broker, "same")
    first.begin_transaction()
    first.produce("t", b"zombie", partition=0)
    first.flush(20)
    second = producer(broker, "same")
    second.begin_transaction()
    second.produce("t", b"fresh", partition=0)
    second.commit_transaction(20)
    with pytest.raises(ck.KafkaException) as err:
        first.commit_transaction(10)
    assert err.value.args[0].fatal() or "fenced" in str(err.value).lower()
    assert read_all(broker, "read_committed", 1) == [b"fresh"]


@pytest.mark.rule("TX-17")
def test_a_transaction_times_out_on_the_broker_clock(broker: Broker) -> None:
    """TX-17: an Ongoing transaction past transaction.timeout.ms is aborted by the coordinator's next
    scan (every 10 s of broker time; epoch bumped): jumped past both, the producer's commit fails
    and read_committed sees nothing of it."""
    p = producer(broker, "slow", **{"transaction.timeout.ms": 10_000})
    p.begin_transaction()
    p.produce("t", b"late", partition=0)
    p.flush(20)
    broker.advance(20_001)
    with pytest.raises(ck.KafkaException):
        p.commit_transaction(10)
    assert read_all(broker, "read_committed", 0, timeout_s=3) == []
    assert read_all(broker, "read_uncommitted", 1) == [b"late"]


@pytest.mark.rule("TX-13, TX-16, TX-24")
def test_java_producer_uses_tv2(broker: Broker) -> None:
    """TX-24: transaction.version 2 in ApiVersions: the Java producer adds partitions implicitly with
    Produce v12+ (TX-13, verified at the leader) and ends with EndTxn v5, which bumps the epoch (TX-16)."""
    java = shutil.which("java")
    jars = sorted(java_lib_dir().glob("*.jar"))
    if java is None or not jars:
        pytest.skip("java or the kafka-clients jars are not installed (tools/install_clients.sh java)")
    broker.start_recording()
    src = Path(__file__).parent / "java" / "TxnProducer.java"
    out = subprocess.run([java, "-cp", ":".join(map(str, jars)), str(src), broker.bootstrap, "jtx"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert read_all(broker, "read_committed", 3) == [b"committed-1", b"committed-2", b"committed-3"]
    recorded = broker.recorded()
    end_txns = [e for e in recorded if e.api_key == 26]
    produces = [e for e in recorded if e.api_key == 0]
    assert end_txns and all(e.api_version == 5 for e in end_txns)
    assert produces and all(e.api_version >= 12 for e in produces)
    assert not [e for e in recorded if e.api_key == 24]  # no AddPartitionsToTxn: implicit adds
    epochs = [e.response.producer_epoch for e in end_txns]
    assert epochs == sorted(epochs) and len(set(epochs)) == len(epochs)  # each end bumps the epoch


@pytest.mark.rule("TX-24, TX-11, TX-15")
def test_java_producer_falls_back_to_tv1_when_the_feature_says_so() -> None:
    """TX-24: with transaction.version 1 finalized, the Java producer adds partitions explicitly
    (AddPartitionsToTxn, TX-11) and ends with EndTxn v4 or below, without epoch bumps (TX-15)."""
    java = shutil.which("java")
    jars = sorted(java_lib_dir().glob("*.jar"))
    if java is None or not jars:
        pytest.skip("java or the kafka-clients jars are not installed (tools/install_clients.sh java)")
    config = BrokerConfig(log_connections=False, settings={"transaction.version": "1"})
    with Broker(config) as b:
        b.create_topic("t", partitions=2)
        b.start_recording()
        src = Path(__file__).parent / "java" / "TxnProducer.java"
        out = subprocess.run([java, "-cp", ":".join(map(str, jars)), str(src), b.bootstrap, "jtx1"],
                             capture_output=True, text=True, timeout=120, check=False)
        assert out.returncode == 0, out.stderr[-3000:]
        assert read_all(b, "read_committed", 3) == [b"committed-1", b"committed-2", b"committed-3"]
        recorded = b.recorded()
    end_txns = [e for e in recorded if e.api_key == 26]
    assert end_txns and all(e.api_version <= 4 for e in end_txns)
    assert [e for e in recorded if e.api_key == 24]
    assert len({e.response.producer_epoch for e in end_txns if hasattr(e.response, "producer_epoch")}) <= 1


@pytest.mark.rule("TX-11")
def test_kcat_transactional_producer(broker: Broker) -> None:
    """TX-11: kcat (librdkafka 2.0.2, AddPartitionsToTxn v0, EndTxn v1) commits at exit; read_committed sees it."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.skip("kcat is not installed")
    res = subprocess.run([kcat, "-b", broker.bootstrap, "-P", "-t", "t", "-p", "0", "-X", "transactional.id=kc"],
                         input=b"one\ntwo\n", capture_output=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert read_all(broker, "read_committed", 2) == [b"one", b"two"]


@pytest.mark.rule("TX-20, TX-21, TX-23")
def test_a_restart_on_the_data_dir_keeps_transactions(tmp_path: Path) -> None:
    """TX-20/TX-21: after a restart on the same data dir, read_committed still sees exactly the
    committed records (the aborted range is rebuilt); TX-23: offsets committed in a transaction
    survive; the coordinator's state is restored, so the same transactional id resumes with a
    higher epoch and commits again."""
    data_dir = str(tmp_path / "data")
    first = Broker(BrokerConfig(data_dir=data_dir, log_connections=False)).start()
    try:
        first.create_topic("t", partitions=2)
        port = first.core.cluster.nodes[1].port
        p = producer(first, "durable")
        p.begin_transaction()
        p.produce("t", b"c1", partition=0)
        p.produce("t", b"c2", partition=1)
        p.commit_transaction(20)
        p.begin_transaction()
        p.produce("t", b"a1", partition=0)
        p.flush(20)
        p.abort_transaction(20)
        group = ck.Consumer({"bootstrap.servers": first.bootstrap, "group.id": "g"})
        p.begin_transaction()
        p.send_offsets_to_transaction([ck.TopicPartition("t", 0, 2)], group.consumer_group_metadata(), 20)
        p.commit_transaction(20)
        group.close()
        # EndTxn is answered at PrepareCommit; the markers follow on the next tick (TX-15)
        first.wait_until(lambda core: core.subsystems.transactions.transactions["durable"].pending_state is None)
        before = {r["transactional_id"]: r for r in first.transactions()}
    finally:
        first.stop()
    assert before["durable"]["state_name"] == "CompleteCommit"

    second = Broker(BrokerConfig(data_dir=data_dir, port=port, log_connections=False)).start()
    try:
        after = {r["transactional_id"]: r for r in second.transactions()}
        assert after["durable"]["state_name"] == "CompleteCommit"
        assert (after["durable"]["producer_id"], after["durable"]["producer_epoch"]) == (
            before["durable"]["producer_id"], before["durable"]["producer_epoch"])
        assert read_all(second, "read_committed", 2) == [b"c1", b"c2"]
        assert read_all(second, "read_uncommitted", 3) == [b"a1", b"c1", b"c2"]
        c = ck.Consumer({"bootstrap.servers": second.bootstrap, "group.id": "g"})
        try:
            assert c.committed([ck.TopicPartition("t", 0)], 10)[0].offset == 2
        finally:
            c.close()
        again = producer(second, "durable")
        again.begin_transaction()
        again.produce("t", b"c3", partition=0)
        again.commit_transaction(20)
        second.wait_until(lambda core: core.subsystems.transactions.transactions["durable"].pending_state is None)
        resumed = {r["transactional_id"]: r for r in second.transactions()}["durable"]
        assert resumed["state_name"] == "CompleteCommit"
        assert (resumed["producer_id"], resumed["producer_epoch"]) > (
            before["durable"]["producer_id"], before["durable"]["producer_epoch"])
        assert read_all(second, "read_committed", 3) == [b"c1", b"c2", b"c3"]
    finally:
        second.stop()


def read_assigned(b: Broker, isolation: str, expect: int, timeout_s: float = 15) -> list[bytes]:
    """Read both partitions of "t" without a group (no join: works on a clock that stands still)."""
    c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused", "isolation.level": isolation,
                     "enable.auto.commit": False})
    c.assign([ck.TopicPartition("t", p, ck.OFFSET_BEGINNING) for p in (0, 1)])
    return _drain(c, expect, timeout_s, 0.2)


def _txn_row(b: Broker, tid: str) -> dict[str, Any]:
    return next(r for r in b.transactions() if r["transactional_id"] == tid)


@pytest.mark.rule("TX-15, TX-18, TX-20")
def test_a_failed_marker_write_holds_the_transaction_until_its_retry() -> None:
    """TX-18: a marker write that fails leaves that partition's transaction open (its LSO stays at
    the transaction's first offset, TX-20) and the transaction in PrepareCommit (TX-15) while the
    other partition's marker is written; the coordinator retries on the broker clock (100 ms).
    JumpClock, not ManualClock: the consumers' long polls must end (docs/guide.md, "Clocks")."""
    with Broker(BrokerConfig(log_connections=False), clock=JumpClock()) as b:
        b.create_topic("t", partitions=2)
        b.fail_txn_markers(topic="t", partition=0, times=None)  # until clear_faults()
        p = producer(b, "mk")
        p.begin_transaction()
        p.produce("t", b"c0", partition=0)
        p.produce("t", b"c1", partition=1)
        p.commit_transaction(20)
        # answered at PrepareCommit; the markers go out on the next tick, partition 0's fails
        b.wait_until(lambda core: core.subsystems.transactions.transactions["mk"].pending_markers == {("t", 0)})
        row = _txn_row(b, "mk")
        assert (row["state_name"], row["pending_markers"]) == ("PrepareCommit", [["t", 0]])
        held, done = b.partition_state("t", 0), b.partition_state("t", 1)
        assert held["last_stable_offset"] == 0 < held["high_watermark"] == 1
        assert [t["first_offset"] for t in held["open_transactions"]] == [0]
        assert done["last_stable_offset"] == done["high_watermark"] == 2 and done["open_transactions"] == []
        assert read_assigned(b, "read_committed", 1) == [b"c1"]
        b.advance(500)  # retries on the way fail too
        assert _txn_row(b, "mk")["state_name"] == "PrepareCommit"
        b.clear_faults()
        b.advance(100)  # the next retry writes the marker
        assert _txn_row(b, "mk")["state_name"] == "CompleteCommit"
        assert b.partition_state("t", 0)["last_stable_offset"] == 2  # record and marker
        assert read_assigned(b, "read_committed", 2) == [b"c0", b"c1"]


@pytest.mark.rule("TX-15")
def test_concurrent_transactions_injected_on_end_txn_is_retried_by_the_client(broker: Broker) -> None:
    """TX-15: EndTxn answered CONCURRENT_TRANSACTIONS (injected for the next two) is retried by the
    client; the third attempt commits and the records become visible once."""
    p = producer(broker, "busy")
    p.begin_transaction()
    p.produce("t", b"once", partition=0)
    p.flush(20)
    broker.start_recording()
    broker.inject_error(api_key="EndTxn", error_code="CONCURRENT_TRANSACTIONS", times=2)
    p.commit_transaction(30)
    end_txns = [e for e in broker.recorded() if e.api_key == 26]
    assert [e.response.error_code for e in end_txns] == [51, 51, 0]
    assert _txn_row(broker, "busy")["state_name"] == "CompleteCommit"
    assert read_all(broker, "read_committed", 1) == [b"once"]


@pytest.mark.rule("TX-20, TX-21")
def test_list_offsets_latest_under_read_committed_is_the_lso() -> None:
    """TX-20: ListOffsets latest with read_committed answers the last stable offset, with
    read_uncommitted the high watermark (a consumer's end offsets, librdkafka's query_watermark
    answers the same numbers as the broker's state)."""
    with Broker(BrokerConfig(log_connections=False), clock=ManualClock()) as b:
        b.create_topic("t", partitions=2)
        b.produce("t", [b"plain-1", b"plain-2"])
        p = producer(b, "lso")
        p.begin_transaction()
        p.produce("t", b"open", partition=0)
        p.flush(20)
        b.start_recording()

        def latest(isolation: str) -> int:
            c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused", "isolation.level": isolation})
            try:
                return int(c.get_watermark_offsets(ck.TopicPartition("t", 0), timeout=10, cached=False)[1])
            finally:
                c.close()

        assert (latest("read_committed"), latest("read_uncommitted")) == (2, 3)
        lists = [e for e in b.recorded() if e.api_key == 2]
        assert {e.request.isolation_level for e in lists} == {0, 1}
        p.commit_transaction(20)
        assert latest("read_committed") == latest("read_uncommitted") == 4


def _java_txn(mode: str, bootstrap: str, **kw: Any) -> Any:
    java = shutil.which("java")
    jars = sorted(java_lib_dir().glob("*.jar"))
    if java is None or not jars:
        pytest.skip("java or the kafka-clients jars are not installed (tools/install_clients.sh java)")
    src = Path(__file__).parent / "java" / "TxnScenarios.java"
    return subprocess.Popen([java, "-cp", ":".join(map(str, jars)), str(src), mode, bootstrap], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@pytest.mark.rule("TX-23, TX-21")
def test_java_exactly_once_consume_transform_produce(broker: Broker) -> None:
    """TX-23: the Java consumer-producer pair reads "in" with read_committed, writes "out" and
    commits the group's offsets in the same transaction (sendOffsetsToTransaction): the output and
    the offsets become visible together."""
    broker.create_topic("in", partitions=1)
    broker.create_topic("out", partitions=1)
    broker.produce("in", [f"v{i}".encode() for i in range(5)])
    proc = _java_txn("eos", broker.bootstrap)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "done 5" in out, err[-3000:]
    assert [r.value for r in broker.read("out", 0)] == [f"V{i}".encode() for i in range(5)]
    group = broker.describe_group("eos-g")
    assert group is not None and group["committed"] == {"in-0": 5}


@pytest.mark.rule("TX-3")
def test_java_zombie_is_fenced_by_a_second_instance(broker: Broker) -> None:
    """TX-3: a second KafkaProducer with the same transactional.id fences the first: the first's
    open transaction is aborted and its commit fails with ProducerFencedException."""
    proc = _java_txn("zombie", broker.bootstrap)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    assert "fenced ProducerFencedException" in out or "fenced InvalidProducerEpochException" in out, out
    assert read_all(broker, "read_committed", 1) == [b"fresh"]


@pytest.mark.rule("TX-17")
def test_java_transaction_times_out_on_the_broker_clock(broker: Broker) -> None:
    """TX-17: the broker clock jumps past transaction.timeout.ms and the coordinator's next scan
    (every 10 s) while the Java producer holds an open transaction: the coordinator aborts it and
    the producer's commit fails."""
    proc = _java_txn("timeout", broker.bootstrap)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = proc.stdout.readline()
        assert line.strip() == "sent", (line, proc.stderr.read()[-3000:] if proc.stderr else "")
        broker.advance(20_001)
        assert {t["transactional_id"]: t["state_name"] for t in broker.transactions()}["slow"] == "CompleteAbort"
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "commit failed" in out, (out, err[-3000:])
    assert read_all(broker, "read_committed", 0, timeout_s=3) == []

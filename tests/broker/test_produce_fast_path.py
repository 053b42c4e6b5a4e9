"""The Produce fast path (handlers/produce.py ``_fast_produce``) answers and appends exactly as the
general path does.

Differential: two brokers with the same topics take the same request frames, one with the fast
path, one without; after every request the answer bytes (or the outcome: nothing, close) and the
whole log and producer state of every partition must be equal. Kafka's behaviour is the general
path's (KafkaApis.handleProduceRequest, UnifiedLog.append, ProducerAppendInfo at d79bd502); the
fast path only skips building the answer objects, so any difference is a fast-path defect.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.broker.core.broker_core import BrokerCore
from kwire.broker.handlers import produce
from kwire.protocol import encode_request
from kwire.protocol.messages.produce import (
    ProduceRequest,
    ProduceRequest_PartitionProduceData,
    ProduceRequest_TopicProduceData,
)
from kwire.protocol.splice import as_bytes
from kwire.records import BatchBuilder, Compression
from tests.broker.helpers import START_MS, make_core

TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "plain": (3, {}),
    "lat": (1, {"message.timestamp.type": "LogAppendTime"}),
    "small": (1, {"max.message.bytes": "200"}),
    "compact": (1, {"cleanup.policy": "compact"}),
}
IDS = {name: uuid.UUID(int=i + 1) for i, name in enumerate(TOPICS)}


def _core(brokers: int = 2) -> BrokerCore:
    core, _ = make_core(brokers=brokers)
    first, last = min(core.cluster.nodes), max(core.cluster.nodes)
    for name, (n, configs) in TOPICS.items():
        # one replica each, on the broker the tests talk to, but "plain" partition 1 on the other
        core.create_topic(name, n, 1, configs, topic_id=IDS[name],
                          assignments=[[last if (name, i) == ("plain", 1) else first] for i in range(n)])
    return core


def batch(n: int = 1, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False, control: bool = False,
          keys: bool = True, compression: Compression = Compression.NONE, size: int = 20) -> bytearray:
    b = BatchBuilder(0, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn,
                     is_control=control, compression=compression)
    for i in range(n):
        b.append(b"v" * size, key=b"k%d" % i if keys else None, timestamp_ms=START_MS + i)
    return bytearray(b.build())


def frame(records: bytes | None, *, topic: str = "plain", partition: int = 0, acks: int = 1, version: int = 11,
          txn_id: str | None = None, corr: int = 1, more: list[tuple[str, int, bytes]] | None = None) -> bytes:
    def td(name: str, parts: list[tuple[int, bytes | None]]) -> ProduceRequest_TopicProduceData:
        return ProduceRequest_TopicProduceData(
            name=name if version < 13 else "", topic_id=IDS.get(name, uuid.UUID(int=99)) if version >= 13 else None,
            partition_data=[ProduceRequest_PartitionProduceData(index=i, records=r) for i, r in parts])

    topics = [td(topic, [(partition, records)])]
    for name, index, recs in more or []:
        topics.append(td(name, [(index, recs)]))
    req = ProduceRequest(transactional_id=txn_id, acks=acks, timeout_ms=30000, topic_data=topics)
    return encode_request(req, version, correlation_id=corr, client_id="diff", size_prefix=False)


def state(core: BrokerCore) -> dict[Any, Any]:
    """Everything an append may change, per partition."""
    out: dict[Any, Any] = {}
    for t in core.cluster.topics.values():
        for p in t.partitions:
            lg = p.log
            out[(t.name, p.index)] = (
                lg.log_start_offset, lg.log_end_offset, lg.size_bytes, list(lg._bases), list(lg.epochs),
                [(b.base_offset, b.last_offset, b.max_timestamp, bytes(b.data), b.producer_id, b.is_transactional,
                  b.is_control) for b in lg.batches],
                dict(lg.open_txn_first_offsets), list(lg.aborted_txns),
                [(s.base_offset, s.size, s.first_timestamp, s.max_timestamp) for s in lg.segments],
                {pid: (e.epoch, list(e.batches), e.txn_first_offset, e.coordinator_epoch)
                 for pid, e in lg.producers.entries.items()},
            )
    return out


class Pair:
    """Two brokers, the same frames: ``send`` returns whether the fast path answered."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, brokers: int = 2) -> None:
        self.fast, self.general = _core(brokers), _core(brokers)
        node = min(self.fast.cluster.nodes)
        self.conns = {id(self.fast): self.fast.connect(node), id(self.general): self.general.connect(node)}
        self.taken: list[bool] = []
        real: Callable[[Any, Any], Any] = produce._fast_produce

        def fast_produce(ctx: Any, req: Any) -> Any:
            if ctx.core is self.general:
                return None
            answer = real(ctx, req)
            self.taken.append(answer is not None)
            return answer

        monkeypatch.setattr(produce, "_fast_produce", fast_produce)

    def send(self, data: bytes) -> bool:
        self.taken.clear()
        outs = []
        for core in (self.fast, self.general):
            out = core.handle(self.conns[id(core)], bytearray(data))  # each its own buffer (written in place)
            outs.append((out.kind, out.reason, as_bytes(out.data) if out.kind == "send" else b"",
                         [(c, None if d is None else as_bytes(d)) for c, d in core.take_outbox()]))
        assert outs[0] == outs[1]
        assert state(self.fast) == state(self.general)
        return bool(self.taken and self.taken[0])


@pytest.fixture
def pair(monkeypatch: pytest.MonkeyPatch) -> Iterator[Pair]:
    yield Pair(monkeypatch)


def corpus() -> list[tuple[str, bytes, bool]]:
    """(what, frame, whether the fast path takes it): in order, against one pair of brokers."""
    crc = batch()
    crc[-1] ^= 0xFF  # the last record byte: the CRC no longer matches
    two = batch() + batch()
    return [
        ("one record, acks=1", frame(batch()), True),
        ("one record, acks=-1", frame(batch(), acks=-1), True),
        ("250 records", frame(batch(250, size=100)), True),
        ("v9", frame(batch(), version=9), True),
        ("v12", frame(batch(), version=12), True),
        ("v13 by topic id", frame(batch(), version=13), True),
        ("v13 unknown topic id", frame(batch(), topic="nope", version=13), False),
        ("v8 (not a fast version)", frame(batch(), version=8), False),
        ("partition 2", frame(batch(), partition=2), True),
        ("idempotent, first", frame(batch(2, pid=7, epoch=0, seq=0)), True),
        ("idempotent, next", frame(batch(1, pid=7, epoch=0, seq=2)), True),
        ("idempotent, duplicate of the first", frame(batch(2, pid=7, epoch=0, seq=0)), True),
        ("idempotent, out of order", frame(batch(1, pid=7, epoch=0, seq=9)), True),
        ("idempotent, fenced epoch", frame(batch(1, pid=7, epoch=-1, seq=3)), True),
        ("idempotent, no sequence", frame(batch(1, pid=7, epoch=0, seq=-1)), True),
        ("idempotent, new epoch not at 0", frame(batch(1, pid=7, epoch=1, seq=4)), True),
        ("idempotent, new epoch at 0", frame(batch(1, pid=7, epoch=1, seq=0)), True),
        ("idempotent, sequence wraps", frame(batch(3, pid=8, epoch=0, seq=2**31 - 2)), True),
        ("idempotent, after the wrap", frame(batch(1, pid=8, epoch=0, seq=1)), True),
        ("transactional without a transactional id", frame(batch(pid=9, epoch=0, seq=0, txn=True)), False),
        ("with a transactional id", frame(batch(pid=9, epoch=0, seq=0, txn=True), txn_id="tx", acks=-1), False),
        ("control batch from a client", frame(batch(control=True)), True),
        ("corrupt CRC", frame(crc), True),
        ("two batches", frame(two), False),
        ("a batch cut short", frame(batch()[:-3]), False),
        ("shorter than a batch header", frame(batch()[:40]), False),
        ("no records", frame(None), False),
        ("unknown topic", frame(batch(), topic="nope"), False),
        ("unknown partition", frame(batch(), partition=7), False),
        ("not the leader", frame(batch(), partition=1), False),
        ("oversized", frame(batch(20, size=50), topic="small"), True),
        ("LogAppendTime", frame(batch(3), topic="lat"), True),
        ("compacted, keys", frame(batch(2), topic="compact"), True),
        ("compacted, no keys", frame(batch(2, keys=False), topic="compact"), True),
        ("gzip", frame(batch(5, compression=Compression.GZIP)), True),
        ("zstd", frame(batch(5, compression=Compression.ZSTD)), True),
        ("acks=0", frame(batch(), acks=0), False),
        ("acks=0 that fails (closes)", frame(batch(), acks=0, topic="nope"), False),
        ("acks=2", frame(batch(), acks=2), False),
        ("two topics", frame(batch(), more=[("lat", 0, bytes(batch()))]), True),
        ("three partitions", frame(batch(), more=[("plain", 2, bytes(batch(2))), ("lat", 0, bytes(batch()))]), True),
        ("the same partition twice", frame(batch(), more=[("plain", 0, bytes(batch(3)))]), True),
        ("idempotent on two partitions", frame(batch(1, pid=11, epoch=0, seq=0),
                                               more=[("plain", 2, bytes(batch(1, pid=11, epoch=0, seq=0)))]), True),
        ("one of three refused (CRC)", frame(batch(), more=[("plain", 2, bytes(crc)), ("lat", 0, bytes(batch()))]),
         True),
        ("one of two refused (sequence)", frame(batch(1, pid=11, epoch=0, seq=7),
                                                more=[("plain", 2, bytes(batch(1, pid=11, epoch=0, seq=1)))]), True),
        ("one of two refused (no keys, compacted)", frame(batch(), more=[("compact", 0, bytes(batch(keys=False)))]),
         True),
        ("one of two to another leader", frame(batch(), more=[("plain", 1, bytes(batch()))]), False),
        ("one of two to an unknown topic", frame(batch(), more=[("nope", 0, bytes(batch()))]), False),
        ("one of two transactional", frame(batch(), more=[("lat", 0, bytes(batch(pid=9, epoch=0, seq=0, txn=True)))]),
         False),
        ("v13, two topics", frame(batch(), version=13, more=[("lat", 0, bytes(batch()))]), True),
        ("one record again", frame(batch()), True),
    ]


@pytest.mark.rule("TX-6")
@pytest.mark.rule("TX-8")
@pytest.mark.rule("TX-10")
def test_fast_path_answers_and_appends_as_the_general_path(pair: Pair) -> None:
    """Each request of the corpus, in turn, on both brokers: same bytes, same state, and the fast
    path taken exactly where its shape allows."""
    for what, data, fast in corpus():
        assert pair.send(data) is fast, what
        if what == "partition 2":
            # DeleteRecords moved the log start offset: the answers carry it (LogStartOffset)
            for core in (pair.fast, pair.general):
                for p in core.cluster.topics["plain"].partitions:
                    p.log.truncate_before(1)


def test_recording_quotas_faults_and_an_authorizer_take_the_general_path(pair: Pair) -> None:
    """What would look at the answer objects turns the fast path off (the same answers)."""
    from kwire.broker.core.configs import ResourceType
    from kwire.broker.core.faults import FaultAction, FaultRule

    cores = (pair.fast, pair.general)
    assert pair.send(frame(batch()))
    for core in cores:
        core.recording = []
    assert not pair.send(frame(batch()))
    for core in cores:
        core.recording = None
        core.faults.add(FaultRule(FaultAction.LATENCY, api_key=3, delay_ms=5, times=None))
    assert not pair.send(frame(batch()))
    for core in cores:
        core.faults.clear()
        assert core.subsystems.quotas is not None
        core.subsystems.quotas.alter((("client-id", "someone-else"),), [("producer_byte_rate", 1e9)])
    assert not pair.send(frame(batch()))
    for core in cores:
        assert core.subsystems.quotas is not None
        core.subsystems.quotas.alter((("client-id", "someone-else"),), [("producer_byte_rate", None)])
    assert pair.send(frame(batch()))
    for core in cores:
        core.configs.set(ResourceType.BROKER, "", "authorizer.class.name",
                         "org.apache.kafka.metadata.authorizer.StandardAuthorizer", static=True, custom=True)
        core.configs.set(ResourceType.BROKER, "", "allow.everyone.if.no.acl.found", "true", static=True,
                         custom=True)
    assert not pair.send(frame(batch()))


def test_the_template_follows_the_topic_and_partition(pair: Pair) -> None:
    """Answers patched from a cached template name the request's topic and partition."""
    for partition in (0, 2, 0, 2):
        assert pair.send(frame(batch(), partition=partition))
    assert pair.send(frame(batch(), topic="lat"))
    assert pair.send(frame(batch(), topic="lat", version=13))


_batches = st.tuples(
    st.sampled_from(["plain", "lat", "small", "compact"]), st.integers(0, 3), st.sampled_from([-1, 5, 6]),
    st.integers(-1, 2), st.sampled_from([-1, 0, 1, 2, 3, 2**31 - 1]), st.integers(1, 12), st.booleans(),
    st.booleans(), st.booleans())
_requests = st.tuples(st.lists(_batches, min_size=1, max_size=3), st.sampled_from([8, 9, 11, 12, 13]),
                      st.sampled_from([-1, 0, 1]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_requests, min_size=1, max_size=25))
def test_random_sequences_agree(monkeypatch: pytest.MonkeyPatch, requests: list[tuple[Any, ...]]) -> None:
    """Random produce sequences (one to three partitions per request; producer ids, epochs,
    sequences, sizes, keys, versions, acks, corrupt and transactional batches) leave both brokers
    with the same answers and state."""
    with monkeypatch.context() as m:
        pair = Pair(m)
        for batches, version, acks in requests:
            parts = []
            for topic, partition, pid, epoch, seq, n, txn, corrupt, keys in batches:
                recs = batch(n, pid=pid, epoch=epoch, seq=seq, txn=txn and pid >= 0, keys=keys, size=15)
                if corrupt:
                    recs[-1] ^= 0x01
                parts.append((topic, partition, bytes(recs)))
            (topic, partition, first), rest = parts[0], parts[1:]
            pair.send(frame(first, topic=topic, partition=partition, acks=acks, version=version, more=rest))

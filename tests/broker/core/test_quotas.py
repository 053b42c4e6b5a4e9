"""Client quotas and KIP-219 throttling on the broker clock: ClientQuotaControlManager,
ClientQuotasImage, ClientQuotaManager (Rate over SampledStat, QuotaUtils.throttleTime),
ControllerMutationQuotaManager (TokenBucket), ClientRequestQuotaManager and KafkaApis at d79bd502
(QUO-1..QUO-7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker.connection import Connection
from kwire.broker.core.quotas import CLIENT_ID, IP, USER, ClientQuotas, RateSensor, parse_quota_setting
from kwire.conformance.rules import Frame, check_frames, rule_by_id
from kwire.errors import KafkaError
from kwire.protocol import decode_response, encode_request
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.alter_client_quotas import AlterClientQuotasRequest
from kwire.protocol.messages.create_topics import CreateTopicsRequest
from kwire.protocol.messages.describe_client_quotas import DescribeClientQuotasRequest
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequest_WritableTxnMarkerTopic,
)
from kwire.protocol.splice import as_bytes
from tests.broker.helpers import CoreClient, batch, make_core

QUOTAS = "kwire.client.quotas"


def produce_req(topic: str = "t", size: int = 1000) -> ProduceRequest:
    return ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch([b"x" * size]))])])


def fetch_req(topic: str = "t", offset: int = 0) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=offset, log_start_offset=-1, partition_max_bytes=1 << 20)])])


@pytest.mark.rule("QUO-1")
def test_alter_and_describe_validate_and_filter_as_the_controller() -> None:
    core, _ = make_core()
    c = CoreClient(core)

    def alter(entity: list[tuple[str, str | None]], key: str, value: float, remove: bool = False) -> int:
        resp = c.send(AlterClientQuotasRequest(entries=[AlterClientQuotasRequest.EntryData(
            entity=[AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            ops=[AlterClientQuotasRequest.OpData(key=key, value=value, remove=remove)])]), 1)
        return resp.entries[0].error_code

    assert alter([(USER, "alice")], "producer_byte_rate", 1024) == ErrorCode.NONE
    assert alter([(USER, "alice"), (CLIENT_ID, None)], "consumer_byte_rate", 2048) == ErrorCode.NONE
    assert alter([(CLIENT_ID, "app")], "request_percentage", 12.5) == ErrorCode.NONE
    assert alter([(IP, "10.0.0.1")], "connection_creation_rate", 5) == ErrorCode.NONE
    for bad in (([(USER, "a"), (IP, "10.0.0.1")], "producer_byte_rate", 1.0),  # ip stands alone
                ([(IP, "10.0.0.1")], "producer_byte_rate", 1.0),  # not an ip key
                ([(USER, "a")], "producer_byte_rate", 1.5),  # LONG: no fraction
                ([(USER, "a")], "consumer_byte_rate", 0.0),  # must be > 0
                ([(USER, "")], "producer_byte_rate", 1.0),  # empty name
                ([("group", "g")], "producer_byte_rate", 1.0)):
        assert alter(*bad) == ErrorCode.INVALID_REQUEST, bad

    def describe(components: list[tuple[str, int, str | None]], strict: bool = False) -> set[tuple]:
        resp = c.send(DescribeClientQuotasRequest(components=[DescribeClientQuotasRequest.ComponentData(
            entity_type=t, match_type=m, match=n) for t, m, n in components], strict=strict), 1)
        assert resp.error_code == 0, resp
        return {tuple((e.entity_type, e.entity_name) for e in entry.entity) for entry in resp.entries}

    assert describe([(USER, 0, "alice")]) == {((USER, "alice"),), ((CLIENT_ID, None), (USER, "alice"))}
    assert describe([(USER, 0, "alice")], strict=True) == {((USER, "alice"),)}
    assert describe([(CLIENT_ID, 1, None)]) == {((CLIENT_ID, None), (USER, "alice"))}
    assert describe([(CLIENT_ID, 2, None)], strict=True) == {((CLIENT_ID, "app"),)}
    assert len(describe([])) == 4 and describe([], strict=True) == set()
    bad = c.send(DescribeClientQuotasRequest(components=[DescribeClientQuotasRequest.ComponentData(
        entity_type=IP, match_type=2, match=None), DescribeClientQuotasRequest.ComponentData(
        entity_type=USER, match_type=2, match=None)]), 1)
    assert bad.error_code == ErrorCode.INVALID_REQUEST
    assert alter([(USER, "alice")], "producer_byte_rate", 0, remove=True) == ErrorCode.NONE
    assert describe([(USER, 0, "alice")], strict=True) == set()


@pytest.mark.rule("QUO-1")
def test_quotas_persist_and_start_from_the_setting(tmp_path: Path) -> None:
    settings = {QUOTAS: "user=alice:producer_byte_rate=1024,consumer_byte_rate=4096;client-id=<default>:"
                        "controller_mutation_rate=2"}
    core, _ = make_core(settings=settings, data_dir=str(tmp_path))
    assert core.subsystems.quotas is not None
    assert core.subsystems.quotas.entities == {
        ((USER, "alice"),): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 4096.0},
        ((CLIENT_ID, None),): {"controller_mutation_rate": 2.0}}
    core.subsystems.quotas.alter(((IP, None),), [("connection_creation_rate", 10.0)])
    core.close()
    again, _ = make_core(data_dir=str(tmp_path))
    assert again.subsystems.quotas is not None
    assert again.subsystems.quotas.entities == core.subsystems.quotas.entities
    again.close()
    with pytest.raises(KafkaError):
        parse_quota_setting("user=alice")


@pytest.mark.rule("QUO-2")
def test_rate_window_and_throttle_time_are_kafkas() -> None:
    """Rate.windowSize counts at least samples-1 whole windows; throttle = (rate-bound)/bound*window."""
    s = RateSensor()
    s.record(2000, 0, 11, 1000)
    assert s.window_size(0, 11, 1000) == 10_000 and s.rate(0, 11, 1000) == 200.0
    s.record(2000, 15_000, 11, 1000)  # 15 s later the first sample is obsolete (11 windows)
    assert s.rate(15_000, 11, 1000) == 200.0
    core, _ = make_core(settings={QUOTAS: "user=ANONYMOUS:producer_byte_rate=100"})
    q = core.subsystems.quotas
    assert q is not None
    assert q.record_rate("producer_byte_rate", "ANONYMOUS", "app", 500, 0) == 0  # 50 B/s over 10 s
    # 2000 B in the 10 s window: 200 B/s, twice the bound -> (200-100)/100 * 10000 ms
    assert q.record_rate("producer_byte_rate", "ANONYMOUS", "app", 1500, 0) == 10_000


@pytest.mark.rule("QUO-2")
def test_produce_over_quota_answers_at_once_with_throttle_time_and_mutes() -> None:
    core, clock = make_core(settings={QUOTAS: "client-id=<default>:producer_byte_rate=100"})
    core.create_topic("t", 1)
    c = CoreClient(core)
    first = c.send(produce_req(size=2000), 9)
    t = first.responses[0].partition_responses[0]
    assert t.error_code == 0  # the records are appended; only the client is slowed down
    assert first.throttle_time_ms > 0
    assert c.conn.muted_until_ms == clock.now_ms() + first.throttle_time_ms
    # Below KIP-219 (Produce v5) too the answer goes at once and the connection is muted: Kafka at
    # d79bd502 no longer holds answers (RequestHandlerHelper.throttle, SocketServer's mute states).
    old = c.send(produce_req(size=2000), 5)
    assert old is not None and old.throttle_time_ms > 0 and core.unanswered_requests() == 0
    assert c.conn.muted_until_ms == clock.now_ms() + old.throttle_time_ms


@pytest.mark.rule("QUO-3")
def test_throttled_fetch_carries_no_data_and_is_not_counted() -> None:
    core, _ = make_core(settings={QUOTAS: "user=ANONYMOUS:consumer_byte_rate=100"})
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert c.send(produce_req(size=3000), 9).throttle_time_ms == 0
    throttled = c.send(fetch_req(), 11)
    assert throttled.throttle_time_ms > 0 and throttled.responses == []
    q = core.subsystems.quotas
    assert q is not None
    # unrecorded: the sensor holds nothing for the fetch that sent no data
    [sensor] = [v for k, v in q._rates.items() if k[0] == "consumer_byte_rate"]
    assert sum(x.value for x in sensor.samples) == 0


@pytest.mark.rule("QUO-4")
def test_controller_mutations_strict_and_permissive() -> None:
    """Burst = 11 windows x 1 s x 2 partitions/s = 22 partitions; strict (CreateTopics v6+) refuses
    once the bucket is negative, with THROTTLING_QUOTA_EXCEEDED, permissive (v5) only throttles."""
    core, _ = make_core(settings={QUOTAS: "user=ANONYMOUS:controller_mutation_rate=2"})
    c = CoreClient(core)

    def create(name: str, parts: int, version: int) -> Any:
        return c.send(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=parts, replication_factor=1)], timeout_ms=1000), version)

    big = create("a", 30, 7)  # 22 tokens: allowed (the bucket was not negative), now at -8
    assert big.topics[0].error_code == 0 and big.throttle_time_ms == 0
    refused = create("b", 1, 7)
    assert refused.topics[0].error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert refused.throttle_time_ms == 4000  # -(-8) / 2 * 1000
    assert "b" not in core.cluster.topics
    permissive = create("c", 1, 5)
    assert permissive.topics[0].error_code == 0 and permissive.throttle_time_ms == 4500
    core.advance(4500)
    assert create("d", 1, 7).topics[0].error_code == 0


@pytest.mark.rule("QUO-5")
def test_a_throttled_connection_handles_nothing_until_the_throttle_time_passed() -> None:
    core, clock = make_core(settings={QUOTAS: "client-id=<default>:producer_byte_rate=100"})
    core.create_topic("t", 1)
    core.recording = []
    conn = Connection(core, min(core.cluster.nodes), "10.0.0.9:4000")

    def frame(body: Any, version: int, corr: int) -> bytes:
        return encode_request(body, version, correlation_id=corr, client_id="app")

    conn.receive_data(frame(produce_req(size=2000), 9, 1) + frame(MetadataRequest(topics=[]), 12, 2))
    sent = b"".join(bytes(p) for p in conn.pieces_to_send())
    first = decode_response(sent[4:], 0, 9)
    assert first.correlation_id == 1 and first.body.throttle_time_ms > 0
    assert len(core.recording) == 1  # the Metadata request waits, muted
    core.advance(first.body.throttle_time_ms - 1)
    for conn_id, data in core.take_outbox():
        assert conn_id == conn.conn_id
        conn.complete(data)
    assert len(core.recording) == 1
    core.advance(1)
    for _, data in core.take_outbox():
        conn.complete(data)
    assert len(core.recording) == 2
    meta = core.recording[1]
    assert meta.received_at_ms < meta.at_ms == core.recording[0].at_ms + first.body.throttle_time_ms
    assert as_bytes(b"".join(bytes(p) for p in conn.pieces_to_send()))  # the Metadata answer went out


@pytest.mark.rule("QUO-6")
def test_client_rule_cr10_flags_requests_sent_during_a_throttle() -> None:
    rule = rule_by_id("CR-10")
    throttled = Frame(0, 0, 1, 7, 0, 9, 1, "app", None, response=ProduceResponseStub(200), response_at_ms=100)
    early = Frame(1, 300, 1, 7, 3, 12, 2, "app", None, received_at_ms=250, response_at_ms=300)
    later = Frame(2, 310, 1, 7, 3, 12, 3, "app", None, received_at_ms=310, response_at_ms=310)
    assert [v.rule_id for v in check_frames([throttled, early], [rule])] == ["CR-10"]
    assert check_frames([throttled, later], [rule]) == []
    old = Frame(0, 0, 1, 7, 0, 5, 1, "app", None, response=ProduceResponseStub(200), response_at_ms=100)
    assert check_frames([old, early], [rule]) == []  # v5: the client relies on the broker's mute alone
    # shouldClientThrottle as the responses define it: Metadata from v6, SaslHandshake never (no
    # ThrottleTimeMs), ShareFetch (no override) wherever its response has the field
    assert [ClientQuotas.client_throttles(k, v) for k, v in ((3, 5), (3, 6), (17, 1), (36, 2), (78, 0))] == [
        False, True, False, False, True]

    def produce_at(ms: int) -> Frame:
        return Frame(1, ms, 1, 7, 0, 9, 2, "app", None, received_at_ms=ms, response_at_ms=ms)

    # A Produce already in flight (before the answer, or within the 100 ms grace) is not counted.
    assert check_frames([throttled, produce_at(95)], [rule]) == []
    assert check_frames([throttled, produce_at(190)], [rule]) == []
    assert [v.rule_id for v in check_frames([throttled, produce_at(250)], [rule])] == ["CR-10"]


class ProduceResponseStub:
    def __init__(self, throttle_time_ms: int) -> None:
        self.throttle_time_ms = throttle_time_ms


@pytest.mark.rule("QUO-3")
def test_a_fetch_asks_for_no_more_than_the_quota_window_holds() -> None:
    """ClientQuotaManager.maxValueInQuotaWindow: 100 B/s x 10 windows = 1000 bytes per fetch, so a
    consumer behind its quota still makes progress (two 600-byte batches come one per fetch)."""
    core, _ = make_core(settings={QUOTAS: "user=ANONYMOUS:consumer_byte_rate=100"})
    core.create_topic("t", 1)
    c = CoreClient(core)
    c.send(produce_req(size=600), 9)
    c.send(produce_req(size=600), 9)
    first = c.send(fetch_req(), 11)
    assert first.throttle_time_ms == 0
    records = first.responses[0].partitions[0].records
    assert 600 < len(records) < 1000  # one batch: the second would pass the 1000-byte cap


class StepTimer:
    """A request timer that moves ``step`` ns per read (the core reads it at fixed points: a
    request taken, a deferred handler's first pass, the throttle decision, the answer encoded);
    ``wait`` adds time no read sees as the core's own (a long poll parked)."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.ns = 0

    def __call__(self) -> int:
        self.ns += self.step
        return self.ns


def request_quota_core(percent: float, step_ms: float, **settings: str) -> tuple[Any, Any, StepTimer]:
    core, clock = make_core(settings={QUOTAS: f"user=ANONYMOUS:request_percentage={percent}", **settings})
    timer = StepTimer(int(step_ms * 1_000_000))
    core.request_timer = timer
    return core, clock, timer


def recorded_percent(core: Any) -> float:
    q = core.subsystems.quotas
    sensors = [v for k, v in q._rates.items() if k[0] == "request_percentage"]
    return sum(x.value for s in sensors for x in s.samples)


@pytest.mark.rule("QUO-7")
def test_request_percentage_counts_the_cores_time_and_throttles_with_kafkas_formula() -> None:
    """ClientRequestQuotaManager: nanos x 100 / 1e9 on a Rate of 11 x 1 s windows. Each Metadata
    costs 5 ms before the decision (recorded with the check) and 5 ms encoding (recordNoThrottle):
    0.5 + 0.5 percent. The 11th sees 10.5 over the 10 s window: 1.05 % against 1 % ->
    (1.05 - 1) / 1 x 10000 = 500 ms, in the answer and as the connection's mute."""
    core, clock, _ = request_quota_core(1, 5)
    c = CoreClient(core)
    for _ in range(10):
        assert c.send(MetadataRequest(topics=[]), 12).throttle_time_ms == 0
    assert recorded_percent(core) == pytest.approx(10.0)
    eleventh = c.send(MetadataRequest(topics=[]), 12)
    assert eleventh.throttle_time_ms == 500
    assert c.conn.muted_until_ms == clock.now_ms() + 500


@pytest.mark.rule("QUO-7")
def test_request_throttle_is_bounded_by_one_quota_window() -> None:
    """ClientRequestQuotaManager.throttleTime: QuotaUtils.boundedThrottleTime with
    quota.window.size.seconds (here 2 s): (3 - 1) / 1 x 20000 ms is cut to 2000."""
    core, _, _ = request_quota_core(1, 100, **{"quota.window.size.seconds": "2"})
    c = CoreClient(core)
    assert c.send(MetadataRequest(topics=[]), 12).throttle_time_ms == 0  # 10 %-s / 20 s = 0.5 %
    assert c.send(MetadataRequest(topics=[]), 12).throttle_time_ms == 2000  # 30 / 20 = 1.5 %: 10 s, bounded


@pytest.mark.rule("QUO-7")
def test_a_deferred_answer_counts_its_handlers_first_pass_not_its_wait() -> None:
    """Request.requestThreadTimeNanos stops at apiLocalCompleteTimeNanos (the end of
    KafkaApis.handle): a long poll's time parked is not the client's."""
    core, _, timer = request_quota_core(50, 5)
    core.create_topic("t", 1)
    c = CoreClient(core)
    req = fetch_req()
    req.max_wait_ms, req.min_bytes = 500, 1
    assert c.send(req, 11) is None  # parked
    timer.ns += 10_000_000_000  # ten seconds of wall time while parked
    core.advance(500)
    [answer] = c.deferred()
    assert answer.throttle_time_ms == 0
    assert recorded_percent(core) == pytest.approx(1.0)  # 5 ms first pass + 5 ms encoding


@pytest.mark.rule("QUO-7")
def test_request_and_byte_quotas_together_take_the_larger_throttle() -> None:
    """KafkaApis.handleProduceRequest / handleFetchRequest: max(bandwidth, request) throttle; a
    Fetch throttled by its request time alone also answers without data, its bytes unrecorded."""
    core, _ = make_core(settings={QUOTAS: "user=ANONYMOUS:request_percentage=1,producer_byte_rate=100"})
    core.request_timer = StepTimer(60_000_000)  # 6 % per read
    core.create_topic("t", 1)
    c = CoreClient(core)
    first = c.send(produce_req(size=2000), 9)  # request: 6 / 10 s = 0.6 %, no throttle; bytes: ~21 s
    assert first.throttle_time_ms > 10_000
    second = c.send(produce_req(size=100), 9)  # request: 18 / 10 = 1.8 % -> 1000 (bounded); bytes: more
    assert second.throttle_time_ms > first.throttle_time_ms
    core2, _ = make_core(settings={QUOTAS: "user=ANONYMOUS:request_percentage=1"})
    core2.request_timer = StepTimer(60_000_000)
    core2.create_topic("t", 1)
    c2 = CoreClient(core2)
    c2.send(produce_req(size=100), 9)
    throttled = c2.send(fetch_req(), 11)
    assert throttled.throttle_time_ms == 1000 and throttled.responses == []


@pytest.mark.rule("QUO-7")
def test_exempt_requests_stay_off_the_request_quota() -> None:
    """WriteTxnMarkers is a ClusterAction API (sendResponseExemptThrottle), an acks=0 Produce
    is not recorded (handleProduceRequest), and without a request_percentage quota nothing is
    timed at all (quotasEnabled)."""
    core, _, timer = request_quota_core(1, 100)
    core.create_topic("t", 1)
    c = CoreClient(core)
    marker = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=1, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
        topics=[WriteTxnMarkersRequest_WritableTxnMarkerTopic(name="t", partition_indexes=[0])])])
    for _ in range(3):
        assert c.send(marker, 1).markers
    req = produce_req(size=10)
    req.acks = 0
    assert c.send(req, 9) is None
    assert recorded_percent(core) == 0
    plain, _ = make_core(settings={QUOTAS: "user=ANONYMOUS:producer_byte_rate=100000"})
    plain.request_timer = untimed = StepTimer(1)
    CoreClient(plain).send(MetadataRequest(topics=[]), 12)
    assert untimed.ns == 0
    assert timer.ns > 0


@pytest.mark.rule("QUO-7")
def test_a_throttled_share_fetch_answers_empty_and_its_records_wait_for_their_locks() -> None:
    """KafkaApis.handleShareFetchRequest: ShareFetch counts on consumer_byte_rate and the request
    quota; throttled, ShareFetchContext.throttleResponse answers without data, endpoints or lock
    timeout, and the records it acquired come back only when their locks expire."""
    from kwire.broker.core.configs import ResourceType
    from tests.broker.share_helpers import ShareClient, acquired

    core, _ = make_core(settings={QUOTAS: "user=ANONYMOUS:consumer_byte_rate=10"})
    core.create_topic("t", 1)
    core.configs.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "earliest")
    CoreClient(core).send(produce_req(size=300), 9)
    m = ShareClient(core)
    m.join(["t"])
    throttled = m.fetch({"t": [0]})
    assert throttled.throttle_time_ms > 0 and throttled.responses == [] and throttled.node_endpoints == []
    assert throttled.acquisition_lock_timeout_ms == 0
    core.advance(throttled.throttle_time_ms + 30_000)  # past the throttle and the 30 s record lock
    core.subsystems.quotas.alter(((USER, "ANONYMOUS"),), [("consumer_byte_rate", None)])
    assert acquired(m.fetch({"t": [0]})) == [(0, 0, 2)]  # delivered again, its delivery count 2

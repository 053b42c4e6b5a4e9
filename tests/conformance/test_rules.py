"""Client-behaviour rules (docs/client-rules.md): each one tripped by a scripted raw-socket client.

The misbehaving client is kwire's own codec over a socket (``WireClient``) talking to an
in-process kwire broker that records its traffic; the rules then read the recording. Where
the broker does not serve an API yet (share groups, transactions), the request is still
recorded and the rules decode it themselves; the well-behaved counterparts of those cases
run over frames built from decoded messages.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kwire.conformance.rules import RULES, Frame, Violation, check_frames, check_recording, rule_by_id
from kwire.conformance.wire_client import WireClient, WireClosed
from kwire.control import Broker, BrokerConfig
from kwire.protocol import request_class, response_class
from kwire.records import BatchBuilder

TOPIC = "t"
TOPIC_ID = str(uuid.UUID(int=7))


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic(TOPIC, 2)
        b.start_recording()
        yield b


def _client(broker: Broker) -> WireClient:
    return WireClient(broker.bootstrap, timeout_s=10).connect()


def _violations(broker: Broker, rule_id: str) -> list[Violation]:
    return [v for v in check_recording(broker.recorded()) if v.rule_id == rule_id]


def _api_versions(c: WireClient) -> Any:
    return c.request(18, 3, {"ClientSoftwareName": "rules-test", "ClientSoftwareVersion": "1"})


def _records(pid: int, epoch: int, base_sequence: int, count: int) -> str:
    b = BatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=base_sequence)
    for i in range(count):
        b.append(b"v%d" % i)
    return b.build().hex()


def _produce(pid: int, epoch: int, seq: int, count: int, partition: int = 0, txn: str | None = None) -> dict:
    return {"TransactionalId": txn, "Acks": -1, "TimeoutMs": 5000, "TopicData": [
        {"Name": TOPIC, "PartitionData": [{"Index": partition, "Records": _records(pid, epoch, seq, count)}]}]}


def _share_fetch(epoch: int, *, acks: list[tuple[int, int, list[int]]] = (), renew: bool = False,
                 max_wait_ms: int = 0, member: str = "m1") -> dict:  # type: ignore[assignment]
    return {"GroupId": "sg", "MemberId": member, "ShareSessionEpoch": epoch, "MaxWaitMs": max_wait_ms,
            "MinBytes": 0, "MaxBytes": 0 if renew else 1 << 20, "MaxRecords": 0 if renew else 10,
            "BatchSize": 0 if renew else 10, "IsRenewAck": renew,
            "Topics": [{"TopicId": TOPIC_ID, "Partitions": [{"PartitionIndex": 0, "PartitionMaxBytes": 0,
                        "AcknowledgementBatches": [{"FirstOffset": a, "LastOffset": z, "AcknowledgeTypes": t}
                                                   for a, z, t in acks]}]}]}


def _share_ack(epoch: int, acks: list[tuple[int, int, list[int]]], member: str = "m1") -> dict:
    return {"GroupId": "sg", "MemberId": member, "ShareSessionEpoch": epoch, "Topics": [
        {"TopicId": TOPIC_ID, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
            {"FirstOffset": a, "LastOffset": z, "AcknowledgeTypes": t} for a, z, t in acks]}]}]}


def _send_and_expect_close(c: WireClient, api_key: int, version: int, body: dict) -> None:
    """Send a request the broker does not serve: it must close the connection, not answer."""
    c.send(api_key, version, body)
    with pytest.raises(WireClosed):
        c.recv_frame()


def _send_and_read(c: WireClient, api_key: int, version: int, body: dict) -> None:
    """Send a request the broker serves and read its answer (an error answer is fine: the rules
    look at what the client sent)."""
    c.send(api_key, version, body)
    c.recv_frame()


def _frame(index: int, api_key: int, version: int, request: dict, response: dict | None = None,
           conn_id: int = 1, corr: int | None = None) -> Frame:
    """A decoded frame as a recording would hold it (for APIs the broker does not serve yet)."""
    req = request_class(api_key).from_json(request, version)
    resp = response_class(api_key).from_json(response, version) if response is not None else None
    return Frame(index, 0, 1, conn_id, api_key, version, index if corr is None else corr, "test", req, resp)


def _advertise(index: int, keys: dict[int, tuple[int, int]]) -> Frame:
    return _frame(index, 18, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"},
                  {"ErrorCode": 0, "ApiKeys": [{"ApiKey": k, "MinVersion": lo, "MaxVersion": hi}
                                               for k, (lo, hi) in keys.items()]})


def test_every_rule_has_an_id_and_a_line_in_docs() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "client-rules.md").read_text()
    ids = [r.id for r in RULES]
    assert len(set(ids)) == len(ids)
    for r in RULES:
        assert f"**{r.id}**" in doc and r.statement in doc, r.id


def test_cr1_version_above_the_advertised_range_is_reported(broker: Broker) -> None:
    """CR-1: Metadata v8 to a broker that advertises Metadata up to v5 is a violation."""
    broker.cap_api_version(3, 5)
    with _client(broker) as c:
        versions = _api_versions(c)
        assert {k.api_key: k.max_version for k in versions.api_keys}[3] == 5
        c.request(3, 5, {"Topics": None})
        assert _violations(broker, "CR-1") == []
        _send_and_expect_close(c, 3, 8, {"Topics": None})
    [v] = _violations(broker, "CR-1")
    assert "Metadata v8 is outside the advertised range v0-v5" in v.explanation
    assert v.frames[0].api_key == 3 and v.frames[0].api_version == 8
    assert v.connection.startswith("broker ")
    text = v.format()
    assert text.startswith("CR-1 ") and "Metadata v8" in text and '"Topics": null' in text


def test_cr2_correlation_id_reused_on_one_connection_is_reported(broker: Broker) -> None:
    """CR-2: the same correlation id twice on one connection; the same id on two connections is fine."""
    with _client(broker) as a, _client(broker) as b:
        a.request(3, 5, {"Topics": None}, correlation_id=42)
        b.request(3, 5, {"Topics": None}, correlation_id=42)
        assert _violations(broker, "CR-2") == []
        a.request(3, 5, {"Topics": None}, correlation_id=42)
    [v] = _violations(broker, "CR-2")
    assert [f.correlation_id for f in v.frames] == [42, 42]
    assert v.frames[0].conn_id == v.frames[1].conn_id
    assert "already used by request" in v.explanation


def test_cr2_exempts_the_sasl_exchange(broker: Broker) -> None:
    """CR-2: SaslHandshake/SaslAuthenticate ids may repeat (SaslClientAuthenticator's reserved range is
    reused on each KIP-368 re-authentication); other requests may not reuse each other's ids."""
    reserved = 2**31 - 1 - 7  # SaslClientAuthenticator.MIN_RESERVED_CORRELATION_ID
    with _client(broker) as a:
        a.request(17, 1, {"Mechanism": "PLAIN"}, correlation_id=reserved)
        a.request(17, 1, {"Mechanism": "PLAIN"}, correlation_id=reserved)
        a.request(3, 5, {"Topics": None}, correlation_id=reserved)
        assert _violations(broker, "CR-2") == []
        a.request(3, 5, {"Topics": None}, correlation_id=reserved)
    assert [f.api_key for f in _violations(broker, "CR-2")[0].frames] == [3, 3]


def test_cr3_producer_sequence_gap_is_reported_and_retries_are_not(broker: Broker) -> None:
    """CR-3: sequences 0-1, then 2 and a retry of 0-1 are fine; then a jump to 9 is a violation."""
    with _client(broker) as c:
        init = c.request(22, 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000,
                                 "ProducerId": -1, "ProducerEpoch": -1})
        pid, epoch = init.producer_id, init.producer_epoch
        assert c.request(0, 9, _produce(pid, epoch, 0, 2)).responses[0].partition_responses[0].error_code == 0
        c.request(0, 9, _produce(pid, epoch, 2, 1))
        c.request(0, 9, _produce(pid, epoch, 0, 2))  # a retry: same sequences, answered as a duplicate
        assert _violations(broker, "CR-3") == []
        c.request(0, 9, _produce(pid, epoch, 9, 1))
    [v] = _violations(broker, "CR-3")
    assert "sequence 9 after 2 (expected 3)" in v.explanation
    assert v.frames[-1].api_key == 0


def test_cr3_retry_after_an_error_answer_is_not_a_fresh_start(broker: Broker) -> None:
    """CR-3: a batch answered NOT_LEADER_OR_FOLLOWER and then resent (as during failover) is no violation."""
    with _client(broker) as c:
        init = c.request(22, 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000,
                                 "ProducerId": -1, "ProducerEpoch": -1})
        pid, epoch = init.producer_id, init.producer_epoch
        c.request(0, 9, _produce(pid, epoch, 0, 2))
        broker.inject_error(api_key=0, error_code=6, times=1)
        assert c.request(0, 9, _produce(pid, epoch, 2, 2)).responses[0].partition_responses[0].error_code == 6
        assert c.request(0, 9, _produce(pid, epoch, 2, 2)).responses[0].partition_responses[0].error_code == 0
    assert _violations(broker, "CR-3") == []


def test_cr3_fresh_producer_epoch_must_start_at_zero(broker: Broker) -> None:
    """CR-3: the first batch of an epoch handed out by InitProducerId starts at sequence 0."""
    with _client(broker) as c:
        init = c.request(22, 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000,
                                 "ProducerId": -1, "ProducerEpoch": -1})
        c.request(0, 9, _produce(init.producer_id, init.producer_epoch, 4, 1, partition=1))
    [v] = _violations(broker, "CR-3")
    assert f"starts {TOPIC}-1 at sequence 4, not 0" in v.explanation


def _fetch(session_id: int, epoch: int) -> dict:
    return {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 0, "MaxBytes": 1 << 20, "IsolationLevel": 0,
            "SessionId": session_id, "SessionEpoch": epoch,
            "Topics": [{"Topic": TOPIC, "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0,
                                                         "LastFetchedEpoch": -1, "LogStartOffset": -1,
                                                         "PartitionMaxBytes": 1 << 20}]}],
            "ForgottenTopicsData": [], "RackId": ""}


def test_cr4_fetch_session_epoch_skipping_one_is_reported(broker: Broker) -> None:
    """CR-4: a fetch session used at epochs 1, 2 then 4 breaks the +1 rule at 4."""
    with _client(broker) as c:
        opened = c.request(1, 12, _fetch(0, 0))
        sid = opened.session_id
        assert sid != 0
        c.request(1, 12, _fetch(sid, 1))
        c.request(1, 12, _fetch(sid, 2))
        assert _violations(broker, "CR-4") == []
        c.request(1, 12, _fetch(sid, 4))
    [v] = _violations(broker, "CR-4")
    assert f"fetch session {sid} epoch 4" in v.explanation and "(expected 3)" in v.explanation
    assert [f.request.session_epoch for f in v.frames] == [2, 4]


def test_cr5_share_session_epoch_not_starting_at_zero_is_reported(broker: Broker) -> None:
    """CR-5: a ShareFetch at epoch 2 with no session opened at 0, and a ShareAcknowledge at epoch 0."""
    with _client(broker) as c:
        _send_and_read(c, 78, 1, _share_fetch(2))
    with _client(broker) as c:
        _send_and_read(c, 79, 1, _share_ack(0, [(0, 0, [1])]))
    explanations = [v.explanation for v in _violations(broker, "CR-5")]
    assert any("ShareFetch with epoch 2 before a ShareFetch with epoch 0" in e for e in explanations)
    assert any("ShareAcknowledge with epoch 0" in e for e in explanations)


def test_cr5_share_session_epochs_count_up_across_fetch_and_acknowledge() -> None:
    """CR-5: 0, 1 (ShareAcknowledge on another connection), 2 is clean: the session is the member's,
    not the connection's (SS-1); then 4 skips one; after the broker ended the session
    (SHARE_SESSION_NOT_FOUND) the next request must reopen at 0."""
    frames = [_frame(0, 78, 1, _share_fetch(0)), _frame(1, 79, 1, _share_ack(1, []), conn_id=2),
              _frame(2, 78, 1, _share_fetch(2))]
    assert rule_by_id("CR-5").run(frames) == []
    frames.append(_frame(3, 78, 1, _share_fetch(4)))
    frames.append(_frame(4, 78, 1, _share_fetch(5), {
        "ErrorCode": 122, "AcquisitionLockTimeoutMs": 0, "Responses": [], "NodeEndpoints": []}))
    frames.append(_frame(5, 78, 1, _share_fetch(6)))
    vs = rule_by_id("CR-5").run(frames)
    assert [v.frames[-1].index for v in vs] == [3, 5]
    assert "(expected 3)" in vs[0].explanation and "before a ShareFetch with epoch 0" in vs[1].explanation


def test_cr6_renew_to_a_broker_without_share_fetch_v2_is_reported(broker: Broker) -> None:
    """CR-6: RENEW (type 4) in ShareFetch v2 to a broker that never advertised ShareFetch v2."""
    broker.cap_api_version("ShareFetch", 1)  # a broker without ShareFetch v2
    with _client(broker) as c:
        versions = _api_versions(c)
        assert all(k.api_key != 78 or k.max_version < 2 for k in versions.api_keys)
        _send_and_expect_close(c, 78, 2, _share_fetch(1, acks=[(0, 3, [4])], renew=True))
    [v] = _violations(broker, "CR-6")
    assert "RENEW in ShareFetch v2" in v.explanation


def test_cr6_renew_is_fine_once_v2_is_advertised() -> None:
    """CR-6: the same RENEW after ApiVersions advertised ShareFetch v2 breaks nothing; v1 does."""
    renew = _frame(1, 78, 2, _share_fetch(1, acks=[(0, 3, [4])], renew=True))
    assert rule_by_id("CR-6").run([_advertise(0, {78: (1, 2), 79: (1, 2)}), renew]) == []
    [v] = rule_by_id("CR-6").run([_advertise(0, {78: (1, 1), 79: (1, 1)}), renew])
    assert "advertised up to v1" in v.explanation


def test_cr7_renew_only_share_fetch_with_wait_is_reported(broker: Broker) -> None:
    """CR-7: a renew-only ShareFetch with MaxWaitMs 500; the all-zero one passes."""
    with _client(broker) as c:
        _send_and_read(c, 78, 2, _share_fetch(1, acks=[(0, 3, [4])], renew=True, max_wait_ms=500))
    [v] = _violations(broker, "CR-7")
    assert v.explanation == "renew-only ShareFetch with non-zero MaxWaitMs"
    ok = _frame(0, 78, 2, _share_fetch(1, acks=[(0, 3, [4])], renew=True))
    assert rule_by_id("CR-7").run([ok]) == []


def test_cr8_transactional_produce_to_a_partition_not_added_is_reported(broker: Broker) -> None:
    """CR-8: a TV1 transactional produce (v9) to t-0 with no AddPartitionsToTxn before it."""
    with _client(broker) as c:
        c.send(0, 9, _produce(1000, 0, 0, 1, txn="tx-1"))
        # A broker without transactions may close; the request is recorded either way.
        with contextlib.suppress(WireClosed):
            c.recv_frame()
    [v] = _violations(broker, "CR-8")
    assert "'tx-1' to t-0, not added to the transaction" in v.explanation


def test_cr8_partitions_added_then_produced_are_fine_until_end_txn() -> None:
    """CR-8: AddPartitionsToTxn v3 (success) then produce is clean; after EndTxn it is a violation again."""
    add = _frame(0, 24, 3, {"V3AndBelowTransactionalId": "tx", "V3AndBelowProducerId": 7,
                            "V3AndBelowProducerEpoch": 0, "V3AndBelowTopics": [{"Name": TOPIC, "Partitions": [0]}]},
                 {"ThrottleTimeMs": 0, "ResultsByTopicV3AndBelow": [
                     {"Name": TOPIC, "ResultsByPartition": [{"PartitionIndex": 0, "PartitionErrorCode": 0}]}]})
    produce = _frame(1, 0, 9, _produce(7, 0, 0, 1, txn="tx"))
    assert rule_by_id("CR-8").run([add, produce]) == []
    end = _frame(2, 26, 3, {"TransactionalId": "tx", "ProducerId": 7, "ProducerEpoch": 0, "Committed": True})
    again = _frame(3, 0, 9, _produce(7, 0, 1, 1, txn="tx"))
    [v] = rule_by_id("CR-8").run([add, produce, end, again])
    assert v.frames[0].index == 3
    # TV2 (produce v12) adds partitions implicitly: not this rule's business.
    assert rule_by_id("CR-8").run([_frame(0, 0, 12, _produce(7, 0, 0, 1, txn="tx"))]) == []


def test_cr9_acknowledging_records_never_acquired_is_reported(broker: Broker) -> None:
    """CR-9: a ShareAcknowledge for offsets 0-4 the member never acquired."""
    with _client(broker) as c:
        _send_and_read(c, 79, 1, _share_ack(1, [(0, 4, [1])]))
    [v] = _violations(broker, "CR-9")
    assert "acknowledged offsets 0-4 of partition 0 (type 1) that it does not hold" in v.explanation


def test_cr9_acks_follow_what_share_fetch_handed_out() -> None:
    """CR-9: acquired 0-4, accept 0-1, renew 2-4 (still held), release 2-4; a second accept of 0 is a violation."""
    fetch = _frame(0, 78, 2, _share_fetch(0), {
        "ErrorCode": 0, "AcquisitionLockTimeoutMs": 30000, "Responses": [{"TopicId": TOPIC_ID, "Partitions": [{
            "PartitionIndex": 0, "ErrorCode": 0, "AcknowledgeErrorCode": 0,
            "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 0}, "Records": None,
            "AcquiredRecords": [{"FirstOffset": 0, "LastOffset": 4, "DeliveryCount": 1}]}]}], "NodeEndpoints": []})
    acks = [_frame(1, 79, 2, _share_ack(1, [(0, 1, [1])])), _frame(2, 79, 2, _share_ack(2, [(2, 4, [4])])),
            _frame(3, 79, 2, _share_ack(3, [(2, 4, [2])]))]
    assert rule_by_id("CR-9").run([fetch, *acks]) == []
    [v] = rule_by_id("CR-9").run([fetch, *acks, _frame(4, 79, 2, _share_ack(4, [(0, 0, [1])]))])
    assert "offsets 0-0" in v.explanation
    # Per-offset types: a gap (0) names an offset without a record and is never "not held".
    assert rule_by_id("CR-9").run([fetch, _frame(1, 79, 2, _share_ack(1, [(0, 2, [1, 0, 1])]))]) == []


def test_clean_traffic_breaks_no_rule(broker: Broker) -> None:
    """A well-behaved exchange (ApiVersions, Metadata, idempotent produce, fetch session) trips nothing."""
    with _client(broker) as c:
        _api_versions(c)
        c.request(3, 12, {"Topics": None, "AllowAutoTopicCreation": False,
                          "IncludeTopicAuthorizedOperations": False})
        init = c.request(22, 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000,
                                 "ProducerId": -1, "ProducerEpoch": -1})
        for seq in (0, 3, 6):
            c.request(0, 9, _produce(init.producer_id, init.producer_epoch, seq, 3))
        sid = c.request(1, 12, _fetch(0, 0)).session_id
        for epoch in (1, 2, 3):
            c.request(1, 12, _fetch(sid, epoch))
    recording = broker.recorded()
    assert len(recording) == 10
    assert check_recording(recording) == []
    assert check_frames([]) == []


def test_cr10_a_request_sent_during_a_throttle_is_reported() -> None:
    """CR-10: a produce over its quota answers with ThrottleTimeMs; a Metadata request sent right
    away arrives while the connection is muted (it is handled only once the time has passed)."""
    settings = {"kwire.client.quotas": "client-id=<default>:producer_byte_rate=1"}
    with Broker(BrokerConfig(log_connections=False, settings=settings), manual_clock=True) as b:
        b.create_topic(TOPIC, 1)
        b.start_recording()
        with _client(b) as c:
            c.send(0, 9, _produce(-1, -1, -1, 50))
            answer = c.recv_frame()
            assert answer
            c.send(3, 12, {"Topics": []})
            b.wait_for_request(0)
            b.advance(600_000)  # past the throttle: the muted Metadata is handled now
            c.recv_frame()
        [v] = _violations(b, "CR-10")
        assert "before the throttle time" in v.explanation and v.frames[1].api_key == 3


def _acquired(index: int, first: int, last: int) -> Frame:
    """A ShareFetch (epoch 0) whose answer hands offsets ``first``-``last`` of partition 0 to member m1."""
    return _frame(index, 78, 2, _share_fetch(0), {
        "ErrorCode": 0, "AcquisitionLockTimeoutMs": 30000, "Responses": [{"TopicId": TOPIC_ID, "Partitions": [{
            "PartitionIndex": 0, "ErrorCode": 0, "AcknowledgeErrorCode": 0,
            "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 0}, "Records": None,
            "AcquiredRecords": [{"FirstOffset": first, "LastOffset": last, "DeliveryCount": 1}]}]}],
        "NodeEndpoints": []})


def test_cr9_acknowledging_after_the_session_closed_is_reported() -> None:
    """CR-9 (SS-4, SS-5): closing the share session (epoch -1) releases what the member held, so an
    ACCEPT sent after the close acknowledges a record it no longer holds."""
    close = _frame(1, 79, 2, _share_ack(-1, []))
    late = _frame(2, 79, 2, _share_ack(1, [(0, 0, [1])]))
    [v] = rule_by_id("CR-9").run([_acquired(0, 0, 2), close, late])
    assert "acknowledged offsets 0-0 of partition 0 (type 1) that it does not hold" in v.explanation
    assert v.frames == (late,)
    # The same ACCEPT carried by the closing request itself is fine: acks first, then the release.
    assert rule_by_id("CR-9").run([_acquired(0, 0, 2), _frame(1, 79, 2, _share_ack(-1, [(0, 0, [1])]))]) == []


def _timed(f: Frame, at_ms: int, answered_ms: int) -> Frame:
    f.at_ms, f.response_at_ms = at_ms, answered_ms
    return f


_ACK_OK = {"ErrorCode": 0, "AcquisitionLockTimeoutMs": 30000, "Responses": [], "NodeEndpoints": []}


@pytest.mark.rule("RN-4")
def test_cr11_renewing_again_before_the_renewal_was_answered_is_reported() -> None:
    """CR-11: the second RENEW of offset 1 arrives (t=105) before the broker answered the first one
    (t=110): KafkaShareConsumer cannot do that, since the record comes back through poll only with
    the answer (ShareConsumerImpl.takeRenewedRecords). Renewing after the answer, or renewing
    another offset meanwhile, is fine."""
    fetch = _timed(_acquired(0, 0, 2), 0, 1)
    first = _timed(_frame(1, 79, 2, _share_ack(1, [(1, 1, [4])]), _ACK_OK), 100, 110)
    early = _timed(_frame(2, 79, 2, _share_ack(2, [(0, 2, [4])]), _ACK_OK), 105, 106)
    [v] = rule_by_id("CR-11").run([fetch, first, early])
    assert "renewed offset 1 of partition 0 again before the broker answered its renewal in #1" in v.explanation
    assert v.frames == (first, early)
    later = _timed(_frame(2, 79, 2, _share_ack(2, [(1, 1, [4])]), _ACK_OK), 110, 111)
    other = _timed(_frame(2, 79, 2, _share_ack(2, [(2, 2, [4])]), _ACK_OK), 105, 106)
    assert rule_by_id("CR-11").run([fetch, first, later]) == []
    assert rule_by_id("CR-11").run([fetch, first, other]) == []


def test_cr1_and_cr6_judge_a_request_by_what_was_advertised_before_it() -> None:
    """CR-1, CR-6: a broker whose versions change (upgraded, or capped by a test) judges each request
    by the latest ApiVersions answer before it: ShareAcknowledge v2 with RENEW while v2 was
    advertised is fine, the same after the broker advertised only v1 is not."""
    renew = _share_ack(1, [(0, 0, [4])])
    frames = [_advertise(0, {79: (1, 2)}), _frame(1, 79, 2, renew), _advertise(2, {79: (1, 1)}),
              _frame(3, 79, 2, renew)]
    for rule in ("CR-1", "CR-6"):
        [v] = rule_by_id(rule).run(frames)
        assert v.frames[0].index == 3, rule

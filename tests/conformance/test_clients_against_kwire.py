"""Every installed real client against kwire's own broker: a 3-broker cluster in this process.

The matrix is client x {roundtrip, the security scenarios, acl_principal, consumer_group, kip848_group,
group_migration, failover, transactions, the share scenarios}, one test per
cell. A client without the feature (no KIP-848 consumer) or not installed skips with the
reason; a scenario the client library itself fails (its adapter's ``known_defects``, with the
evidence) is a strict xfail; every other cell must pass. One cluster serves a module (each scenario uses its
own topic and group); the failover scenario hands its broker back up when it ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kwire.conformance.clients import ADAPTER_CLASSES, Record, get_adapter
from kwire.conformance.kwire_target import CONFORMANCE_BROKERS, SASL_USER, KwireControl, kwire_cluster
from kwire.conformance.scenarios import Outcome, run_scenario
from kwire.control import Broker, BrokerConfig
from kwire.protocol.registry import ApiKey

pytestmark = pytest.mark.conformance

CLIENTS = [cls.name for cls in ADAPTER_CLASSES]


@pytest.fixture(scope="module")
def kwire_target() -> Iterator[tuple[Broker, KwireControl]]:
    """Three kwire brokers; no initial rebalance delay, 500 ms KIP-848 heartbeats."""
    with kwire_cluster(brokers=CONFORMANCE_BROKERS) as cluster:
        yield cluster


def _run(scenario: str, client: str, cluster: tuple[Broker, KwireControl], request: pytest.FixtureRequest) -> None:
    broker, control = cluster
    adapter = get_adapter(client)
    # A defect of the client library itself (the adapter's known_defects, with its evidence): the
    # cell must still fail, and a fixed client fails the test as a strict XPASS.
    defect = adapter.known_defects.get(scenario)
    if defect is not None:
        request.applymarker(pytest.mark.xfail(reason=f"known {client} defect: {defect}", strict=True))
    result = run_scenario(scenario, adapter, broker.bootstrap, control)
    if result.outcome is Outcome.SKIP:
        pytest.skip(result.reason)
    # The broker thread still answers, and the cluster is whole for the next test.
    assert broker.stats()["requests"] > 0
    assert sorted(broker.live_node_ids()) == broker.node_ids
    assert result.outcome is Outcome.PASS, result.reason


@pytest.mark.rule("RB-1, RB-2")
@pytest.mark.parametrize("client", CLIENTS)
def test_roundtrip_preserves_keys_values_headers_for_every_codec(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """RB-1, RB-2: NULL/empty/binary keys and values with headers, once per codec, read back in order."""
    _run("roundtrip", client, kwire_target, request)


@pytest.mark.rule("SEC-2, SEC-3")
@pytest.mark.parametrize("scenario", ["ssl", "sasl_ssl"])
@pytest.mark.parametrize("client", CLIENTS)
def test_clients_connect_over_ssl_and_sasl_ssl(
    client: str, request: pytest.FixtureRequest, scenario: str, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """SEC-2, SEC-3: bootstrapping on the SSL (SASL_SSL with SCRAM-SHA-512) listener, produce and
    consume there; Metadata hands out that listener's endpoints (SocketServer, SslTransportLayer)."""
    _run(scenario, client, kwire_target, request)


@pytest.mark.rule("SEC-8")
@pytest.mark.parametrize("client", CLIENTS)
def test_clients_log_in_with_unsecured_oauthbearer_tokens(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """SEC-8: OAUTHBEARER over SASL_SSL with an unsecured JWS (OAuthBearerUnsecuredValidatorCallbackHandler)."""
    _run("oauthbearer", client, kwire_target, request)


@pytest.mark.rule("SEC-11, SEC-12, SEC-13")
@pytest.mark.parametrize("client", CLIENTS)
def test_clients_keep_producing_across_session_lifetimes(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """SEC-11..13: PLAIN sessions on SASL_SSL last 3 s; a producer keeps going over several lifetimes,
    re-authenticating (KIP-368) or reconnecting after the broker closed its expired connection."""
    _run("reauth", client, kwire_target, request)


@pytest.mark.rule("ACL-2, ACL-3, ACL-4, ACL-6, ACL-10")
@pytest.mark.parametrize("client", CLIENTS)
def test_principal_without_acls_is_refused_then_produces_and_consumes_once_granted(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """ACL-2, -3, -4, -6, -10: logged in over SASL_PLAINTEXT as a user without ACLs (StandardAuthorizer,
    KafkaApis.handleTopicMetadataRequest / handleProduceRequest / handleInitProducerIdRequest), the
    client's produce fails with its authorization error; granted WRITE and READ on the topic and READ on
    the group, it produces and consumes in the group (the group handlers, handleFetchRequest)."""
    _run("acl_principal", client, kwire_target, request)


@pytest.mark.parametrize("client", CLIENTS)
def test_classic_group_splits_and_resumes_from_committed_offsets(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """Two members split the partitions; after one leaves, the other resumes from the committed
    offsets with no gap and no duplicate; a record is read twice only where Kafka allows it (its
    commit had not landed when its partition was handed on: scenarios.group.committed_redeliveries)."""
    _run("consumer_group", client, kwire_target, request)


@pytest.mark.parametrize("client", CLIENTS)
def test_kip848_group_splits_and_resumes_from_committed_offsets(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """The same two-member scenario over ConsumerGroupHeartbeat; clients without KIP-848 skip."""
    _run("kip848_group", client, kwire_target, request)


@pytest.mark.rule("GM-1, GM-3, GM-4, GM-5, GM-6, GM-9, GM-10")
@pytest.mark.parametrize("client", CLIENTS)
def test_group_migrates_online_from_classic_to_consumer_and_back(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """Rolling restarts classic -> consumer -> classic of a two-member group (GroupMetadataManager's
    online upgrade and downgrade): no fatal error, nothing consumed twice or lost; clients with
    both protocols only."""
    _run("group_migration", client, kwire_target, request)


@pytest.mark.rule("TX-1, TX-6, TX-8")
@pytest.mark.parametrize("client", CLIENTS)
def test_failover_loses_nothing_when_a_broker_dies_and_leaders_move(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """TX-1, TX-6, TX-8: an idempotent producer streams through a broker death and two leader
    moves; every acknowledged record is read back exactly once, in order per partition."""
    _run("failover", client, kwire_target, request)


@pytest.mark.rule("TX-18, TX-20, TX-21")
@pytest.mark.parametrize("client", CLIENTS)
def test_transactions_read_committed_sees_each_committed_record_once(
    client: str, request: pytest.FixtureRequest, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """TX-18, TX-20, TX-21: two transactional producers of the client interleave commits and aborts
    over three partitions; the client's read_committed consumer reads every committed record once,
    in order, and no aborted one; each log holds one marker per transaction that wrote to it."""
    _run("transactions", client, kwire_target, request)


@pytest.mark.rule("TX-15, TX-20, TX-23")
@pytest.mark.parametrize("scenario", ["txn_commit_then_next", "txn_read_committed_window", "txn_offsets_window"])
@pytest.mark.parametrize("client", CLIENTS)
def test_transactions_through_a_held_prepare_commit_window(
    client: str, request: pytest.FixtureRequest, scenario: str, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """TX-15: the broker holds a commit's markers (TransactionCoordinator answers EndTxn at
    PrepareCommit, TransactionMarkerChannelManager writes them later): the client's next
    transaction retries CONCURRENT_TRANSACTIONS and loses nothing; read_committed sees nothing of
    the commit until the markers land, then all of it (TX-20); offsets sent in the transaction
    stay pending, RequireStable OffsetFetch answering UNSTABLE_OFFSET_COMMIT (TX-23)."""
    _run(scenario, client, kwire_target, request)


def test_group_scenario_fails_when_committed_records_are_delivered_again(
    kwire_target: tuple[Broker, KwireControl]
) -> None:
    """The consumer_group scenario allows a record to be read twice only where Kafka does (its
    commit had not landed: OffsetMetadataManager, GroupCoordinatorService.fetchOffsets); against
    a broker whose OffsetFetch forgets the group's commits, the survivor reads B's committed
    records again when it takes them over, and the scenario fails naming the lost commit."""
    from kwire.broker.handlers import offset_fetch

    adapter = get_adapter("confluent_kafka")
    if adapter.unavailable_reason() is not None:
        pytest.skip(adapter.unavailable_reason() or "")
    broker, control = kwire_target
    prefix = "kw-g-confluent_kafka"

    def forget(request: object, ctx: object) -> object:
        groups = [g.group_id for g in getattr(request, "groups", None) or ()] + [getattr(request, "group_id", "")]
        if not any(g.startswith(prefix) for g in groups):
            return None
        resp = offset_fetch.handle(ctx, request)  # type: ignore[arg-type]
        for topics in [g.topics for g in resp.groups] + [resp.topics]:
            for t in topics:
                for p in t.partitions:
                    p.committed_offset = -1
        return resp

    result = _group_scenario_with_hook(broker, control, adapter, forget, ApiKey.OFFSET_FETCH)
    assert result.outcome is Outcome.FAIL
    assert "committed records delivered twice" in result.reason
    assert "then answered OffsetFetch -1" in result.reason


def _group_scenario_with_hook(broker: Broker, control: KwireControl, adapter: Any, hook: Any,
                              api_key: int) -> Any:
    """The consumer_group scenario with ``hook`` on every request of ``api_key``."""
    rule = broker.hook(hook, api_key=api_key, times=None)
    try:
        return run_scenario("consumer_group", adapter, broker.bootstrap, control)
    finally:
        broker.remove_fault(rule)


def test_group_scenario_allows_rereading_a_record_whose_commit_never_landed(
    kwire_target: tuple[Broker, KwireControl]
) -> None:
    """@confluentinc/kafka-javascript's commitOffsets resolves once librdkafka has queued the
    commit (commitCb -> KafkaConsumer::Commit -> commitAsync), so its driver reports a record
    before the broker has the commit. When both members' sessions expire just as the commit of
    a partition's last record arrives (the broker clock jumps 7 s: a member or broker stalled
    under load), the broker refuses it (UNKNOWN_MEMBER_ID, ClassicGroup.validateOffsetCommit) and
    the partition's next owner reads that record again from the committed offset, as on Kafka:
    the scenario passes (it used to fail with "records delivered twice")."""
    adapter = get_adapter("confluent_js")
    if adapter.unavailable_reason() is not None:
        pytest.skip(adapter.unavailable_reason() or "")
    broker, control = kwire_target
    fired: list[int] = []

    def expire_sessions(request: Any, ctx: Any) -> None:
        last = any(p.committed_offset == 3 for t in request.topics for p in t.partitions)
        if not fired and last and request.group_id.startswith("kw-g-confluent_js"):
            fired.append(request.generation_id_or_member_epoch)
            ctx.core.advance(7000)  # past the driver's 6 s session timeout, before the commit is handled
        return None

    result = _group_scenario_with_hook(broker, control, adapter, expire_sessions, ApiKey.OFFSET_COMMIT)
    assert fired
    assert result.outcome is Outcome.PASS, result.reason
    # The record whose commit was refused was reported twice, and that was allowed.
    assert result.details["a_records"] + result.details["b_records"] > 24


@pytest.mark.rule("TX-15")
def test_window_scenario_is_not_blind_to_a_broker_that_writes_markers_at_once(
    kwire_target: tuple[Broker, KwireControl], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TX-15: against a broker whose hold does nothing (markers written at once, as kwire did
    before), the read_committed window scenario fails: the consumer reads the held commit."""
    adapter = get_adapter("confluent_kafka")
    if adapter.unavailable_reason() is not None:
        pytest.skip(adapter.unavailable_reason() or "")
    broker, control = kwire_target
    monkeypatch.setattr(KwireControl, "hold_txn_markers", lambda self, hold_ms=None: None)
    result = run_scenario("txn_read_committed_window", adapter, broker.bootstrap, control)
    assert result.outcome is Outcome.FAIL
    assert "only the first transaction" in result.reason


@pytest.mark.rule("TX-21")
def test_transactions_scenario_catches_a_consumer_that_reads_aborted_records(
    kwire_target: tuple[Broker, KwireControl], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TX-21: the scenario is not blind: a consumer told to read uncommitted records fails it,
    naming the aborted records it returned."""
    adapter = get_adapter("confluent_kafka")
    if adapter.unavailable_reason() is not None:
        pytest.skip(adapter.unavailable_reason() or "")
    monkeypatch.setattr(type(adapter), "read_committed_config", {"isolation.level": "read_uncommitted"})
    broker, control = kwire_target
    result = run_scenario("transactions", adapter, broker.bootstrap, control)
    assert result.outcome is Outcome.FAIL
    assert "read_committed returned aborted records (TX-21)" in result.reason


@pytest.mark.rule("ACL-2")
def test_acl_scenario_fails_when_the_principal_may_produce_without_acls(
    kwire_target: tuple[Broker, KwireControl], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACL-2: the scenario is not blind: logged in as a super user instead of the user without ACLs
    (StandardAuthorizer allows a super user anything), the first produce goes through and the
    scenario fails, naming it."""
    adapter = get_adapter("confluent_kafka")
    if adapter.unavailable_reason() is not None:
        pytest.skip(adapter.unavailable_reason() or "")
    monkeypatch.setattr(KwireControl, "acl_user", property(lambda self: SASL_USER))
    broker, control = kwire_target
    result = run_scenario("acl_principal", adapter, broker.bootstrap, control)
    assert result.outcome is Outcome.FAIL
    assert f"User:{SASL_USER[0]} produced to" in result.reason and "without any ACL" in result.reason


@pytest.mark.rule("ACL-4, ACL-6")
def test_acl_scenario_fails_when_the_grants_do_not_take(
    kwire_target: tuple[Broker, KwireControl], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACL-4, ACL-6: with the grants dropped, the refused produce stays refused after them and the
    scenario fails with the client's error (KafkaApis.handleProduceRequest)."""
    adapter = get_adapter("confluent_kafka")
    if adapter.unavailable_reason() is not None:
        pytest.skip(adapter.unavailable_reason() or "")
    monkeypatch.setattr(KwireControl, "add_acl", lambda self, *args: None)
    broker, control = kwire_target
    result = run_scenario("acl_principal", adapter, broker.bootstrap, control)
    assert result.outcome is Outcome.FAIL
    assert "with WRITE, READ on the topic and READ on the group" in result.reason
    assert "TOPIC_AUTHORIZATION_FAILED" in result.reason


# Clients whose first ApiVersions is newer than v2 (clients.md §3): Java and kafka-python
# send v4, librdkafka v3.
_NEWER_API_VERSIONS_CLIENTS = ["java", "kafka_python", "confluent_kafka"]


@pytest.mark.parametrize("client", _NEWER_API_VERSIONS_CLIENTS)
def test_client_falls_back_when_the_broker_offers_an_older_api_versions(client: str) -> None:
    """A broker offering ApiVersions up to v2 answers a newer request in the v0 layout (KIP-511)
    with UNSUPPORTED_VERSION, and the client retries at v2 and works: the librdkafka mock's
    malformed answer left Java throttled for 20 minutes (clients.md §4, defect 1)."""
    adapter = get_adapter(client)
    reason = adapter.unavailable_reason()
    if reason is not None:
        pytest.skip(f"not installed: {reason}")
    with Broker(BrokerConfig(log_connections=False)) as broker:
        broker.cap_api_version(ApiKey.API_VERSIONS, 2)
        broker.create_topic("capped", 1)
        broker.start_recording()
        adapter.produce(broker.bootstrap, "capped", [Record(b"k", b"v")], timeout_s=30)
        got = adapter.consume(broker.bootstrap, "capped", group_id=None, count=1, timeout_s=30)
        exchanges = [x for x in broker.recorded() if x.api_key == ApiKey.API_VERSIONS]
        received = broker.stats()["per_api"][ApiKey.API_VERSIONS]
    assert [(r.key, r.value) for r in got] == [(b"k", b"v")]
    # Requests above v2 get the UNSUPPORTED_VERSION answer before decoding (recorded raw, with
    # the fallback answer); every decoded one is at v2 or below.
    answered = [x.api_version for x in exchanges if x.request is not None]
    fallbacks = [x for x in exchanges if x.request is None]
    assert answered and max(answered) <= 2
    assert fallbacks, "the client never asked with a newer ApiVersions first"
    assert all(x.api_version > 2 and x.response_bytes and x.closed is None for x in fallbacks)
    assert received == len(exchanges)


SHARE = ["share_exclusive", "share_lock_expiry", "share_delivery_limit", "share_dead_consumer", "share_commit",
         "share_dlq", "share_empty_first_assignment", "share_crash_after_ack", "dlq_read",
         "share_ack_after_leave"]


@pytest.mark.rule("SG-5, AQ-1, AQ-11, AQ-12, SS-8, SS-9, HB-5, HB-6, AK-12, DLQ-3, DLQ-9, DLQ-11, ST-5, DLQ-4")
@pytest.mark.parametrize("scenario", SHARE)
@pytest.mark.parametrize("client", CLIENTS)
def test_share_groups(
    client: str, request: pytest.FixtureRequest, scenario: str, kwire_target: tuple[Broker, KwireControl]
) -> None:
    """Share consumers (KIP-932): exclusive acquisition (SG-5, AQ-1), lock expiry on the broker clock
    (AQ-12), the delivery limit (AQ-11), a dead consumer's records released (SS-8, HB-5), commits,
    an empty first assignment the client copes with (HB-6), a broker crash right after confirmed
    acknowledgements (ST-5, DLQ-4: nothing confirmed comes back), acknowledgements after the member
    left the group (SS-9)."""
    _run(scenario, client, kwire_target, request)

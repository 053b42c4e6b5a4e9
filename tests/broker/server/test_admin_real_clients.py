"""Real clients against a kwire broker over TCP: admin APIs, SASL, data-dir restarts.

confluent-kafka (librdkafka) drives the AdminClient calls, SASL produce/consume and the restart;
kafka-python's KafkaAdminClient and SCRAM login are a second opinion. Waiting is bounded by
deadlines (futures with timeouts, polls until a deadline), never by sleeping.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.control import Broker, BrokerConfig, SaslConfig

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

pytestmark = pytest.mark.conformance

TIMEOUT_S = 15.0
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False)) as b:
        yield b


def admin(b: Broker, **extra: Any) -> Any:
    return admin_mod.AdminClient({"bootstrap.servers": b.bootstrap, "log_level": 3, **extra})


def results(futures: dict[Any, Any]) -> dict[Any, Any]:
    """Every future's result, or the exception it raised."""
    out = {}
    for key, f in futures.items():
        try:
            out[key] = f.result(TIMEOUT_S)
        except ck.KafkaException as exc:
            out[key] = exc.args[0]
    return out


def consume_all(conf: dict[str, Any], topic: str, partitions: int, expected: int) -> list[tuple[int, int, bytes]]:
    """Assign every partition from the start and poll until ``expected`` messages or the deadline."""
    c = ck.Consumer({"group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False, "log_level": 3, **conf})
    try:
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        got: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < expected and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.value()))
        return got
    finally:
        c.close()


def produce(conf: dict[str, Any], topic: str, messages: list[tuple[int, bytes]]) -> None:
    p = ck.Producer({"enable.idempotence": True, "linger.ms": 5, "log_level": 3, **conf})
    errors: list[Any] = []
    for partition, value in messages:
        p.produce(topic, value, partition=partition, on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(TIMEOUT_S) == 0
    assert errors == []


# --- topics ----------------------------------------------------------------------------------


def test_create_topics_create_partitions_and_delete_topics(broker: Broker) -> None:
    a = admin(broker)
    created = results(a.create_topics([admin_mod.NewTopic("orders", 2), admin_mod.NewTopic("audit", 1),
                                       admin_mod.NewTopic("bad name!", 1)]))
    assert created["orders"] is None and created["audit"] is None
    assert created["bad name!"].code() == ck.KafkaError.TOPIC_EXCEPTION
    grown = results(a.create_partitions([admin_mod.NewPartitions("orders", 5),
                                         admin_mod.NewPartitions("audit", 1)]))
    assert grown["orders"] is None
    assert grown["audit"].code() == ck.KafkaError.INVALID_PARTITIONS
    assert results(a.create_partitions([admin_mod.NewPartitions("orders", 8)],
                                       validate_only=True))["orders"] is None
    md = a.list_topics(timeout=TIMEOUT_S)
    assert len(md.topics["orders"].partitions) == 5 and len(md.topics["audit"].partitions) == 1
    deleted = results(a.delete_topics(["audit", "never-there"], operation_timeout=10))
    assert deleted["audit"] is None
    assert deleted["never-there"].code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART
    assert "audit" not in a.list_topics(timeout=TIMEOUT_S).topics


def test_new_partitions_take_messages(broker: Broker) -> None:
    broker.create_topic("t", 1)
    a = admin(broker)
    assert results(a.create_partitions([admin_mod.NewPartitions("t", 3)]))["t"] is None
    conf = {"bootstrap.servers": broker.bootstrap}
    produce(conf, "t", [(2, b"to-the-new-partition")])
    assert consume_all(conf, "t", 3, 1) == [(2, 0, b"to-the-new-partition")]


# --- configs ---------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_describe_and_alter_configs(broker: Broker) -> None:
    broker.create_topic("t", 1, configs={"retention.ms": "3600000"})
    a = admin(broker)
    CS = admin_mod.ConfigSource
    topic = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "t")
    cfg = results(a.describe_configs([topic]))[topic]
    assert cfg["retention.ms"].value == "3600000"
    assert cfg["retention.ms"].source == CS.DYNAMIC_TOPIC_CONFIG.value
    assert cfg["cleanup.policy"].source == CS.DEFAULT_CONFIG.value

    incremental = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "t", incremental_configs=[
        admin_mod.ConfigEntry("segment.ms", "100000", incremental_operation=admin_mod.AlterConfigOpType.SET),
        admin_mod.ConfigEntry("retention.ms", None, incremental_operation=admin_mod.AlterConfigOpType.DELETE),
        admin_mod.ConfigEntry("cleanup.policy", "compact", incremental_operation=admin_mod.AlterConfigOpType.APPEND),
    ])
    assert results(a.incremental_alter_configs([incremental]))[incremental] is None
    cfg = results(a.describe_configs([topic]))[topic]
    assert cfg["segment.ms"].value == "100000"
    assert (cfg["retention.ms"].value, cfg["retention.ms"].source) == ("604800000", CS.DEFAULT_CONFIG.value)
    assert cfg["cleanup.policy"].value == "delete,compact"

    bad = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "t", incremental_configs=[
        admin_mod.ConfigEntry("segment.ms", "soon", incremental_operation=admin_mod.AlterConfigOpType.SET)])
    err = results(a.incremental_alter_configs([bad]))[bad]
    assert err.code() == ck.KafkaError.INVALID_CONFIG and "segment.ms" in err.str()

    # Legacy AlterConfigs replaces the whole override set.
    legacy = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "t", set_config={"max.message.bytes": "2048"})
    assert results(a.alter_configs([legacy]))[legacy] is None
    cfg = results(a.describe_configs([topic]))[topic]
    assert cfg["max.message.bytes"].value == "2048"
    assert cfg["segment.ms"].source == CS.DEFAULT_CONFIG.value

    missing = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "missing")
    assert results(a.describe_configs([missing]))[missing].code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART


def test_broker_and_group_configs(broker: Broker) -> None:
    a = admin(broker)
    node = admin_mod.ConfigResource(admin_mod.ResourceType.BROKER, "1")
    cfg = results(a.describe_configs([node]))[node]
    assert cfg["auto.create.topics.enable"].value == "true"
    change = admin_mod.ConfigResource(admin_mod.ResourceType.BROKER, "1", incremental_configs=[
        admin_mod.ConfigEntry("auto.create.topics.enable", "false",
                              incremental_operation=admin_mod.AlterConfigOpType.SET)])
    assert results(a.incremental_alter_configs([change]))[change] is None
    assert broker.call(broker.core.auto_create_enabled) is False
    group = admin_mod.ConfigResource(admin_mod.ResourceType.GROUP, "share-g", incremental_configs=[
        admin_mod.ConfigEntry("share.record.lock.duration.ms", "15000",
                              incremental_operation=admin_mod.AlterConfigOpType.SET)])
    assert results(a.incremental_alter_configs([group]))[group] is None
    described = admin_mod.ConfigResource(admin_mod.ResourceType.GROUP, "share-g")
    cfg = results(a.describe_configs([described]))[described]
    assert cfg["share.record.lock.duration.ms"].value == "15000"


def test_kafka_broker_config_kwire_only_stores(broker: Broker) -> None:
    """A valid Kafka broker key kwire does not act on is accepted and described (issue 16)."""
    a = admin(broker)
    key = "sasl.kerberos.min.time.before.relogin"
    change = admin_mod.ConfigResource(admin_mod.ResourceType.BROKER, "1", incremental_configs=[
        admin_mod.ConfigEntry(key, "120000", incremental_operation=admin_mod.AlterConfigOpType.SET)])
    assert results(a.incremental_alter_configs([change]))[change] is None
    node = admin_mod.ConfigResource(admin_mod.ResourceType.BROKER, "1")
    entry = results(a.describe_configs([node]))[node][key]
    assert (entry.value, entry.is_read_only, entry.source) == (
        "120000", False, admin_mod.ConfigSource.DYNAMIC_BROKER_CONFIG.value)


def test_a_custom_broker_config_is_kept_as_kafka_keeps_it(broker: Broker) -> None:
    """A name Kafka does not define: SET stores it, and librdkafka reads it back as Kafka describes
    it (sensitive, so no value; read-only)."""
    a = admin(broker)
    change = admin_mod.ConfigResource(admin_mod.ResourceType.BROKER, "1", incremental_configs=[
        admin_mod.ConfigEntry("acme.quota.profile", "gold", incremental_operation=admin_mod.AlterConfigOpType.SET)])
    assert results(a.incremental_alter_configs([change]))[change] is None
    node = admin_mod.ConfigResource(admin_mod.ResourceType.BROKER, "1")
    entry = results(a.describe_configs([node]))[node]["acme.quota.profile"]
    assert (entry.value, entry.is_sensitive, entry.is_read_only, entry.source) == (
        None, True, True, admin_mod.ConfigSource.DYNAMIC_BROKER_CONFIG.value)


def test_describe_cluster(broker: Broker) -> None:
    a = admin(broker)
    info = a.describe_cluster(include_authorized_operations=True, request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    core = broker.core
    assert info.cluster_id == core.cluster.cluster_id
    assert info.controller.id == 1
    assert [(n.id, n.host, n.port) for n in info.nodes] == [(1, "127.0.0.1", broker.core.cluster.nodes[1].port)]
    ops = {op.name for op in info.authorized_operations}
    assert {"DESCRIBE", "ALTER", "CREATE", "IDEMPOTENT_WRITE"} <= ops


def test_manual_replica_assignments_are_honoured_and_described() -> None:
    """librdkafka creates a topic with replica lists on a 3-broker cluster and describes it back."""
    with Broker(BrokerConfig(brokers=3, log_connections=False)) as b:
        a = admin(b)
        topic = admin_mod.NewTopic("placed", num_partitions=3, replica_assignment=[[3, 1], [2, 3], [1, 2]])
        assert results(a.create_topics([topic], request_timeout=TIMEOUT_S))["placed"] is None
        desc = a.describe_topics(ck.TopicCollection(["placed"]), request_timeout=TIMEOUT_S)["placed"].result(TIMEOUT_S)
        got = [(p.id, p.leader.id, [r.id for r in p.replicas]) for p in sorted(desc.partitions, key=lambda p: p.id)]
        assert got == [(0, 3, [3, 1]), (1, 2, [2, 3]), (2, 1, [1, 2])]


def test_describe_topics_reports_exactly_the_topic_operations(broker: Broker) -> None:
    """librdkafka decodes the topic's authorized operations: Kafka's topic set, no cluster-only bits."""
    broker.create_topic("ops", partitions=1)
    a = admin(broker)
    req = ck.TopicCollection(["ops"])
    desc = a.describe_topics(req, include_authorized_operations=True, request_timeout=TIMEOUT_S)["ops"].result(TIMEOUT_S)
    assert {op.name for op in desc.authorized_operations} == {
        "READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}


def test_kafka_python_describe_cluster_uses_the_describe_cluster_api(broker: Broker) -> None:
    kafka_admin = pytest.importorskip("kafka.admin")
    broker.start_recording()
    a = kafka_admin.KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        info = a.describe_cluster()
    finally:
        a.close()
    assert info["cluster_id"] == broker.core.cluster.cluster_id and info["controller_id"] == 1
    assert [(b["broker_id"], b["is_fenced"]) for b in info["brokers"]] == [(1, False)]
    assert "DESCRIBE" in {str(op).rsplit(".", 1)[-1] for op in info["authorized_operations"]}
    assert any(e.api_key == 60 for e in broker.recorded())


def test_kafka_python_admin_client(broker: Broker) -> None:
    kafka_admin = pytest.importorskip("kafka.admin")
    a = kafka_admin.KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        a.create_topics([kafka_admin.NewTopic("kp", num_partitions=1, replication_factor=1)])
        a.create_partitions({"kp": kafka_admin.NewPartitions(total_count=2)})
        resource = kafka_admin.ConfigResource(kafka_admin.ConfigResourceType.TOPIC, "kp")
        everything = a.describe_configs([resource], config_filter="all")["topic"]["kp"]
        assert everything["retention.ms"]["value"] == "604800000"
        assert everything["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
        a.alter_configs([kafka_admin.ConfigResource(kafka_admin.ConfigResourceType.TOPIC, "kp",
                                                    configs={"retention.ms": "1000"})])
        modified = a.describe_configs([resource])["topic"]["kp"]
        assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "1000"}
        a.delete_topics(["kp"])
        assert "kp" not in broker.call(lambda: list(broker.core.cluster.topics))
    finally:
        a.close()


def test_consumer_validates_its_position_with_offset_for_leader_epoch_after_a_leader_move() -> None:
    with Broker(BrokerConfig(brokers=2, log_connections=False)) as b:
        b.create_topic("t", 1)
        b.start_recording()
        conf = {"bootstrap.servers": b.bootstrap, "log_level": 3}
        produce(conf, "t", [(0, b"a%d" % i) for i in range(5)])
        c = ck.Consumer({**conf, "group.id": "g", "enable.auto.commit": False,
                         "topic.metadata.refresh.interval.ms": 200})
        try:
            c.assign([ck.TopicPartition("t", 0, 0)])
            got: list[int] = []

            def poll_until(n: int) -> None:
                deadline = time.monotonic() + TIMEOUT_S
                while len(got) < n and time.monotonic() < deadline:
                    m = c.poll(0.2)
                    if m is not None and m.error() is None:
                        got.append(m.offset())

            poll_until(5)
            leader = b.core.cluster.topics["t"].partitions[0].leader_id
            b.move_leader("t", 0, 2 if leader == 1 else 1)
            produce(conf, "t", [(0, b"after-move")])
            poll_until(6)
        finally:
            c.close()
        assert got == [0, 1, 2, 3, 4, 5]
        answers = [(r.leader_epoch, r.end_offset) for e in b.recorded() if e.api_key == 23
                   for t in e.response.topics for r in t.partitions]
        assert (0, 5) in answers  # epoch 0 ended where the new leader's epoch 1 began


# --- SASL ------------------------------------------------------------------------------------


@pytest.fixture
def sasl_broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(sasl=SaslConfig(users=USERS), log_connections=False)) as b:
        b.create_topic("secure", 1)
        yield b


def sasl_conf(b: Broker, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_produce_and_consume(sasl_broker: Broker, mechanism: str) -> None:
    conf = sasl_conf(sasl_broker, mechanism, "alice", USERS["alice"])
    produce(conf, "secure", [(0, f"via {mechanism}".encode())])
    assert consume_all(conf, "secure", 1, 1) == [(0, 0, f"via {mechanism}".encode())]
    principals = sasl_broker.call(lambda: {c.principal for c in sasl_broker.core.connections.values()})
    assert principals <= {"User:alice", "User:ANONYMOUS"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_wrong_password_is_an_authentication_error(sasl_broker: Broker, mechanism: str) -> None:
    errors: list[Any] = []
    p = ck.Producer({**sasl_conf(sasl_broker, mechanism, "alice", "wrong"), "log_level": 0,
                     "error_cb": errors.append})
    deadline = time.monotonic() + TIMEOUT_S
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors and errors[0].code() == ck.KafkaError._AUTHENTICATION
    assert "Authentication failed" in errors[0].str()


def test_kafka_python_scram_login(sasl_broker: Broker) -> None:
    kafka = pytest.importorskip("kafka")
    producer = kafka.KafkaProducer(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                                   sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="bob",
                                   sasl_plain_password=USERS["bob"], request_timeout_ms=10000)
    try:
        meta = producer.send("secure", b"from kafka-python").get(timeout=TIMEOUT_S)
        assert meta.offset == 0
    finally:
        producer.close(timeout=5)


def test_scram_users_managed_by_the_admin_client_log_in_and_persist(tmp_path: Path) -> None:
    """AlterUserScramCredentials through librdkafka: the new user logs in over SCRAM, a deleted
    credential stops working, and both survive a restart on the same data dir."""
    data_dir = str(tmp_path / "data")
    cfg = BrokerConfig(sasl=SaslConfig(users=USERS), data_dir=data_dir, log_connections=False)
    with Broker(cfg) as b:
        b.create_topic("secure", 1)
        a = admin_mod.AdminClient(sasl_conf(b, "SCRAM-SHA-256", "alice", USERS["alice"]))
        info = admin_mod.ScramCredentialInfo(admin_mod.ScramMechanism.SCRAM_SHA_256, 8192)
        done = results(a.alter_user_scram_credentials([
            admin_mod.UserScramCredentialUpsertion("carol", info, b"carol-secret"),
            admin_mod.UserScramCredentialDeletion("bob", admin_mod.ScramMechanism.SCRAM_SHA_512)]))
        assert all(v is None for v in done.values()), done
        desc = results(a.describe_user_scram_credentials(["carol", "bob"]))
        assert [(i.mechanism, i.iterations) for i in desc["carol"].scram_credential_infos] == [
            (admin_mod.ScramMechanism.SCRAM_SHA_256, 8192)]
        assert [i.mechanism for i in desc["bob"].scram_credential_infos] == [admin_mod.ScramMechanism.SCRAM_SHA_256]
        produce(sasl_conf(b, "SCRAM-SHA-256", "carol", "carol-secret"), "secure", [(0, b"from carol")])
        port = b.core.cluster.nodes[1].port
    with Broker(BrokerConfig(sasl=SaslConfig(users=USERS), data_dir=data_dir, port=port,
                             log_connections=False)) as b:
        conf = sasl_conf(b, "SCRAM-SHA-256", "carol", "carol-secret")
        assert consume_all(conf, "secure", 1, 1) == [(0, 0, b"from carol")]
        a = admin_mod.AdminClient(conf)  # kept: a dropped client destroys its pending futures
        desc = a.describe_user_scram_credentials().result(TIMEOUT_S)
        assert sorted(desc) == ["alice", "bob", "carol"]
        assert [i.mechanism for i in desc["bob"].scram_credential_infos] == [admin_mod.ScramMechanism.SCRAM_SHA_256]
        errors: list[Any] = []
        p = ck.Producer({**sasl_conf(b, "SCRAM-SHA-512", "bob", USERS["bob"]), "log_level": 0,
                         "error_cb": errors.append})
        deadline = time.monotonic() + TIMEOUT_S
        while not errors and time.monotonic() < deadline:
            p.poll(0.2)
        assert errors and errors[0].code() == ck.KafkaError._AUTHENTICATION


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_as_a_0_11_client_uses_the_v0_handshake_with_bare_tokens(sasl_broker: Broker,
                                                                               mechanism: str) -> None:
    kafka = pytest.importorskip("kafka")
    sasl_broker.start_recording()
    producer = kafka.KafkaProducer(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                                   sasl_mechanism=mechanism, sasl_plain_username="alice",
                                   sasl_plain_password=USERS["alice"], api_version=(0, 11),
                                   request_timeout_ms=10000)
    try:
        assert producer.send("secure", b"old client").get(timeout=TIMEOUT_S).offset == 0
    finally:
        producer.close(timeout=5)
    seen = {(e.api_key, e.api_version) for e in sasl_broker.recorded()}
    assert (17, 0) in seen and not any(k == 36 for k, _ in seen)  # no SaslAuthenticate frames


# --- data dir --------------------------------------------------------------------------------


def test_restart_on_the_same_data_dir_and_port_serves_everything(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    messages = [(i % 3, f"m{i}".encode()) for i in range(60)]
    first = Broker(BrokerConfig(data_dir=data_dir, log_connections=False)).start()
    try:
        first.create_topic("durable", 3, configs={"retention.ms": "86400000"})
        conf = {"bootstrap.servers": first.bootstrap}
        produce(conf, "durable", messages)
        port = first.core.cluster.nodes[1].port
        topic_id = first.core.cluster.topics["durable"].topic_id
        committer = ck.Consumer({**conf, "group.id": "keeper", "enable.auto.commit": False, "log_level": 3})
        committer.commit(offsets=[ck.TopicPartition("durable", 0, 7)], asynchronous=False)
        committer.close()
    finally:
        first.stop()

    second = Broker(BrokerConfig(data_dir=data_dir, port=port, log_connections=False)).start()
    try:
        assert second.bootstrap == f"127.0.0.1:{port}"
        conf = {"bootstrap.servers": second.bootstrap}
        got = consume_all(conf, "durable", 3, len(messages))
        assert sorted((p, v) for p, _, v in got) == sorted(messages)
        assert second.core.cluster.topics["durable"].topic_id == topic_id
        a = admin(second)
        res = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "durable")
        assert results(a.describe_configs([res]))[res]["retention.ms"].value == "86400000"
        c = ck.Consumer({**conf, "group.id": "keeper", "log_level": 3})
        try:
            committed = c.committed([ck.TopicPartition("durable", 0)], timeout=TIMEOUT_S)
        finally:
            c.close()
        assert committed[0].offset == 7
        produce(conf, "durable", [(0, b"after restart")])
        assert (0, 20, b"after restart") in consume_all(conf, "durable", 3, len(messages) + 1)
    finally:
        second.stop()

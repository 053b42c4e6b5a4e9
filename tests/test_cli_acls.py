"""``kwire acls`` and the control API's ACL and quota helpers against a kwire broker with
StandardAuthorizer; a real client (confluent-kafka over SASL PLAIN) sees the authorization
errors of a principal without rights, and the throttle of a produce quota."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from kwire.broker.core.acl import STANDARD_AUTHORIZER
from kwire.control import Broker, BrokerConfig, SaslConfig

USERS = {"admin": "admin-secret", "alice": "alice-secret"}


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    settings = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS;User:admin"}
    with Broker(BrokerConfig(log_connections=False, settings=settings)) as b:
        yield b


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kwire", *args], capture_output=True, text=True, timeout=60,
                          check=False, stdin=subprocess.DEVNULL)


@pytest.mark.rule("ACL-1")
def test_acls_cli_adds_lists_and_removes(secured: Broker) -> None:
    b = secured.bootstrap
    added = _run("acls", "-b", b, "add", "--principal", "User:alice", "--operation", "READ", "--resource-type",
                 "TOPIC", "--name", "orders.", "--pattern", "PREFIXED")
    assert added.returncode == 0, added.stderr
    assert "added: User:alice ALLOW READ from host * on TOPIC orders. (PREFIXED)" in added.stdout
    assert secured.acls(principal="User:alice") == [{
        "resource_type": "TOPIC", "name": "orders.", "pattern": "PREFIXED", "principal": "User:alice", "host": "*",
        "operation": "READ", "permission": "ALLOW"}]
    secured.add_acl("User:bob", "WRITE", "TOPIC", "orders.eu", permission="DENY")
    listed = json.loads(_run("acls", "-b", b, "--json", "list", "--resource-type", "TOPIC", "--name", "orders.eu",
                             "--pattern", "MATCH").stdout)
    assert {(r["principal"], r["operation"], r["permission"]) for r in listed} == {
        ("User:alice", "READ", "ALLOW"), ("User:bob", "WRITE", "DENY")}
    # As kafka-acls.sh: remove asks first; with no terminal to ask on it lists and deletes nothing.
    asked = _run("acls", "-b", b, "remove", "--principal", "User:alice")
    assert asked.returncode == 2 and "add --force" in asked.stderr and "User:alice" in asked.stdout
    assert len(secured.acls(principal="User:alice")) == 1
    removed = _run("acls", "-b", b, "remove", "--principal", "User:alice", "--force")
    assert removed.returncode == 0 and "removed 1" in removed.stdout
    assert secured.remove_acls(principal="User:bob") == 1 and secured.acls() == []
    bad = _run("acls", "-b", b, "add", "--principal", "alice", "--operation", "READ", "--resource-type", "TOPIC",
               "--name", "x")
    assert bad.returncode == 2 and "INVALID_REQUEST" in bad.stderr


def test_acls_cli_on_a_broker_without_an_authorizer() -> None:
    with Broker(BrokerConfig(log_connections=False)) as b:
        out = _run("acls", "-b", b.bootstrap, "list")
    assert out.returncode == 2 and "SECURITY_DISABLED" in out.stderr


@pytest.mark.rule("QUO-1")
def test_control_api_quotas(secured: Broker) -> None:
    secured.set_quota("user=alice,client-id=<default>", producer_byte_rate=2048)
    secured.set_quota("ip=10.0.0.1", connection_creation_rate=3)
    assert secured.quotas() == {"client-id=<default>,user=alice": {"producer_byte_rate": 2048.0},
                                "ip=10.0.0.1": {"connection_creation_rate": 3.0}}
    secured.set_quota("user=alice,client-id=<default>", producer_byte_rate=None)
    secured.set_quota("ip=10.0.0.1", connection_creation_rate=None)
    assert secured.quotas() == {}


@pytest.mark.conformance
@pytest.mark.rule("ACL-4")
def test_a_principal_without_rights_sees_the_authorization_errors() -> None:
    """confluent-kafka (librdkafka) over SASL PLAIN as User:alice, with READ/WRITE on nothing:
    the produce fails with TOPIC_AUTHORIZATION_FAILED, the consumer with GROUP_AUTHORIZATION_FAILED."""
    ck = pytest.importorskip("confluent_kafka")
    settings = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
    with Broker(BrokerConfig(sasl=SaslConfig(users=USERS), log_connections=False, settings=settings)) as b:
        b.create_topic("orders", partitions=1)
        b.add_acl("User:alice", "DESCRIBE", "TOPIC", "orders")
        conf = {"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": "alice", "sasl.password": "alice-secret", "log_level": 0}
        errors: list[str] = []
        p = ck.Producer({**conf, "enable.idempotence": False, "message.timeout.ms": 10_000})
        p.produce("orders", b"v", on_delivery=lambda err, msg: errors.append(err.name() if err else "OK"))
        p.flush(15)
        assert errors == ["TOPIC_AUTHORIZATION_FAILED"]
        c = ck.Consumer({**conf, "group.id": "g", "auto.offset.reset": "earliest"})
        c.subscribe(["orders"])
        seen = None
        deadline = time.monotonic() + 15
        while seen is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error():
                seen = m.error().name()
        c.close()
        assert seen == "GROUP_AUTHORIZATION_FAILED"

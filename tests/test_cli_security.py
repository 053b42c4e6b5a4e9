"""The admin commands' client security (``--command-config``, ``--username`` / ``--password``,
``--sasl-mechanism``, ``--ca-file``) against SASL_PLAINTEXT and SASL_SSL listeners.

Upstream at d79bd502: SaslClientAuthenticator (ApiVersions, SaslHandshake v1, SaslAuthenticate),
ScramSaslClient and PlainSaslClient, SaslServerAuthenticator (a request other than ApiVersions or
SaslHandshake before authentication closes the connection), CommandConfig of the Kafka tools.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kwire.broker.core.acl import STANDARD_AUTHORIZER
from kwire.cli import main
from kwire.cli._security import error_text, read_properties
from kwire.client import ClientSecurity, WireClient
from kwire.control import Broker, BrokerConfig, SaslConfig
from kwire.errors import WireClientError

USERS = {"admin": "admin-secret", "alice": "alice-secret"}


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    settings = {"listeners": "SASL_PLAINTEXT://:0,SASL_SSL://:0", "authorizer.class.name": STANDARD_AUTHORIZER,
                "super.users": "User:admin"}
    with Broker(BrokerConfig(sasl=SaslConfig(users=USERS, scram_iterations=4096), log_connections=False,
                             settings=settings)) as b:
        b.create_topic("orders", partitions=2)
        b.create_topic("dlq.orders", partitions=1)
        yield b


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_topics_over_sasl_plaintext(secured: Broker, capsys: pytest.CaptureFixture[str], mechanism: str) -> None:
    rc, out, err = _cli(capsys, "topics", "-b", secured.bootstrap_for("SASL_PLAINTEXT"), "--json",
                        "--username", "admin", "--password", "admin-secret", "--sasl-mechanism", mechanism)
    assert rc == 0, err
    assert sorted(t["name"] for t in json.loads(out)) == ["dlq.orders", "orders"]


def test_wrong_password_is_one_line(secured: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _cli(capsys, "topics", "-b", secured.bootstrap_for("SASL_PLAINTEXT"), "--username", "admin",
                      "--password", "nope", "--sasl-mechanism", "SCRAM-SHA-256")
    assert rc == 2 and "SASL SCRAM-SHA-256 authentication as 'admin'" in err and err.count("\n") == 1


def test_plaintext_client_on_a_sasl_listener_gets_the_hint(secured: Broker,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _cli(capsys, "groups", "-b", secured.bootstrap_for("SASL_PLAINTEXT"))
    assert rc == 2 and "the listener may require SASL or TLS (see --command-config)" in err


def test_plaintext_client_on_a_tls_listener_gets_the_hint(secured: Broker,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _cli(capsys, "topics", "-b", secured.bootstrap_for("SASL_SSL"), "--timeout", "5")
    assert rc == 2 and "the listener may require SASL or TLS" in err


def test_command_config_sasl_ssl_with_jaas_and_pem_truststore(secured: Broker, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert secured.ca_file is not None
    props = tmp_path / "admin.properties"
    props.write_text("# as for kafka-configs.sh --command-config\n"
                     "security.protocol=SASL_SSL\n"
                     "sasl.mechanism=SCRAM-SHA-512\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                     '    username="admin" password="admin-secret";\n'
                     "ssl.truststore.type=PEM\n"
                     f"ssl.truststore.location={secured.ca_file}\n")
    rc, out, err = _cli(capsys, "configs", "-b", secured.bootstrap_for("SASL_SSL"), "--command-config", str(props),
                        "--topic", "orders", "--alter", "--add-config", "retention.ms=60000")
    assert rc == 0, err
    rc, out, err = _cli(capsys, "acls", "-b", secured.bootstrap_for("SASL_SSL"), "--command-config", str(props),
                        "list")
    assert rc == 0, err


def test_authorization_failure_names_the_principal_once(secured: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _cli(capsys, "acls", "-b", secured.bootstrap_for("SASL_PLAINTEXT"), "--username", "alice",
                      "--password", "alice-secret", "list")
    assert rc == 2
    assert "CLUSTER_AUTHORIZATION_FAILED" in err and "(as principal User:alice)" in err
    assert "CLUSTER_AUTHORIZATION_FAILED: CLUSTER_AUTHORIZATION_FAILED" not in err
    assert error_text("X", "X", None) == "X"


def test_scram_client_checks_the_server_signature(secured: Broker) -> None:
    """A right password authenticates both ways: the client verifies server-final's ``v=``."""
    host, port = secured.bootstrap_for("SASL_PLAINTEXT").split(":")
    sec = ClientSecurity(protocol="SASL_PLAINTEXT", mechanism="SCRAM-SHA-256", username="alice",
                         password="alice-secret")
    with WireClient(f"{host}:{port}", security=sec) as c:
        assert c.metadata_nodes()
    with pytest.raises(WireClientError, match="needs a SASL username"):
        ClientSecurity(protocol="SASL_SSL")


def test_properties_file_syntax(tmp_path: Path) -> None:
    f = tmp_path / "c.properties"
    f.write_text("! comment\na = 1\nb:2\nc   3\nlong=x\\\n   y\n")
    assert read_properties(str(f)) == {"a": "1", "b": "2", "c": "3", "long": "xy"}


def test_dlq_inspect_and_groups_over_sasl(secured: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    creds = ("--username", "admin", "--password", "admin-secret")
    rc, out, err = _cli(capsys, "dlq", "inspect", "-b", secured.bootstrap_for("SASL_PLAINTEXT"), *creds, "--json",
                        "dlq.orders")
    assert (rc, out) == (0, ""), err
    rc, out, err = _cli(capsys, "groups", "-b", secured.bootstrap_for("SASL_PLAINTEXT"), *creds, "--json")
    assert (rc, json.loads(out)) == (0, []), err

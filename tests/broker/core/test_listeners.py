"""Listener settings and the SSL principal mapper, sans-I/O.

Upstream: SocketServerConfigs / KafkaConfig.listeners / CoreUtils.listenerListToEndPoints (listener
parsing), SslPrincipalMapper and SslPrincipalMapperTest (d79bd502).
"""

from __future__ import annotations

import pytest

from kwire.broker.config import BrokerConfig, SaslConfig
from kwire.broker.core.broker_core import BrokerCore
from kwire.broker.core.listeners import PrincipalMapper, SecurityProtocol, parse_listeners
from kwire.broker.handlers import load_handlers
from kwire.clock import ManualClock
from kwire.errors import ConfigError
from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest
from kwire.protocol.messages.metadata import MetadataRequest
from tests.broker.helpers import CoreClient


@pytest.mark.rule("SEC-1")
def test_listeners_take_kafkas_names_and_the_protocol_map() -> None:
    ls = parse_listeners({"listeners": "PLAINTEXT://:9092,SSL://localhost:9093,internal://[::1]:9094",
                          "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SASL_SSL",
                          "advertised.listeners": "SSL://broker.example:19093"},
                         default_port=0, sasl=False)
    assert [(li.name, li.protocol, li.host, li.port) for li in ls] == [
        ("PLAINTEXT", SecurityProtocol.PLAINTEXT, "", 9092), ("SSL", SecurityProtocol.SSL, "localhost", 9093),
        ("INTERNAL", SecurityProtocol.SASL_SSL, "::1", 9094)]
    assert (ls[1].advertised_host, ls[1].advertised_port) == ("broker.example", 19093)


@pytest.mark.rule("SEC-1")
def test_without_listeners_one_named_after_its_protocol() -> None:
    assert [li.name for li in parse_listeners({}, default_port=9092, sasl=False)] == ["PLAINTEXT"]
    assert [li.name for li in parse_listeners({}, default_port=9092, sasl=True)] == ["SASL_PLAINTEXT"]


@pytest.mark.rule("SEC-1")
@pytest.mark.parametrize(("settings", "message"), [
    ({"listeners": "CUSTOM://:9092"}, "No security protocol defined for listener CUSTOM"),
    ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "different name"),
    ({"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "different port"),
    ({"listeners": "PLAINTEXT:9092"}, "unable to parse"),
    ({"listeners": "PLAINTEXT://:9092", "advertised.listeners": "SSL://h:1"}, "not a listener name"),
    ({"listener.security.protocol.map": "X:TLS"}, "unknown security protocol"),
])
def test_bad_listener_settings_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_listeners(settings, default_port=0, sasl=False)


@pytest.mark.rule("SEC-1")
def test_each_broker_gets_its_ports_per_listener() -> None:
    core = BrokerCore(BrokerConfig(brokers=3, settings={"listeners": "PLAINTEXT://:9092,SSL://:9093"}),
                      ManualClock(0), handlers=load_handlers())
    assert [[core.listen_port(li, i) for li in core.listeners] for i in range(3)] == [
        [9092, 9093], [9094, 9095], [9096, 9097]]


@pytest.mark.rule("SEC-2")
def test_metadata_and_find_coordinator_answer_with_the_listener_the_request_came_in_on() -> None:
    """Kafka answers Metadata (and FindCoordinator) with the endpoints of the request's listener."""
    core = BrokerCore(BrokerConfig(brokers=2, settings={"listeners": "PLAINTEXT://:0,SASL_SSL://:0"}),
                      ManualClock(0), handlers=load_handlers())
    for i, node in enumerate(sorted(core.cluster.nodes.values(), key=lambda n: n.node_id)):
        node.endpoints = {"PLAINTEXT": ("127.0.0.1", 9092 + 2 * i), "SASL_SSL": ("kafka.example", 9093 + 2 * i)}
    plain = CoreClient(core)
    meta = plain.send(MetadataRequest(topics=None), 12)
    assert [(b.host, b.port) for b in meta.brokers] == [("127.0.0.1", 9092), ("127.0.0.1", 9094)]
    tls = CoreClient(core)
    tls.conn = core.connect(1, "peer", "SASL_SSL")
    tls.conn.authenticated = True
    meta = tls.send(MetadataRequest(topics=None), 12)
    assert [(b.host, b.port) for b in meta.brokers] == [("kafka.example", 9093), ("kafka.example", 9095)]
    fc = tls.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
    assert (fc.coordinators[0].host, fc.coordinators[0].port) in {("kafka.example", 9093), ("kafka.example", 9095)}


@pytest.mark.rule("SEC-7")
def test_sasl_listeners_require_sasl_and_plain_ones_do_not() -> None:
    core = BrokerCore(BrokerConfig(settings={"listeners": "PLAINTEXT://:0,SASL_PLAINTEXT://:0",
                                             "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN"}),
                      ManualClock(0), handlers=load_handlers())
    assert core.config.sasl == SaslConfig()  # a SASL listener without --sasl: the default users
    assert core.connect(1, "", "PLAINTEXT").sasl_mechanism is None
    assert core.connect(1, "", "SASL_PLAINTEXT").sasl_mechanism == ""
    assert core.sasl_mechanisms("SASL_PLAINTEXT") == ["PLAIN"]
    with pytest.raises(ConfigError, match="GSSAPI"):
        BrokerCore(BrokerConfig(settings={"listeners": "SASL_PLAINTEXT://:0", "sasl.enabled.mechanisms": "GSSAPI"}),
                   ManualClock(0), handlers=load_handlers())


# --- SslPrincipalMapper (SslPrincipalMapperTest at d79bd502) ---------------------------------------


@pytest.mark.rule("SEC-6")
@pytest.mark.parametrize("rules", [
    "DEFAULT", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/", "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
    "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
    "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
])
def test_valid_rules(rules: str) -> None:
    PrincipalMapper(rules)


@pytest.mark.rule("SEC-6")
@pytest.mark.parametrize("rules", [
    "default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
])
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(ConfigError):
        PrincipalMapper(rules)


@pytest.mark.rule("SEC-6")
def test_principal_mapping() -> None:
    mapper = PrincipalMapper(", ".join([
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT",
    ]))
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"


@pytest.mark.rule("SEC-6")
def test_comma_with_whitespace_and_no_matching_rule() -> None:
    assert PrincipalMapper("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT").name(
        "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"
    with pytest.raises(ConfigError, match="No rules apply to CN=x"):
        PrincipalMapper("RULE:^CN=y$/$1/").name("CN=x")


@pytest.mark.rule("SEC-6")
@pytest.mark.parametrize(("rules", "count"), [
    ("", 0), ("DEFAULT", 1), ("RULE://", 1), ("  RULE:// ,  DEFAULT  ", 2), (",   , , ,      , , ,   ", 0),
    ("  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", 3), ("RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/", 2),
])
def test_rules_splitting(rules: str, count: int) -> None:
    assert len(PrincipalMapper(rules).rules) == count

"""Kafka's broker configs as data, and AlterConfigs/IncrementalAlterConfigs/DescribeConfigs on them.

Kafka code these tests follow (apache/kafka d79bd502, the pinned commit):
``ConfigAdminManager.validateBrokerConfigChange`` (core/src/main/scala/kafka/server/
ConfigAdminManager.scala) runs ``DynamicBrokerConfig.validateConfigs`` (server/src/main/java/org/
apache/kafka/server/config/DynamicBrokerConfig.java) and turns its ConfigException into
INVALID_REQUEST; ``ConfigAdminManager.prepareIncrementalConfigs`` answers INVALID_CONFIG
"Unknown config name: X" for APPEND/SUBTRACT of an unknown name, and stores one on SET.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kwire.broker.core.configs import BROKER_CONFIGS, KAFKA_BROKER_CONFIGS, ConfigSource, ResourceType
from kwire.protocol.error_codes import ErrorCode
from tests.broker.handlers.test_alter_configs import alter as legacy_alter
from tests.broker.handlers.test_describe_configs import describe, entries
from tests.broker.handlers.test_incremental_alter_configs import APPEND, DELETE, SET, SUBTRACT
from tests.broker.handlers.test_incremental_alter_configs import alter as inc_alter
from tests.broker.helpers import CoreClient, make_core

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "kwire" / "broker" / "core" / "kafka_broker_configs.json"
MIRROR = Path("/work/.mirror/confluentinc+kafka/repo")
RELOGIN = "sasl.kerberos.min.time.before.relogin"


def _data() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_committed_data_is_well_formed_and_covers_known_names() -> None:
    data = _data()
    assert len(data["kafka"]["commit"]) == 40
    configs = data["configs"]
    for name, c in configs.items():
        assert set(c) <= {"type", "default", "mode", "sensitive", "internal", "required", "source",
                          "listener_prefix_only", "dynamic_only"}, name
        assert c["type"] in ("boolean", "string", "int", "short", "long", "double", "list", "class", "password")
        assert c["mode"] in ("read-only", "per-broker", "cluster-wide")
        assert c["sensitive"] == (c["type"] == "password") and (c["default"] is None or not c["sensitive"])
        assert c["source"].endswith(".java")
    assert configs[RELOGIN] == {**configs[RELOGIN], "type": "long", "default": "60000", "mode": "per-broker"}
    assert configs["log.retention.ms"]["mode"] == "cluster-wide"
    assert configs["log.retention.hours"] == {**configs["log.retention.hours"], "default": "168", "mode": "read-only"}
    assert configs["num.network.threads"] == {**configs["num.network.threads"], "default": "3", "mode": "cluster-wide"}
    assert configs["message.max.bytes"]["default"] == "1048588"
    assert configs["ssl.keystore.password"]["sensitive"] and configs["ssl.keystore.password"]["default"] is None
    assert configs["socket.request.max.bytes"]["mode"] == "read-only"


@pytest.mark.skipif(not MIRROR.exists(), reason=f"no Kafka mirror at {MIRROR} (fetch github:confluentinc/kafka)")
def test_import_tool_regenerates_the_committed_data() -> None:
    res = subprocess.run([sys.executable, str(ROOT / "tools" / "import_broker_configs.py"), "--git", str(MIRROR),
                          "--check"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def test_every_kwire_broker_config_says_it_changes_behaviour() -> None:
    assert all(d.acted_on for d in BROKER_CONFIGS.values())
    assert not any(d.acted_on for d in KAFKA_BROKER_CONFIGS.values())
    assert RELOGIN in KAFKA_BROKER_CONFIGS and "message.max.bytes" in BROKER_CONFIGS


@pytest.mark.parametrize("name", ["1", ""])
def test_incremental_set_of_a_stored_only_cluster_wide_config(name: str) -> None:
    core, _ = make_core()
    c = CoreClient(core)
    r = inc_alter(c, ResourceType.BROKER, name, [("num.network.threads", SET, "7")])
    assert (r.error_code, r.error_message) == (0, None)
    source = ConfigSource.DYNAMIC_BROKER_CONFIG if name else ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    e = entries(describe(c, ResourceType.BROKER, "1", ["num.network.threads"]))["num.network.threads"]
    assert (e.value, e.config_source, e.read_only) == ("7", source, False)
    shown = entries(describe(c, ResourceType.BROKER, ""))
    assert ("num.network.threads" in shown) == (name == "")


def test_per_broker_config_on_a_broker_id_is_stored_and_described() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    assert inc_alter(c, ResourceType.BROKER, "1", [(RELOGIN, SET, "120000")]).error_code == 0
    e = entries(describe(c, ResourceType.BROKER, "1", synonyms=True))[RELOGIN]
    assert (e.value, e.config_source, e.read_only, e.is_sensitive) == (
        "120000", ConfigSource.DYNAMIC_BROKER_CONFIG, False, False)
    assert [(s.name, s.value, s.source) for s in e.synonyms] == [
        (RELOGIN, "120000", ConfigSource.DYNAMIC_BROKER_CONFIG), (RELOGIN, "60000", ConfigSource.DEFAULT_CONFIG)]
    assert inc_alter(c, ResourceType.BROKER, "1", [(RELOGIN, DELETE, None)]).error_code == 0
    e = entries(describe(c, ResourceType.BROKER, "1"))[RELOGIN]
    assert (e.value, e.config_source) == ("60000", ConfigSource.DEFAULT_CONFIG)


def test_per_broker_config_on_the_default_resource_is_invalid_request() -> None:
    """Kafka: validateConfigs(props, perBrokerConfig=false) refuses PER_BROKER_CONFIGS."""
    core, _ = make_core()
    r = inc_alter(CoreClient(core), ResourceType.BROKER, "", [(RELOGIN, SET, "120000")])
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_REQUEST,
        f"Cannot update these configs at default cluster level, broker id must be specified: [{RELOGIN}]")


def test_sensitive_value_is_reported_as_null() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    assert inc_alter(c, ResourceType.BROKER, "1", [("sasl.jaas.config", SET, "secret")]).error_code == 0
    e = entries(describe(c, ResourceType.BROKER, "1", ["sasl.jaas.config"]))["sasl.jaas.config"]
    assert (e.value, e.is_sensitive, e.config_source) == (None, True, ConfigSource.DYNAMIC_BROKER_CONFIG)


@pytest.mark.parametrize("name", ["1", ""])
def test_read_only_kafka_config_is_invalid_request(name: str) -> None:
    """Kafka: DynamicBrokerConfig.validateConfigs -> "Cannot update these configs dynamically: [..]",
    made INVALID_REQUEST by ConfigAdminManager.validateBrokerConfigChange (KAFKA-13609 comment)."""
    core, _ = make_core()
    c = CoreClient(core)
    for r in (inc_alter(c, ResourceType.BROKER, name, [("log.dirs", SET, "/x"), ("num.io.threads", SET, "4")]),
              legacy_alter(c, ResourceType.BROKER, name, {"log.dirs": "/x"})):
        assert (r.error_code, r.error_message) == (
            ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [log.dirs]")
    assert "num.io.threads" not in core.configs.overrides.get((ResourceType.BROKER, ""), {})


def test_security_config_without_listener_prefix_is_invalid_request() -> None:
    core, _ = make_core()
    r = inc_alter(CoreClient(core), ResourceType.BROKER, "1", [("ssl.keystore.password", SET, "x")])
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "These security configs can be dynamically updated only per-listener using the listener prefix: "
        "[ssl.keystore.password]")


def test_a_custom_broker_config_is_stored_and_described_as_kafka_does(tmp_path: Path) -> None:
    """Kafka keeps a broker name it does not define: prepareIncrementalConfigs applies SET and DELETE
    without a definition, DynamicBrokerConfig.validateConfigs refuses only known names (its
    DynamicConfig.Broker.validate parses the names it defines), and ConfigHelper describes the
    name with no known type: sensitive (value null), read-only, type UNKNOWN. APPEND/SUBTRACT
    need the type: INVALID_CONFIG "Unknown config name: X"."""
    from tests.broker.core.test_storage import start

    core, c, _ = start(tmp_path)
    for op in (APPEND, SUBTRACT):
        r = inc_alter(c, ResourceType.BROKER, "1", [("no.such.config", op, "1")])
        assert (r.error_code, r.error_message) == (ErrorCode.INVALID_CONFIG, "Unknown config name: no.such.config")
    assert inc_alter(c, ResourceType.BROKER, "1", [("custom.per.broker", SET, "a")]).error_code == 0
    # the legacy set names min.insync.replicas: leaving out the formatted cluster default removes it
    assert legacy_alter(c, ResourceType.BROKER, "", {"custom.cluster": "b", "num.io.threads": "5",
                                                     "min.insync.replicas": "1"}).error_code == 0
    assert core.configs.overrides[(ResourceType.BROKER, "1")] == {"custom.per.broker": "a"}
    assert core.configs.overrides[(ResourceType.BROKER, "")]["custom.cluster"] == "b"
    got = entries(describe(c, ResourceType.BROKER, "1", synonyms=True))
    for name, source in (("custom.per.broker", ConfigSource.DYNAMIC_BROKER_CONFIG),
                         ("custom.cluster", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)):
        e = got[name]
        assert (e.value, e.config_source, e.is_sensitive, e.read_only, e.config_type) == (None, source, True, True, 0)
        assert [(s.name, s.value, s.source) for s in e.synonyms] == [(name, None, source)]
    default = entries(describe(c, ResourceType.BROKER, ""))
    assert "custom.cluster" in default and "custom.per.broker" not in default
    assert set(entries(describe(c, ResourceType.BROKER, "1", ["custom.per.broker", "nope"]))) == {"custom.per.broker"}
    # a known name still gets its checks beside a custom one
    r = inc_alter(c, ResourceType.BROKER, "1", [("custom.x", SET, "1"), ("num.io.threads", SET, "many")])
    assert r.error_code == ErrorCode.INVALID_REQUEST and "custom.x" not in core.configs.overrides[(ResourceType.BROKER, "1")]
    core.close()
    core2, c2, _ = start(tmp_path)  # kept with the data dir
    assert core2.configs.overrides[(ResourceType.BROKER, "1")] == {"custom.per.broker": "a"}
    assert core2.configs.overrides[(ResourceType.BROKER, "")]["custom.cluster"] == "b"
    assert inc_alter(c2, ResourceType.BROKER, "1", [("custom.per.broker", DELETE, None)]).error_code == 0
    assert "custom.per.broker" not in entries(describe(c2, ResourceType.BROKER, "1"))


def test_bad_value_of_a_stored_only_config_is_invalid_request() -> None:
    core, _ = make_core()
    r = inc_alter(CoreClient(core), ResourceType.BROKER, "1", [("num.io.threads", SET, "many")])
    assert r.error_code == ErrorCode.INVALID_REQUEST and "num.io.threads" in r.error_message


def test_legacy_alter_on_a_broker_id_keeps_the_acted_on_and_the_stored_parts_apart() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    assert legacy_alter(c, ResourceType.BROKER, "", {"num.io.threads": "5", "min.insync.replicas": "1"}).error_code == 0
    r = legacy_alter(c, ResourceType.BROKER, "1", {RELOGIN: "90000", "auto.create.topics.enable": "false"})
    assert r.error_code == 0
    assert not core.auto_create_enabled()
    assert core.configs.overrides[(ResourceType.BROKER, "1")] == {RELOGIN: "90000"}
    assert core.configs.overrides[(ResourceType.BROKER, "")]["num.io.threads"] == "5"
    got = entries(describe(c, ResourceType.BROKER, "1"))
    assert (got["num.io.threads"].value, got["num.io.threads"].config_source) == (
        "5", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert got["log.dirs"].read_only and not got[RELOGIN].read_only


def test_kwire_config_keeps_its_own_flags() -> None:
    """auto.create.topics.enable is read-only in Kafka but kwire acts on it dynamically: it stays so."""
    core, _ = make_core()
    c = CoreClient(core)
    assert BROKER_CONFIGS["auto.create.topics.enable"].kafka_mode == "read-only"
    assert inc_alter(c, ResourceType.BROKER, "1", [("auto.create.topics.enable", SET, "false")]).error_code == 0
    assert not core.auto_create_enabled()

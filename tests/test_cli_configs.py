"""``kwire configs`` against an in-process kwire broker: describe and alter topic, broker, group
and client-quota configs as kafka-configs.sh does (kafka ``tools/.../ConfigCommand``, at d79bd502),
one-line errors carrying Kafka's reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kwire.cli import main
from kwire.control import Broker, BrokerConfig


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False,
                             settings={"group.share.min.record.lock.duration.ms": "1000"})) as b:
        b.create_topic("orders", partitions=2)
        yield b


def run_configs(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["configs", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_topic_alter_then_describe_dynamic_and_all(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    b = broker.bootstrap
    assert run_configs(capsys, "-b", b, "--topic", "orders", "--alter", "--add-config",
                 "retention.ms=60000,cleanup.policy=[delete,compact]")[:2] == (
        0, "Completed updating config for topic orders.\n")
    assert broker.core.configs.get(2, "orders", "cleanup.policy") == "delete,compact"  # type: ignore[arg-type]
    rc, out, _ = run_configs(capsys, "-b", b, "--topic", "orders", "--json")
    (res,) = json.loads(out)
    assert {c["name"]: (c["value"], c["source"]) for c in res["configs"]} == {
        "cleanup.policy": ("delete,compact", "DYNAMIC_TOPIC_CONFIG"), "retention.ms": ("60000", "DYNAMIC_TOPIC_CONFIG")}
    rc, out, _ = run_configs(capsys, "-b", b, "--entity-type", "topics", "--entity-name", "orders", "--all", "--json")
    entries = {c["name"]: c for c in json.loads(out)[0]["configs"]}
    assert entries["segment.bytes"]["source"] == "DEFAULT_CONFIG" and "retention.ms" in entries
    assert run_configs(capsys, "-b", b, "--topic", "orders", "--alter", "--delete-config", "retention.ms")[0] == 0
    rc, out, _ = run_configs(capsys, "-b", b, "--topic", "orders")
    assert "cleanup.policy  delete,compact  DYNAMIC_TOPIC_CONFIG" in out and "retention.ms" not in out


@pytest.mark.rule("AQ-12")
def test_group_config_within_broker_bounds(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    """GroupConfig.validate: a share group's lock duration lies within the broker's min/max."""
    b = broker.bootstrap
    assert run_configs(capsys, "-b", b, "--group", "workers", "--alter", "--add-config",
                 "share.record.lock.duration.ms=2000")[0] == 0
    rc, out, _ = run_configs(capsys, "-b", b, "--group", "workers")
    assert rc == 0 and "share.record.lock.duration.ms  2000   GROUP_CONFIG" in out
    rc, out, err = run_configs(capsys, "-b", b, "--group", "workers", "--alter", "--add-config",
                         "share.record.lock.duration.ms=999999")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("kwire configs: error: group 'workers': INVALID_CONFIG: ")


def test_broker_and_broker_default(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    b = broker.bootstrap
    assert run_configs(capsys, "-b", b, "--broker-defaults", "--alter", "--add-config",
                       "log.cleaner.backoff.ms=500")[:2] == (
        0, "Completed updating default config for brokers in the cluster.\n")
    rc, out, _ = run_configs(capsys, "-b", b, "--broker-defaults")
    assert out.splitlines()[0] == "Default configs for brokers in the cluster are:"
    assert "log.cleaner.backoff.ms  500    DYNAMIC_DEFAULT_BROKER_CONFIG" in out
    # a broker id's dynamic configs are its own (ConfigCommand filters on DYNAMIC_BROKER_CONFIG);
    # --all shows the cluster default it inherits
    rc, out, _ = run_configs(capsys, "-b", b, "--broker", "1", "--json")
    assert "log.cleaner.backoff.ms" not in {c["name"] for c in json.loads(out)[0]["configs"]}
    rc, out, _ = run_configs(capsys, "-b", b, "--broker", "1", "--all", "--json")
    entries = {c["name"]: c for c in json.loads(out)[0]["configs"]}
    assert entries["log.cleaner.backoff.ms"]["value"] == "500"
    rc, out, _ = run_configs(capsys, "-b", b, "--broker", "1", "--all")
    assert "group.share.min.record.lock.duration.ms" in out and "STATIC_BROKER_CONFIG" in out
    rc, _, err = run_configs(capsys, "-b", b, "--broker", "7")
    assert rc == 2 and err == "kwire configs: error: broker 7 is not in the cluster (brokers: 1)\n"


@pytest.mark.parametrize(("args", "message"), [
    (["--topic", "nope"], "topic 'nope': UNKNOWN_TOPIC_OR_PARTITION: The topic 'nope' does not exist."),
    (["--topic", "orders", "--alter", "--add-config", "retention.ms=abc"],
     "topic 'orders': INVALID_CONFIG: retention.ms: 'abc' is not an integer"),
    (["--topic", "orders", "--alter", "--add-config", "no.such.config=1"], "topic 'orders': INVALID_CONFIG: "),
    (["--topic", "orders", "--group", "g"], "name one entity: topic 'orders' and group 'g'"),
    (["--topic", "orders", "--add-config", "retention.ms=1"], "need --alter"),
    (["--topic", "orders", "--alter"], "--alter needs --add-config"),
    (["--topic", "orders", "--alter", "--add-config", "retention.ms"], "'retention.ms' is not KEY=VALUE"),
    ([], "name an entity"),
])
def test_errors_are_one_line(broker: Broker, capsys: pytest.CaptureFixture[str], args: list[str],
                             message: str) -> None:
    rc, out, err = run_configs(capsys, "-b", broker.bootstrap, *args)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert message in err


def test_quotas_not_served_say_so(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster without DescribeClientQuotas/AlterClientQuotas in ApiVersions: one line naming it."""
    from kwire.protocol.registry import ApiKey

    if ApiKey.DESCRIBE_CLIENT_QUOTAS in broker.core.handlers:  # type: ignore[attr-defined]
        pytest.skip("this kwire serves the quota APIs")
    for args, api in ((["--user", "alice"], "DescribeClientQuotas"),
                      (["--client", "app", "--alter", "--add-config", "producer_byte_rate=1024"], "AlterClientQuotas")):
        rc, out, err = run_configs(capsys, "-b", broker.bootstrap, *args)
        assert (rc, out) == (2, "")
        assert err == (f"kwire configs: error: the cluster does not serve {api} (UNSUPPORTED_VERSION: not advertised "
                       f"in ApiVersions), so it has no client quotas to show or change here\n")


class _Quotas:
    """DescribeClientQuotas/AlterClientQuotas over a dict, as Kafka's ClientQuotaManager answers
    (exact entity match for a strict filter, ANY match by type); for a broker that serves them."""

    def __init__(self) -> None:
        self.values: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {}

    def describe(self, ctx: Any, req: Any) -> Any:
        from kwire.protocol.messages.describe_client_quotas import DescribeClientQuotasResponse as R

        entries = []
        for entity, values in sorted(self.values.items(), key=repr):
            types = dict(entity)
            ok = all((c.match_type == 2 and c.entity_type in types)
                     or (c.match_type == 0 and types.get(c.entity_type, "") == c.match)
                     or (c.match_type == 1 and c.entity_type in types and types[c.entity_type] is None)
                     for c in req.components)
            if ok and (not req.strict or len(types) == len(req.components)) and values:
                entries.append(R.EntryData(entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                                           values=[R.ValueData(key=k, value=v) for k, v in values.items()]))
        return R(error_code=0, error_message=None, entries=entries)

    def alter(self, ctx: Any, req: Any) -> Any:
        from kwire.protocol.messages.alter_client_quotas import AlterClientQuotasResponse as R

        out = []
        for e in req.entries:
            entity = tuple(sorted((x.entity_type, x.entity_name) for x in e.entity))
            values = self.values.setdefault(entity, {})
            for op in e.ops:
                if op.remove:
                    values.pop(op.key, None)
                else:
                    values[op.key] = op.value
            out.append(R.EntryData(error_code=0, error_message=None, entity=[
                R.EntityData(entity_type=t, entity_name=n) for t, n in entity]))
        return R(entries=out)


def test_quotas_on_a_cluster_that_serves_them(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import kwire.control
    from kwire.broker.core.dispatch import HandlerSpec
    from kwire.broker.handlers import load_handlers
    from kwire.protocol.registry import ApiKey

    quotas = _Quotas()
    handlers = dict(load_handlers())
    # this test's own quota handlers (also over a kwire that serves the APIs: the CLI is the point)
    handlers[ApiKey.DESCRIBE_CLIENT_QUOTAS] = HandlerSpec(
        ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 0, 1, "test", quotas.describe, None)
    handlers[ApiKey.ALTER_CLIENT_QUOTAS] = HandlerSpec(
        ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 0, 1, "test", quotas.alter, None)
    monkeypatch.setattr(kwire.control, "load_handlers", lambda: handlers)
    with Broker(BrokerConfig(log_connections=False)) as b:
        assert run_configs(capsys, "-b", b.bootstrap, "--user", "alice", "--client", "app", "--alter", "--add-config",
                     "producer_byte_rate=1048576,consumer_byte_rate=2048")[:2] == (
            0, "Completed updating config for user 'alice', client-id 'app'.\n")
        assert run_configs(capsys, "-b", b.bootstrap, "--user-defaults", "--alter", "--add-config",
                     "request_percentage=50")[0] == 0
        rc, out, _ = run_configs(capsys, "-b", b.bootstrap, "--user", "alice", "--client", "app")
        assert out == "Quota configs for client-id=app, user=alice: consumer_byte_rate=2048, producer_byte_rate=1048576\n"
        rc, out, _ = run_configs(capsys, "-b", b.bootstrap, "--entity-type", "users", "--json")
        assert sorted(json.dumps(e["entity"], sort_keys=True) for e in json.loads(out)) == [
            '{"client-id": "app", "user": "alice"}', '{"user": null}']
        assert run_configs(capsys, "-b", b.bootstrap, "--user", "alice", "--client", "app", "--alter", "--delete-config",
                     "consumer_byte_rate")[0] == 0
        rc, out, _ = run_configs(capsys, "-b", b.bootstrap, "--user", "alice", "--client", "app", "--json")
        assert json.loads(out) == [{"entity": {"user": "alice", "client-id": "app"},
                                    "quotas": {"producer_byte_rate": 1048576.0}}]
        rc, _, err = run_configs(capsys, "-b", b.bootstrap, "--ip", "10.0.0.1", "--alter", "--add-config", "x=fast")
        assert rc == 2 and err == "kwire configs: error: x=fast: a quota is a number\n"


def test_a_null_value_shows_as_null_not_none() -> None:
    """kafka-configs.sh prints ``name=null`` (ConfigCommand.describeResourceConfig, string
    concatenation of a null value); the table says ``(null)``, never Python's ``None``."""
    from kwire.cli.configs import _shown

    assert _shown({"value": None, "sensitive": False}) == "(null)"
    assert _shown({"value": None, "sensitive": True}) == "(sensitive)"
    assert _shown({"value": "", "sensitive": False}) == ""

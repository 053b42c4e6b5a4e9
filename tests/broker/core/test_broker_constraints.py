"""Broker-level group settings that break Kafka's cross-key rules stop the broker from starting.

Upstream at d79bd502: GroupCoordinatorConfig.checkConstraints (verifyConsumerGroupConfigs,
verifyShareGroupConfigs, verifyStreamsGroupConfigs) and ShareGroupConfig.validate, both run from
their constructors when KafkaConfig is built, so a broker with such a server.properties exits.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from kwire.broker.core.configs import BROKER_CONSTRAINTS
from kwire.errors import ConfigError
from tests.broker.helpers import make_core


@pytest.mark.parametrize(("settings", "message"), [
    ({"group.share.heartbeat.interval.ms": "500"},
     "group.share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms "
     "(500 and 5000)"),
    ({"group.share.min.heartbeat.interval.ms": "20000"},
     "group.share.max.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat"
     ".interval.ms (15000 and 20000)"),
    ({"group.share.heartbeat.interval.ms": "15000", "group.share.min.session.timeout.ms": "1000",
      "group.share.session.timeout.ms": "15000"},
     "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms (15000 and 15000)"),
    ({"group.share.record.lock.duration.ms": "10000", "group.share.min.record.lock.duration.ms": "15000"},
     "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock"),
    ({"group.share.max.share.sessions": "10"},
     "group.share.max.share.sessions must be greater than or equal to group.share.max.size (10 and 200)"),
    ({"group.share.delivery.count.limit": "8", "group.share.max.delivery.count.limit": "6"},
     "group.share.max.delivery.count.limit must be greater than or equal to group.share.delivery.count.limit"),
    ({"group.consumer.heartbeat.interval.ms": "500"},
     "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat"),
    ({"group.consumer.session.timeout.ms": "70000"},
     "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
    ({"group.share.assignors": "simple,simple2"}, "group.share.assignors must contain exactly one assignor"),
])
def test_broken_cross_key_rules_refuse_to_start(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        make_core(settings=settings)
    assert message in str(exc.value)


def test_kafka_defaults_and_consistent_lowered_settings_start() -> None:
    make_core()
    core, _ = make_core(settings={"group.share.heartbeat.interval.ms": "500",
                                  "group.share.min.heartbeat.interval.ms": "500",
                                  "group.consumer.heartbeat.interval.ms": "500",
                                  "group.consumer.min.heartbeat.interval.ms": "500"})
    assert len(BROKER_CONSTRAINTS) == 40  # 10 per group kind, 3 more for streams, 7 in ShareGroupConfig


def test_kwire_broker_refuses_in_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet",
                           "--set", "group.share.heartbeat.interval.ms=500"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "kwire broker: error: group.share.heartbeat.interval.ms must be greater than or equal to "
        "group.share.min.heartbeat.interval.ms (500 and 5000)"]


@pytest.mark.rule("ACL-1")
def test_only_standard_authorizer_is_accepted() -> None:
    """authorizer.class.name names the class Kafka loads (AuthorizerUtils.createAuthorizer); kwire
    has StandardAuthorizer only, so any other name is refused at start instead of enabling it."""
    with pytest.raises(ConfigError, match="kwire serves only org.apache.kafka.metadata.authorizer.StandardAuthorizer"):
        make_core(settings={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    core, _ = make_core(settings={"authorizer.class.name": ""})
    assert core.subsystems.acl is not None and not core.subsystems.acl.enabled
    core, _ = make_core(settings={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    assert core.subsystems.acl is not None and core.subsystems.acl.enabled

"""Adapters for the Node clients (kafkajs, @kafkats/client) via ``kwire_js_client.cjs``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, ClassVar

from kwire.conformance import paths
from kwire.conformance.clients.base import ClientAdapter, Security, librdkafka_security

__all__ = ["ConfluentJsAdapter", "KafkajsAdapter", "KafkatsAdapter", "PlatformaticAdapter"]


class _NodeAdapter(ClientAdapter):
    package: ClassVar[str]

    def unavailable_reason(self) -> str | None:
        if shutil.which("node") is None:
            return "no node on PATH"
        if not (paths.node_modules_dir() / self.package / "package.json").is_file():
            return f"{self.package} is not in {paths.node_modules_dir()} (run tools/install_clients.sh js)"
        return None

    def argv(self) -> list[str]:
        return ["node", str(paths.js_driver()), self.name]

    def env(self) -> dict[str, str] | None:
        return {"KWIRE_NODE_MODULES": str(paths.node_modules_dir())}

    def modules_dir(self) -> Path:
        return paths.node_modules_dir()

    def installed_version(self) -> str:
        data = json.loads((self.modules_dir() / self.package / "package.json").read_text())
        return str(data["version"])


def _pem(path: str) -> str:
    with open(path, encoding="ascii") as f:
        return f.read()


class KafkajsAdapter(_NodeAdapter):
    """kafkajs 2.2.4: pre-flexible protocol versions; classic groups; gzip built in."""

    name = "kafkajs"
    package = "kafkajs"
    # snappy/lz4/zstd need plug-in packages that are not installed.
    supported_codecs = ("none", "gzip")
    # kafkajs cannot fetch without joining a group; consume(group_id=None) uses a throwaway one.
    groupless_consume = False
    # kafkajs's idempotent producer wants one request in flight; more retries than the
    # default 5 (a dead leader costs a few while the metadata catches up).
    failover_config = {
        "client": {"retry": {"retries": 20, "initialRetryTime": 100, "maxRetryTime": 1000}},
        "producer": {
            "idempotent": True,
            "maxInFlightRequests": 1,
            "retry": {"retries": 20, "initialRetryTime": 100, "maxRetryTime": 1000},
        },
    }
    failover_idempotent = True
    read_committed_config = {"consumer": {"readUncommitted": False}}
    no_share_consumer = "kafkajs 2.2 has no share consumer (KIP-932)"
    failover_no_live_read = (
        "kafkajs reads only as a group member, and an uncommitted group re-reads after a rebalance"
    )

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        """``ssl.ca`` (the PEM text) and ``sasl``; OAUTHBEARER through an oauthBearerProvider the
        driver builds (``kwireOauthPrincipal``); re-authentication 1 s before the session ends."""
        client: dict[str, Any] = {}
        if "SSL" in sec.protocol:
            client["ssl"] = {"ca": [_pem(sec.ca_file)]}
        if sec.mechanism == "OAUTHBEARER":
            client["sasl"] = {"mechanism": "oauthbearer", "kwireOauthPrincipal": sec.username}
        elif sec.mechanism is not None:
            client["sasl"] = {"mechanism": sec.mechanism.lower(), "username": sec.username,
                              "password": sec.password}
        if sec.mechanism is not None:
            client["reauthenticationThreshold"] = 1000
        return {"client": client}


class KafkatsAdapter(_NodeAdapter):
    """@kafkats/client 0.12.0: pure TypeScript; topics must exist (no auto-create)."""

    name = "kafkats"
    package = "@kafkats/client"
    # gzip uses node's zlib; the other codecs need plug-in libraries not installed.
    supported_codecs = ("none", "gzip")
    # kafkats 0.12 refreshes metadata only on an error code in a produce answer, never
    # after a connection error, and otherwise every 5 minutes: a dead leader is retried
    # until the retries run out. A short periodic refresh lets it find the new leader.
    failover_config = {
        "client": {"metadataRefreshIntervalMs": 500},
        "producer": {"idempotent": True, "retries": 20, "maxRetryBackoffMs": 1000},
    }
    failover_no_live_read = (
        "@kafkats/client 0.12.0's fetcher pins a partition to its cached leader and drops it only on a "
        "NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION answer, not on a connection failure "
        "('background fetch failed'), so a partition whose leader's broker died is never fetched again"
    )
    failover_idempotent = True
    read_committed_config = {"consumer": {"isolationLevel": "read_committed"}}
    known_defects = {
        "acl_principal": (
            "@kafkats/client 0.12.0 drops a Metadata topic answered TOPIC_AUTHORIZATION_FAILED(29): "
            "Cluster.refreshMetadata (src/client/cluster.ts; dist/index.js) keeps only topics with error 0 "
            "and Producer.getPartitionCount (src/producer/producer.ts) retries 5 times, then throws 'Topic <t> "
            "not found', so a principal without rights is told the topic does not exist (once granted WRITE "
            "and READ it produces and consumes)"
        ),
        "renew_disabled": (
            "@kafkats/client 0.12.0's ShareConsumer needs ShareFetch and ShareAcknowledge v2 (dist/index.js: "
            "KafkaFeatureUnsupportedError 'ShareConsumer requires ShareFetch and ShareAcknowledge v2 (Kafka "
            "4.2+)'), and against a broker that advertises ShareFetch v1 (share.version 1, Kafka before "
            "KIP-1222) it stalls without telling the application: recorded, it takes its assignment "
            "(ShareGroupHeartbeat v1, epoch 4, partition 0), then sends no ShareFetch and no further "
            "heartbeat until it leaves"
        ),
    }

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        """``tls`` and ``sasl`` (OAUTHBEARER: a provider the driver builds from ``kwireOauthPrincipal``)."""
        client: dict[str, Any] = {}
        if "SSL" in sec.protocol:
            client["tls"] = {"enabled": True, "ca": _pem(sec.ca_file)}
        if sec.mechanism == "OAUTHBEARER":
            client["sasl"] = {"mechanism": "OAUTHBEARER", "kwireOauthPrincipal": sec.username,
                              "reauthenticationThresholdMs": 1000}
        elif sec.mechanism is not None:
            client["sasl"] = {"mechanism": sec.mechanism, "username": sec.username, "password": sec.password,
                              "reauthenticationThresholdMs": 1000}
        return {"client": client}

    def share_argv(self) -> list[str] | None:
        """``js/share_driver.cjs`` (the ShareConsumer of @kafkats/client)."""
        return ["node", str(Path(__file__).parent / "js" / "share_driver.cjs")]


class PlatformaticAdapter(_NodeAdapter):
    """@platformatic/kafka 2.12: pure JavaScript; classic and KIP-848 groups; transactions; no share
    consumer. Driven by ``js/platformatic_driver.cjs``, which answers ``describe`` like any
    outside driver."""

    name = "platformatic"
    package = "@platformatic/kafka"
    # zstd uses node's own zlib zstd, which arrived in node 22.15; Debian 12's node 20 has none.
    supported_codecs = ("none", "gzip", "snappy", "lz4")
    supports_kip848 = True
    supported_ops = frozenset({"produce", "consume", "member", "producer", "txn_producer"})
    # platformatic reads only as a group member; "no group" is a throwaway group that never commits.
    groupless_consume = False
    no_share_consumer = "@platformatic/kafka 2.12 has no share consumer (KIP-932)"
    read_committed_config = {"consumer": {"isolationLevel": 1}}
    failover_config = {"idempotent": True}
    failover_idempotent = True
    # A race in the client, so not a known_defects entry (a strict xfail would flake): the producer,
    # the acknowledgements and the read-back after the faults are still checked.
    failover_no_live_read = (
        "@platformatic/kafka 2.12.1's fetcher can move a partition's position back after its leader dies "
        "(in 4 of 5 runs here): the recorded Fetch requests show the live consumer reading p0 up to offset "
        "34 from the new leader, then fetching p0 from offset 19 again (the offset of its fetch in flight "
        "to the dead broker), handing out records 19-34 twice"
    )
    known_defects = {
        "group_migration": (
            "@platformatic/kafka 2.12.1 sends OffsetFetch v9 from a classic member with its member id and "
            "member_epoch -1 (consumer.js: memberEpoch: useConsumerGroupProtocol ? memberEpoch : -1); once "
            "a consumer-protocol member converted the group, Kafka's ConsumerGroup.validateOffsetFetch "
            "answers ILLEGAL_GENERATION (recorded: group error 22 to classic member B after the "
            "upgrade), and B never fetches its partitions"
        ),
    }

    def argv(self) -> list[str]:
        return ["node", str(Path(__file__).parent / "js" / "platformatic_driver.cjs")]

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        """``tls`` (node's tls.connect options: the CA's PEM) and ``sasl`` (PLAIN, SCRAM-SHA-256/512,
        OAUTHBEARER with a token provider the driver builds from ``kwireOauthPrincipal``).
        Re-authentication is the client's own: network/connection.js schedules it at 80% of the
        SessionLifetimeMs the broker answers, with no setting to change."""
        client: dict[str, Any] = {}
        if "SSL" in sec.protocol:
            client["tls"] = {"ca": _pem(sec.ca_file)}
        if sec.mechanism == "OAUTHBEARER":
            client["sasl"] = {"mechanism": "OAUTHBEARER", "kwireOauthPrincipal": sec.username}
        elif sec.mechanism is not None:
            client["sasl"] = {"mechanism": sec.mechanism, "username": sec.username, "password": sec.password}
        return {"client": client}


def confluent_js_modules() -> Path:
    """Where tools/install_clients.sh builds @confluentinc/kafka-javascript (its own node_modules:
    the native build may fail on a machine without compilers, and must not take the others down)."""
    return paths.clients_dir() / "js-confluent" / "node_modules"


class ConfluentJsAdapter(_NodeAdapter):
    """@confluentinc/kafka-javascript 1.10 (librdkafka 2.15 in a native addon) through its
    KafkaJS-compatible API: classic and KIP-848 groups, transactions, every codec; no share
    consumer. Driven by ``js/confluent_js_driver.cjs``."""

    name = "confluent_js"
    package = "@confluentinc/kafka-javascript"
    supports_kip848 = True
    groupless_consume = False
    no_share_consumer = "@confluentinc/kafka-javascript 1.10 has no share consumer in its API"
    read_committed_config = {"consumer": {}}
    failover_config = {"producer": {"enable.idempotence": True}}
    failover_idempotent = True
    def modules_dir(self) -> Path:
        return confluent_js_modules()

    known_defects = {
        "roundtrip": (
            "@confluentinc/kafka-javascript 1.10.1 produces an empty key as NULL: the driver passes "
            "Buffer.alloc(0), and the recorded Produce v10 batches hold key length -1 for every "
            "'<codec>-empty-key' record (confluent-kafka for Python, on librdkafka too, keeps it empty)"
        ),
    }

    def unavailable_reason(self) -> str | None:
        if shutil.which("node") is None:
            return "no node on PATH"
        if not (confluent_js_modules() / self.package / "package.json").is_file():
            return (f"{self.package} is not in {confluent_js_modules()} (run tools/install_clients.sh js: its "
                    f"prebuilt addon is downloaded from github.com, so it is built from source there)")
        return None

    def argv(self) -> list[str]:
        return ["node", str(Path(__file__).parent / "js" / "confluent_js_driver.cjs")]

    def env(self) -> dict[str, str] | None:
        return {"KWIRE_NODE_MODULES": str(confluent_js_modules())}

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        """librdkafka's own properties beside the ``kafkaJS`` block (its ``ssl`` there is only a
        boolean): ssl.ca.location, sasl.mechanism, OAUTHBEARER through librdkafka's unsecured JWT
        (enable.sasl.oauthbearer.unsecure.jwt, sasl.oauthbearer.config); librdkafka re-authenticates
        by itself (KIP-368, since 1.9)."""
        return {"client": librdkafka_security(sec)}

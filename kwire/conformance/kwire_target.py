"""kwire's own broker as the conformance target: an in-process cluster and its ``ClusterControl``.

``kwire_cluster()`` starts a ``kwire.control.Broker`` with the settings the scenarios
want (``CONFORMANCE_SETTINGS``: no initial rebalance delay, short KIP-848 heartbeats);
``KwireControl`` adapts its control API to the scenarios' ``ClusterControl``.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kwire.broker.core.acl import STANDARD_AUTHORIZER
from kwire.clock import JumpClock
from kwire.control import Broker, BrokerConfig, SaslConfig
from kwire.errors import KwireError

__all__ = ["ACL_USER", "CONFORMANCE_BROKERS", "CONFORMANCE_SETTINGS", "SECURITY_SETTINGS", "KwireControl",
           "kwire_cluster"]

CONFORMANCE_BROKERS = 3
CONFORMANCE_SETTINGS: Mapping[str, str] = {
    # A classic group's first join completes at once instead of after 3 s.
    "group.initial.rebalance.delay.ms": "0",
    # KIP-848 reconciliation advances one heartbeat at a time; 5 s (the default) per
    # round would make a two-member rebalance take tens of seconds.
    "group.consumer.heartbeat.interval.ms": "500",
    # ... and Kafka refuses an interval below the minimum (GroupCoordinatorConfig)
    "group.consumer.min.heartbeat.interval.ms": "500",
}
# The security scenarios' listeners (kwire.conformance.scenarios.security): plaintext first (the
# bootstrap every other scenario uses), SSL and SASL_SSL with a throwaway CA; PLAIN sessions on
# SASL_SSL last REAUTH_MS (KIP-368), so the reauth scenario sees several lifetimes. SASL_PLAINTEXT
# serves the authorizer scenario (kwire.conformance.scenarios.acl): StandardAuthorizer is on, and
# every principal the other scenarios connect as is a super user (PLAINTEXT and SSL without a client
# certificate are User:ANONYMOUS, SASL the SASL user, OAUTHBEARER its token's sub), so for them it
# decides as no authorizer would; ACL_USER has no ACLs until a scenario grants them.
REAUTH_MS = 3000
SASL_USER = ("kwire", "kwire-secret")
OAUTH_PRINCIPAL = "kwire-oauth"  # the sub of the clients' unsecured tokens
ACL_USER = ("kwire-noacl", "kwire-noacl-secret")
SECURITY_SETTINGS: Mapping[str, str] = {
    "listeners": "PLAINTEXT://:0,SSL://:0,SASL_SSL://:0,SASL_PLAINTEXT://:0",
    "listener.name.sasl_ssl.plain.connections.max.reauth.ms": str(REAUTH_MS),
    "authorizer.class.name": STANDARD_AUTHORIZER,
    "super.users": f"User:ANONYMOUS;User:{SASL_USER[0]};User:{OAUTH_PRINCIPAL}",
}


@dataclass(slots=True)
class KwireControl:
    """``ClusterControl`` over a running kwire ``Broker`` (topics replicated over the cluster)."""

    broker: Broker
    name: str = "kwire"
    replication_factor: int = CONFORMANCE_BROKERS

    # --- TLS listeners (kwire.conformance.scenarios.security.SecureControl) ------------------
    def security_endpoint(self, protocol: str) -> str | None:
        protocols = self.broker.call(lambda: {li.name: li.protocol.value for li in self.broker.core.listeners})
        for name, servers in self.broker.listeners.items():
            if protocols[name] == protocol:
                return servers
        return None

    @property
    def ca_file(self) -> str | None:
        return self.broker.ca_file

    @property
    def sasl_user(self) -> tuple[str, str]:
        return SASL_USER

    @property
    def reauth_ms(self) -> int:
        return REAUTH_MS

    def security_stats(self) -> dict[str, int]:
        s: dict[str, Any] = self.broker.stats()
        return {"reauthentications": s["reauthentications"], "expired_sessions": s["expired_sessions"]}

    # --- the authorizer (kwire.conformance.scenarios.acl.AclControl) ----------------------------
    @property
    def authorizer(self) -> str | None:
        def enabled() -> bool:
            acl = self.broker.core.subsystems.acl
            return acl is not None and acl.enabled

        return STANDARD_AUTHORIZER if self.broker.call(enabled) else None

    @property
    def acl_user(self) -> tuple[str, str]:
        return ACL_USER

    def add_acl(self, principal: str, operation: str, resource_type: str, name: str) -> None:
        self.broker.add_acl(principal, operation, resource_type, name)

    def create_topic(self, topic: str, partitions: int) -> None:
        """Create a topic replicated on up to ``replication_factor`` live nodes."""
        rf = max(1, min(self.replication_factor, len(self.broker.live_node_ids())))
        self.broker.create_topic(topic, partitions, replication_factor=rf)

    def live_node_ids(self) -> list[int]:
        return self.broker.live_node_ids()

    def set_quota(self, entity: str, **values: float | None) -> None:
        """Client quotas for the quota scenario (``Broker.set_quota``)."""
        self.broker.set_quota(entity, **values)

    def leader_of(self, topic: str, partition: int) -> int:
        return self.broker.leader_of(topic, partition)

    def end_offsets(self, topic: str) -> dict[int, int]:
        return self.broker.end_offsets(topic)

    def wait_for_commits(self, group: str, topic: str, positions: dict[int, int], timeout_s: float) -> bool:
        """Wait until the group's committed offsets reach ``positions`` (partition -> next offset)."""

        def reached(core: object) -> bool:
            got = self.broker.core.subsystems.offsets.partitions(group)
            return all((topic, p) in got and got[(topic, p)].offset >= n for p, n in positions.items())

        try:
            self.broker.wait_until(reached, timeout=timeout_s)
        except TimeoutError:
            return False
        return True

    def describe_group(self, group: str) -> str:
        """The broker's view of a group for a failure message: state, members and assignments,
        and the group requests it answered (diagnoses a member that never got its assignment)."""
        got = self.broker.describe_group(group)
        stats = self.broker.stats().get("per_api", {})
        asked = {name: stats.get(key, 0) for name, key in (("FindCoordinator", 10), ("JoinGroup", 11),
                                                            ("SyncGroup", 14), ("Heartbeat", 12))}
        if got is None:
            return f"the broker has no group {group!r} (requests so far: {asked})"
        members = {mid[-8:]: m.get("assignment") for mid, m in got.get("members", {}).items()}
        return f"broker: group {got.get('state')}, members {members}, requests so far {asked}"

    # --- transactions (kwire.conformance.scenarios.transactions.TxnWindowControl) --------------
    def hold_txn_markers(self, hold_ms: int | None = None) -> None:
        self.broker.hold_txn_markers(hold_ms)

    def release_txn_markers(self) -> int:
        return self.broker.release_txn_markers()

    def concurrent_transactions(self) -> int:
        return sum(self.broker.txn_stats()["concurrent_transactions"].values())

    # --- share groups (kwire.conformance.scenarios.share.ShareControl) -------------------------
    def produce_values(self, topic: str, values: list[bytes]) -> None:
        self.broker.produce(topic, list(values))

    def set_group_config(self, group: str, key: str, value: str) -> None:
        self.broker.set_config("group", group, key, value)

    def advance(self, ms: int) -> None:
        self.broker.advance(ms)

    def enable_dlq(self, group: str, dlq_topic: str) -> None:
        self.broker.create_topic(dlq_topic, 1, configs={"errors.deadletterqueue.group.enable": "true"})
        self.broker.set_config("group", group, "errors.deadletterqueue.topic.name", dlq_topic)

    def dead_letters(self, dlq_topic: str) -> list[tuple[int, str]]:
        out = []
        for r in self.broker.read(dlq_topic, 0):
            h = {k: bytes(v).decode() for k, v in r.headers if v is not None}
            out.append((int(h["__dlq.errors.offset"]), h["__dlq.errors.message"]))
        return out

    def reject_into_dlq(self, topic: str, group: str, dlq_topic: str, values: list[bytes]) -> None:
        from kwire.broker.core.share_partition import AckBatch

        b = self.broker
        b.create_topic(dlq_topic, 1, configs={"errors.deadletterqueue.group.enable": "true"})
        b.set_config("group", group, "share.auto.offset.reset", "earliest")
        b.set_config("group", group, "errors.deadletterqueue.topic.name", dlq_topic)
        b.produce(topic, list(values))

        def reject() -> None:
            from kwire.broker.core.share_coordinator import share_coordinator

            sp = share_coordinator(b.core).partitions.for_fetch(group, topic, 0)
            got = sp.acquire("kwire-conformance", len(values))
            sp.acknowledge("kwire-conformance", [AckBatch(a.first_offset, a.last_offset, (3,)) for a in got])

        b.call(reject)

        def written(core: object) -> bool:
            return b.core.cluster.topics[dlq_topic].partitions[0].log.log_end_offset >= len(values)

        b.wait_until(written, timeout=30)

    def crash_restart(self) -> None:
        """kill -9 the cluster and start it again on its data dir and ports (``Broker.restart``)."""
        if self.broker.config.data_dir is None:
            raise KwireError("the cluster has no data dir to come back from")
        self.broker.restart(crash=True)

    def wait_share_start_offset(self, group: str, topic: str, partition: int, want: int, timeout_s: float) -> bool:
        from kwire.broker.core.share_coordinator import share_coordinator

        def reached(core: object) -> bool:
            sp = share_coordinator(self.broker.core).partitions.get(group, topic, partition)
            return sp is not None and sp.start_offset == want

        try:
            self.broker.wait_until(reached, timeout=timeout_s)
        except TimeoutError:
            return False
        return True

    def describe_share_group(self, group: str) -> dict[str, Any] | None:
        return self.broker.describe_share_group(group)

    # --- RENEW scenarios (kwire.conformance.scenarios.renew) ------------------------------------
    def share_states(self, group: str, topic: str, partition: int) -> dict[int, tuple[str, int]]:
        """offset -> (state, delivery count) of each in-flight record at or above the start offset."""
        st = self.broker.share_state(group, topic, partition)
        if st is None:
            return {}
        return {o["offset"]: (o["state"], o["delivery_count"]) for o in st["offsets"]
                if o["offset"] >= st["start_offset"]}

    def cap_api_version(self, api: str, max_version: int | None) -> None:
        """Advertise at most ``max_version`` of ``api`` (an older broker); None lifts the cap."""
        self.broker.cap_api_version(api, max_version)

    def set_broker_config(self, key: str, value: str | None) -> None:
        """Set (None: reset) a dynamic broker config such as the ``share.version`` feature level."""
        self.broker.set_config("broker", "", key, value)

    def recorded_frames(self) -> list[Any]:
        """The requests recorded so far (``kwire.conformance.rules.Frame``); recording starts on
        the first call if the harness has not started it."""
        from kwire.conformance.rules import frames_from_exchanges

        self.broker.start_recording()
        return frames_from_exchanges(self.broker.recorded())

    def wait_for_records(self, topic: str, count: int, timeout_s: float) -> bool:
        def enough(core: object) -> bool:
            t = self.broker.core.cluster.topics.get(topic)
            return t is not None and sum(p.log.log_end_offset for p in t.partitions) >= count

        try:
            self.broker.wait_until(enough, timeout=timeout_s)
        except TimeoutError:
            return False
        return True

    def broker_down(self, node_id: int) -> None:
        self.broker.broker_down(node_id)

    def broker_up(self, node_id: int) -> None:
        self.broker.broker_up(node_id)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self.broker.move_leader(topic, partition, node_id)


@contextlib.contextmanager
def kwire_cluster(
    brokers: int = CONFORMANCE_BROKERS, settings: Mapping[str, str] | None = None, data_dir: str | None = None
) -> Iterator[tuple[Broker, KwireControl]]:
    """Start an in-process kwire cluster for conformance runs; stop it on exit. It keeps its data
    in ``data_dir`` (a temporary directory, removed on exit, when None), so a scenario can crash
    and restart it (``KwireControl.crash_restart``)."""
    chosen = dict(CONFORMANCE_SETTINGS if settings is None else settings)
    if "listeners" not in chosen:
        chosen.update(SECURITY_SETTINGS)
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="kwire-conform-"))
        config = BrokerConfig(
            brokers=brokers,
            settings=chosen,
            sasl=SaslConfig(users=dict([SASL_USER, ACL_USER])),
            log_connections=False,
            data_dir=data_dir,
        )
        # Real time, so clients' own timeouts behave, that share scenarios may jump forward.
        with Broker(config, clock=JumpClock()) as broker:
            yield broker, KwireControl(broker, replication_factor=brokers)

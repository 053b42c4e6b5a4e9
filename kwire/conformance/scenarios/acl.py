"""The authorizer per client (``acl_principal``): a principal without ACLs is refused, then granted.

Kafka decides every request KafkaApis authorizes with StandardAuthorizer
(``metadata/src/main/java/org/apache/kafka/metadata/authorizer/StandardAuthorizer.java`` at
d79bd502; the ZooKeeper-era ``kafka.security.authorizer.AclAuthorizer`` is gone there). The target
runs it with ``super.users`` for the principals every other scenario uses and offers a SASL user
without any ACL (``AclControl.acl_user``); the client logs in as that user over SASL_PLAINTEXT with
PLAIN (every client has it; SASL_SSL's PLAIN sessions are the reauth scenario's short ones).

1. It produces to a fresh topic. Nothing on the topic has an ACL and ``allow.everyone.if.no.acl.found``
   is unset, so nothing is allowed (ACL-2): Metadata answers the topic with TOPIC_AUTHORIZATION_FAILED
   and no partitions (``KafkaApis.handleTopicMetadataRequest``, ACL-3), Produce would answer it per
   partition (``handleProduceRequest``, ACL-4), and an idempotent producer's InitProducerId answers
   CLUSTER_AUTHORIZATION_FAILED, having neither IDEMPOTENT_WRITE on the cluster nor WRITE on any
   topic (``handleInitProducerIdRequest``, ACL-10). The client must fail the produce with its
   authorization error; ``denied_error`` records what it reported and ``denied_as`` whether it named
   the topic or the cluster (which of the two a client meets first is its own order of requests).
2. The harness grants WRITE and READ on the topic and READ on the group through the control API (as
   kafka-acls would through CreateAcls), and the same client settings produce and then consume in
   the group: WRITE allows Produce and, through authorizeByResourceType, idempotence (ACL-10); READ
   implies DESCRIBE for Metadata, ListOffsets and OffsetFetch and allows Fetch and OffsetCommit
   (ACL-2, ACL-4); READ on the group allows FindCoordinator, JoinGroup, SyncGroup, Heartbeat and
   OffsetCommit (``KafkaApis`` group handlers, ACL-6).
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from kwire.conformance.clients.base import ClientAdapter, Record, Security
from kwire.conformance.scenarios.base import BrokerControl, ScenarioResult, unique_name
from kwire.errors import ConformanceError

__all__ = ["ACL_SCENARIOS", "AclControl", "denied_as"]

RECORDS = 4
# Seconds the refused produce may take: a client that keeps retrying an authorization error (rather
# than reporting it) fails the scenario after this.
DENIED_TIMEOUT_S = 20.0
PROTOCOL, MECHANISM = "SASL_PLAINTEXT", "PLAIN"

_TOPIC = re.compile(r"topic.{0,3}authori[sz]ation|not authorized to access topics|TopicAuthorization", re.I)
_CLUSTER = re.compile(r"cluster.{0,3}authori[sz]ation|ClusterAuthorization|idempotent (write|send)", re.I)
_ANY = re.compile(r"authori[sz]", re.I)


@runtime_checkable
class AclControl(Protocol):
    """A target with an authorizer whose ACLs the harness can change (kwire's conformance cluster)."""

    @property
    def authorizer(self) -> str | None:
        """The authorizer's class name (None: no authorizer is configured)."""

    @property
    def acl_user(self) -> tuple[str, str]:
        """A SASL (PLAIN) user and password without ACLs and not a super user."""

    def security_endpoint(self, protocol: str) -> str | None:
        """The bootstrap list of the listener speaking ``protocol`` (None: there is none)."""

    @property
    def ca_file(self) -> str | None:
        """The CA that signed the brokers' certificates (not needed on SASL_PLAINTEXT)."""

    def add_acl(self, principal: str, operation: str, resource_type: str, name: str) -> None:
        """Add a LITERAL ALLOW ACL for any host, e.g. ``("User:alice", "READ", "TOPIC", "orders")``."""

    def create_topic(self, topic: str, partitions: int) -> None:
        """Create a topic (the harness is a super user)."""


def denied_as(message: str) -> str | None:
    """What a client's error says was refused: ``topic``, ``cluster``, ``authorization`` (neither
    named) or None when it is no authorization error at all."""
    if _TOPIC.search(message):
        return "topic"
    if _CLUSTER.search(message):
        return "cluster"
    return "authorization" if _ANY.search(message) else None


def acl_principal(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A principal without ACLs cannot produce (ACL-2, ACL-3, ACL-4, ACL-10); granted WRITE and READ on
    the topic and READ on the group, it produces and consumes in the group (ACL-4, ACL-6, ACL-10)."""
    scenario = "acl_principal"
    if not isinstance(control, AclControl) or control.authorizer is None:
        return ScenarioResult.skipped(adapter.name, scenario, f"{control.name} has no authorizer")
    servers = control.security_endpoint(PROTOCOL)
    if servers is None:
        return ScenarioResult.skipped(adapter.name, scenario, f"{control.name} has no {PROTOCOL} listener")
    user, password = control.acl_user
    conf = adapter.security_config(Security(PROTOCOL, control.ca_file or "", MECHANISM, user, password))
    if isinstance(conf, str):
        return ScenarioResult.skipped(adapter.name, scenario, conf)
    principal = f"User:{user}"
    topic = unique_name(f"kw-acl-{adapter.name}")
    group = unique_name(f"kw-acl-{adapter.name}-g")
    control.create_topic(topic, 1)
    records = [Record(f"k{i}".encode(), f"acl-{i}".encode(), partition=0) for i in range(RECORDS)]

    try:
        adapter.produce(servers, topic, records[:1], config=conf, timeout_s=DENIED_TIMEOUT_S)
    except ConformanceError as exc:
        refused = str(exc)
    else:
        return ScenarioResult.failed(adapter.name, scenario, f"{principal} produced to {topic} without any ACL")
    kind = denied_as(refused)
    # Not an authorization error: the grants still run, so the failure says whether the client
    # works once it has its rights.
    wrong = None if kind is not None else (f"the produce without ACLs failed, but not with an authorization "
                                           f"error: {refused[:400]}")

    grants = [("WRITE", "TOPIC", topic), ("READ", "TOPIC", topic), ("READ", "GROUP", group)]
    for operation, resource_type, name in grants:
        control.add_acl(principal, operation, resource_type, name)
    granted: str | None  # what went wrong once granted (None: nothing)
    try:
        adapter.produce(servers, topic, records, config=conf)
        consumed = adapter.consume(servers, topic, group_id=group, count=RECORDS, timeout_s=30, config=conf)
    except ConformanceError as exc:
        granted = f"with WRITE, READ on the topic and READ on the group: {exc}"
    else:
        want = [r.content() for r in records]
        have = [r.content() for r in sorted(consumed, key=lambda r: r.offset or 0)]
        granted = None if have == want else (f"with the ACLs granted, read back {len(have)} of {len(want)} records "
                                             f"in group {group}, or other ones")
    if wrong is not None:
        after = granted or "once granted the ACLs it produced and consumed in the group"
        return ScenarioResult.failed(adapter.name, scenario, f"{wrong}; {after}")
    if granted is not None:
        return ScenarioResult.failed(adapter.name, scenario, granted)
    return ScenarioResult.passed(adapter.name, scenario, principal=principal, protocol=PROTOCOL, mechanism=MECHANISM,
                                 denied_as=kind, denied_error=refused[:300],
                                 granted=[f"{op} {rt}" for op, rt, _ in grants], records=RECORDS)


ACL_SCENARIOS = {"acl_principal": acl_principal}

"""The cluster's metadata: broker nodes, topics, partitions, leaders, the controller.

Everything runs in one process, so "the cluster" is one object; each listener is one broker
node. Leadership is per partition; a node taken down hands its partitions to the next live
node with a bumped leader epoch, as a controller would.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from kwire.broker.core.log import PartitionLog
from kwire.broker.core.producer_state import ProducerStateManager
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

__all__ = ["Rng", "SeededRng", "BrokerNode", "Partition", "Topic", "Cluster", "validate_topic_name",
           "MAX_TOPIC_NAME_LENGTH"]

MAX_TOPIC_NAME_LENGTH = 249  # Topic.MAX_NAME_LENGTH
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")  # matched whole (fullmatch): "$" would let a trailing "\n" through


class Rng(Protocol):
    """The core's only source of randomness (injected, so tests seed it)."""

    def getrandbits(self, k: int, /) -> int: ...


class SeededRng:
    """SplitMix64: a small deterministic generator, so the core needs no global randomness.

    The same seed gives the same cluster id, topic ids and member ids on every run.
    """

    __slots__ = ("_state",)
    _MASK = (1 << 64) - 1

    def __init__(self, seed: int = 0) -> None:
        self._state = seed & self._MASK

    def _next64(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & self._MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self._MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self._MASK
        return z ^ (z >> 31)

    def getrandbits(self, k: int, /) -> int:
        out = 0
        bits = 0
        while bits < k:
            out = (out << 64) | self._next64()
            bits += 64
        return out >> (bits - k)


def validate_topic_name(name: str | None) -> None:
    if not name or name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {name!r} is illegal")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL.fullmatch(name):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic name {name!r} has characters other than ASCII alphanumerics, '.', '_' and '-'")


@dataclass(slots=True)
class BrokerNode:
    node_id: int
    host: str  # the first listener's advertised address (the bootstrap list names it)
    port: int
    rack: str | None = None
    up: bool = True
    # listener name -> advertised (host, port), once the listener is bound (SEC-2)
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)

    def address(self, listener: str) -> tuple[str, int]:
        """What a client that came in on ``listener`` is told this node is (Kafka answers with
        the endpoint of the listener the request arrived on)."""
        return self.endpoints.get(listener, (self.host, self.port))


@dataclass(slots=True)
class Partition:
    topic: str
    index: int
    topic_id: uuid.UUID
    leader_id: int
    leader_epoch: int
    replicas: list[int]
    log: PartitionLog

    @property
    def producers(self) -> ProducerStateManager:
        """The log's producer state (kept with the log, as Kafka's UnifiedLog keeps it)."""
        return self.log.producers

    @property
    def isr(self) -> list[int]:
        return list(self.replicas)


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    internal: bool = False


def _uuid4(rng: Rng) -> uuid.UUID:
    # Version/variant bits as uuid4 sets them; Kafka also never hands out the zero uuid.
    n = rng.getrandbits(128)
    n &= ~(0xC000 << 48)
    n |= 0x8000 << 48
    n &= ~(0xF000 << 64)
    n |= 4 << 76
    return uuid.UUID(int=n)


class Cluster:
    """Nodes and topics. Leaders are assigned round-robin over live nodes."""

    def __init__(self, nodes: list[BrokerNode], rng: Rng, cluster_id: str | None = None) -> None:
        if not nodes:
            raise ValueError("a cluster needs at least one broker")
        self.rng = rng
        self.nodes: dict[int, BrokerNode] = {n.node_id: n for n in nodes}
        self.cluster_id = cluster_id or self._cluster_id()
        self.controller_id = min(self.nodes)
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self._next_leader = 0

    def _cluster_id(self) -> str:
        import base64

        raw = self.rng.getrandbits(128).to_bytes(16, "big")
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def new_uuid(self) -> uuid.UUID:
        while True:
            u = _uuid4(self.rng)
            if u not in self.topics_by_id:
                return u

    def live_nodes(self) -> list[BrokerNode]:
        return [n for n in sorted(self.nodes.values(), key=lambda n: n.node_id) if n.up]

    # --- topics -----------------------------------------------------------------------------
    def create_topic(self, name: str, num_partitions: int, replication_factor: int = 1, *,
                     internal: bool = False, topic_id: uuid.UUID | None = None,
                     assignments: list[list[int]] | None = None) -> Topic:
        """A new topic; ``assignments`` (replica lists by partition, as CreateTopics' manual
        assignments) set the partitions' replicas and leaders instead of spreading them."""
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if assignments is not None:
            rf: int | None = None
            for i, replicas in enumerate(assignments):
                self.check_manual_assignment(replicas, rf, i)
                rf = len(replicas)
            tid = topic_id or self.new_uuid()
            topic = Topic(name, tid, [], internal)
            self.topics[name] = topic
            self.topics_by_id[tid] = topic
            self._add_assigned(topic, assignments)
            return topic
        if num_partitions < 1:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "number of partitions must be at least 1")
        live = self.live_nodes()
        if replication_factor < 1 or replication_factor > len(live):
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"replication factor {replication_factor} is not within 1..{len(live)} live brokers")
        tid = topic_id or self.new_uuid()
        topic = Topic(name, tid, [], internal)
        self.topics[name] = topic
        self.topics_by_id[tid] = topic
        self._add_partitions(topic, num_partitions, replication_factor)
        return topic

    def _add_partitions(self, topic: Topic, count: int, replication_factor: int) -> None:
        live = self.live_nodes()
        for _ in range(count):
            idx = len(topic.partitions)
            start = self._next_leader % len(live)
            self._next_leader += 1
            replicas = [live[(start + k) % len(live)].node_id for k in range(replication_factor)]
            log = PartitionLog(topic.name, idx)
            log.assign_epoch(0, 0)  # the first leader's epoch starts the log (Partition.makeLeader)
            topic.partitions.append(Partition(topic.name, idx, topic.topic_id, replicas[0], 0, replicas, log))

    def _add_assigned(self, topic: Topic, assignments: list[list[int]]) -> None:
        for replicas in assignments:
            idx = len(topic.partitions)
            log = PartitionLog(topic.name, idx)
            log.assign_epoch(0, 0)
            # buildPartitionRegistration: the leader is the first replica that is not fenced.
            leader = next(r for r in replicas if self.nodes[r].up)
            topic.partitions.append(Partition(topic.name, idx, topic.topic_id, leader, 0, list(replicas), log))

    def check_manual_assignment(self, replicas: list[int], replication_factor: int | None, partition: int) -> None:
        """ReplicationControlManager.validateManualPartitionAssignment, then its fenced check.

        Brokers are checked in id order, as Kafka sorts them first; raises KafkaError with
        INVALID_REPLICA_ASSIGNMENT and Kafka's message.
        """
        if not replicas:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        prev = None
        for b in sorted(replicas):
            if b not in self.nodes:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes broker {b}, but no such broker is "
                                 "registered.")
            if b == prev:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes the broker {b} more than once.")
            prev = b
        if replication_factor is not None and len(replicas) != replication_factor:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes a partition with {len(replicas)} replica(s), "
                             f"but this is not consistent with previous partitions, which have "
                             f"{replication_factor} replica(s).")
        if not any(self.nodes[r].up for r in replicas):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"All brokers specified in the manual partition assignment for partition {partition} "
                             "are fenced or in controlled shutdown.")

    def create_partitions(self, name: str, total: int, assignments: list[list[int]] | None = None) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        have = len(topic.partitions)
        if total <= have:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {name!r} has {have} partitions; the new count must be larger, not {total}")
        rf = len(topic.partitions[0].replicas) if topic.partitions else 1
        if assignments is not None:
            if len(assignments) != total - have:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Attempted to add {total - have} additional partition(s), but only "
                                 f"{len(assignments)} assignment(s) were specified.")
            for i, replicas in enumerate(assignments):
                self.check_manual_assignment(replicas, rf, have + i)
            self._add_assigned(topic, assignments)
        else:
            self._add_partitions(topic, total - have, rf)
        return topic

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        self.topics_by_id.pop(topic.topic_id, None)
        return topic

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or index < 0 or index >= len(t.partitions):
            return None
        return t.partitions[index]

    # --- leadership -------------------------------------------------------------------------
    def move_leader(self, topic: str, index: int, node_id: int) -> Partition:
        p = self.partition(topic, index)
        if p is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} does not exist")
        if node_id not in self.nodes:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {node_id}")
        if node_id not in p.replicas:
            p.replicas = [node_id, *[r for r in p.replicas if r != node_id]][: max(1, len(p.replicas))]
        p.leader_id = node_id
        p.leader_epoch += 1
        p.log.assign_epoch(p.leader_epoch, p.log.log_end_offset)
        return p

    def set_node_up(self, node_id: int, up: bool) -> list[Partition]:
        """Take a node down or bring it up; returns the partitions whose leader changed."""
        node = self.nodes[node_id]
        node.up = up
        moved = []
        if up:
            for t in self.topics.values():
                for p in t.partitions:
                    if p.leader_id == -1 and node_id in p.replicas:
                        p.leader_id = node_id
                        p.leader_epoch += 1
                        p.log.assign_epoch(p.leader_epoch, p.log.log_end_offset)
                        moved.append(p)
        else:
            live = [n.node_id for n in self.live_nodes()]
            for t in self.topics.values():
                for p in t.partitions:
                    if p.leader_id != node_id:
                        continue
                    candidates = [r for r in p.replicas if r in live] or live
                    p.leader_id = candidates[(p.index) % len(candidates)] if candidates else -1
                    if p.leader_id != -1 and p.leader_id not in p.replicas:
                        p.replicas = [p.leader_id, *p.replicas][: len(p.replicas)]
                    p.leader_epoch += 1
                    if p.leader_id != -1:
                        p.log.assign_epoch(p.leader_epoch, p.log.log_end_offset)
                    moved.append(p)
            if self.controller_id == node_id and live:
                self.controller_id = live[0]
        return moved

"""Group clients over a BrokerCore (no sockets): JoinGroup/SyncGroup/Heartbeat/LeaveGroup and
ConsumerGroupHeartbeat in message objects, with deferred answers collected from the outbox."""

from __future__ import annotations

import uuid
from typing import Any

from kwire.broker.core.broker_core import BrokerCore
from kwire.broker.core.group_table import GroupTable, group_table
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequest_TopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from kwire.protocol.messages.heartbeat import HeartbeatRequest
from kwire.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from kwire.protocol.messages.leave_group import LeaveGroupRequest
from kwire.protocol.messages.sync_group import SyncGroupRequest
from tests.broker.helpers import CoreClient

GROUP = "g"
PROTOCOLS = (("range", b"meta"),)


def coordinator_of(core: BrokerCore) -> GroupTable:
    return group_table(core)


class ClassicClient(CoreClient):
    """One classic group member on its own connection."""

    def __init__(self, core: BrokerCore, *, group: str = GROUP, instance_id: str | None = None,
                 broker_id: int | None = None) -> None:
        super().__init__(core, broker_id)
        self.group = group
        self.instance_id = instance_id
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.members: list[Any] = []

    def join(self, version: int = 5, *, member_id: str | None = None, session_ms: int = 10_000,
             rebalance_ms: int = 30_000, protocols: tuple[tuple[str, bytes], ...] = PROTOCOLS,
             protocol_type: str = "consumer") -> JoinGroupResponse | None:
        req = JoinGroupRequest(
            group_id=self.group, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms,
            member_id=self.member_id if member_id is None else member_id,
            group_instance_id=self.instance_id if version >= 5 else None, protocol_type=protocol_type,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols])
        resp = self.send(req, version)
        if resp is not None:
            self.absorb(resp)
        return resp

    def join_with_id(self, version: int = 5, **kw: Any) -> JoinGroupResponse | None:
        """JoinGroup, answering MEMBER_ID_REQUIRED with the handed-out id (what clients do)."""
        resp = self.join(version, **kw)
        if resp is not None and resp.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            resp = self.join(version, **kw)
        return resp

    def absorb(self, resp: Any) -> None:
        if isinstance(resp, JoinGroupResponse):
            if resp.member_id:
                self.member_id = resp.member_id
            if resp.error_code == ErrorCode.NONE:
                self.generation = resp.generation_id
                self.leader = resp.leader
                self.members = list(resp.members)

    def answers(self) -> list[Any]:
        out = self.deferred()
        for r in out:
            self.absorb(r)
        return out

    def answer(self) -> Any:
        got = self.answers()
        assert len(got) == 1, f"expected one deferred answer, got {got}"
        return got[0]

    def sync(self, version: int = 3, *, assignments: dict[str, bytes] | None = None,
             generation: int | None = None) -> Any:
        req = SyncGroupRequest(
            group_id=self.group, generation_id=self.generation if generation is None else generation,
            member_id=self.member_id, group_instance_id=self.instance_id if version >= 3 else None,
            protocol_type="consumer" if version >= 5 else None, protocol_name="range" if version >= 5 else None,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=k, assignment=v)
                         for k, v in (assignments or {}).items()])
        return self.send(req, version)

    def heartbeat(self, version: int = 3, *, generation: int | None = None, member_id: str | None = None) -> int:
        resp = self.send(HeartbeatRequest(
            group_id=self.group, generation_id=self.generation if generation is None else generation,
            member_id=self.member_id if member_id is None else member_id,
            group_instance_id=self.instance_id if version >= 3 else None), version)
        return int(resp.error_code)

    def leave(self, version: int = 3) -> Any:
        if version >= 3:
            req = LeaveGroupRequest(group_id=self.group, members=[
                LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=self.instance_id)])
        else:
            req = LeaveGroupRequest(group_id=self.group, member_id=self.member_id)
        return self.send(req, version)


def stable_group(core: BrokerCore, n: int, join: dict[str, Any] | None = None, **kw: Any) -> list[ClassicClient]:
    """n members joined and synced (needs group.initial.rebalance.delay.ms=0)."""
    clients = [ClassicClient(core, **kw) for _ in range(n)]
    for c in clients:
        assert c.join_with_id(**(join or {})) is None
    core.fire_due()
    for c in clients:
        assert c.answer().error_code == ErrorCode.NONE
    leader = next(c for c in clients if c.member_id == c.leader)
    for c in clients:
        if c is not leader:
            assert c.sync() is None
    resp = leader.sync(assignments={c.member_id: c.member_id.encode() for c in clients})
    assert resp.error_code == ErrorCode.NONE
    for c in clients:
        if c is not leader:
            assert c.answer().assignment == c.member_id.encode()
    return clients


class ConsumerClient(CoreClient):
    """One KIP-848 member (ConsumerGroupHeartbeat) that acknowledges assignments like a client."""

    def __init__(self, core: BrokerCore, *, group: str = GROUP, topics: list[str] | None = None,
                 regex: str | None = None, instance_id: str | None = None, member_id: str | None = None,
                 broker_id: int | None = None, rebalance_ms: int = 30_000) -> None:
        super().__init__(core, broker_id)
        self.group = group
        self.topics = topics
        self.regex = regex
        self.instance_id = instance_id
        self.member_id = member_id or str(uuid.UUID(int=core.rng.getrandbits(128)))
        self.epoch = 0
        self.rebalance_ms = rebalance_ms
        self.owned: dict[uuid.UUID, set[int]] = {}
        self.last: ConsumerGroupHeartbeatResponse | None = None

    def heartbeat(self, version: int = 1, *, epoch: int | None = None, full: bool = False,
                  owned: dict[uuid.UUID, set[int]] | None = None, send_owned: bool = True,
                  **fields: Any) -> ConsumerGroupHeartbeatResponse:
        e = self.epoch if epoch is None else epoch
        joining = e == 0 or full
        req = ConsumerGroupHeartbeatRequest(
            group_id=self.group, member_id=self.member_id, member_epoch=e, instance_id=self.instance_id,
            rebalance_timeout_ms=self.rebalance_ms if joining else -1,
            subscribed_topic_names=self.topics if joining and self.topics is not None else None,
            subscribed_topic_regex=self.regex if joining and version >= 1 else None,
            topic_partitions=[] if e == 0 else (
                [ConsumerGroupHeartbeatRequest_TopicPartitions(topic_id=t, partitions=sorted(ps))
                 for t, ps in sorted((owned if owned is not None else self.owned).items(), key=lambda kv: str(kv[0]))]
                if send_owned else None))
        for k, v in fields.items():
            setattr(req, k, v)
        resp = self.send(req, version)
        self.last = resp
        if resp.error_code == ErrorCode.NONE:
            if resp.member_id:
                self.member_id = resp.member_id
            self.epoch = resp.member_epoch
            if resp.assignment is not None:
                # A client gives up what is no longer assigned and takes what is new.
                self.owned = {tp.topic_id: set(tp.partitions) for tp in resp.assignment.topic_partitions}
        return resp

    def leave(self, epoch: int = -1) -> ConsumerGroupHeartbeatResponse:
        return self.send(ConsumerGroupHeartbeatRequest(group_id=self.group, member_id=self.member_id,
                                                       member_epoch=epoch, instance_id=self.instance_id), 1)

    def partitions(self, core: BrokerCore) -> set[tuple[str, int]]:
        by_id = core.cluster.topics_by_id
        return {(by_id[t].name, p) for t, ps in self.owned.items() for p in ps}

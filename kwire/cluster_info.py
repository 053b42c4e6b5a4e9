"""What ``kwire topics`` and ``kwire groups`` show: a cluster's topics and groups, read with
kwire's wire client (Metadata, ListOffsets, ListGroups, FindCoordinator, DescribeGroups,
ConsumerGroupDescribe, ShareGroupDescribe, OffsetFetch) from kwire or any Kafka broker.

Plain data in, plain data out: ``describe_topics`` and ``describe_groups`` return dataclasses
whose ``as_dict()`` is the ``--json`` form; the CLI modules only format them.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kwire.errors import DecodeError, WireClientError
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.client import WireClient

__all__ = ["PartitionInfo", "TopicInfo", "MemberInfo", "GroupInfo", "ShareProgress", "describe_topics", "describe_groups", "consumer_assignment"]

EARLIEST, LATEST = -2, -1
_ZERO_UUID = uuid.UUID(int=0)


@dataclass(slots=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    start_offset: int = -1
    end_offset: int = -1
    error: str | None = None

    @property
    def messages(self) -> int:
        return max(0, self.end_offset - self.start_offset) if self.start_offset >= 0 else 0


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: str | None
    internal: bool
    partitions: list[PartitionInfo] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(slots=True)
class MemberInfo:
    member_id: str
    client_id: str
    host: str
    assignment: dict[str, list[int]]  # topic -> partitions


@dataclass(slots=True)
class GroupInfo:
    group_id: str
    type: str  # classic | consumer | share | "" (unknown before ListGroups v5)
    state: str
    protocol_type: str
    coordinator: int
    members: list[MemberInfo] = field(default_factory=list)
    # topic -> partition -> (committed offset, end offset, lag)
    offsets: dict[str, dict[int, tuple[int, int, int | None]]] = field(default_factory=dict)
    error: str | None = None
    # share groups: topic -> partition -> progress (DescribeShareGroupOffsets + ListOffsets)
    share_offsets: dict[str, dict[int, ShareProgress]] = field(default_factory=dict)

    @property
    def lag(self) -> int | None:
        lags = [lag for parts in self.offsets.values() for _, _, lag in parts.values() if lag is not None]
        lags += [sp.lag for parts in self.share_offsets.values() for sp in parts.values() if sp.lag is not None]
        return sum(lags) if lags else None

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        del out["share_offsets"]
        if self.share_offsets:
            out["offsets"] = {t: {str(p): sp.as_dict() for p, sp in sorted(parts.items())}
                              for t, parts in sorted(self.share_offsets.items())}
        else:
            out["offsets"] = {t: {str(p): {"committed": c, "end": e, "lag": lag} for p, (c, e, lag) in parts.items()}
                              for t, parts in self.offsets.items()}
        out["lag"] = self.lag
        return out


@dataclass(slots=True)
class ShareProgress:
    """One share partition of a group, as any cluster reports it.

    ``start`` is the share-partition start offset (SPSO; -1: the group has no state there yet),
    ``end`` the partition's high watermark, exclusive (the next offset to be written; ``kwire groups``
    heads it ``high-watermark``), unlike ``Broker.share_state``'s ``end_offset``, the SPEO, which is
    inclusive (the last offset the share partition tracks). Between them lie the in-flight records: ``in_flight`` counts them;
    ``lag`` is how many of them are not yet acknowledged or archived (DescribeShareGroupOffsets v1,
    KIP-1226; before v1, ``end - start``), so ``in_flight - lag`` are settled past the start.
    ``consumers`` is how many members have the partition assigned (ShareGroupDescribe). How many
    records are acquired right now no Kafka API reports (kwire's ``Broker.share_state`` does).
    """

    start: int
    end: int
    lag: int | None
    consumers: int = 0
    error: str | None = None

    @property
    def in_flight(self) -> int | None:
        return max(0, self.end - self.start) if self.start >= 0 and self.end >= 0 else None

    @property
    def settled(self) -> int | None:
        if self.in_flight is None or self.lag is None:
            return None
        return max(0, self.in_flight - self.lag)

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "in_flight": self.in_flight, "settled": self.settled,
                "lag": self.lag, "consumers": self.consumers, "error": self.error}


def _error_name(code: int) -> str:
    from kwire.protocol.error_codes import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


# --- topics ------------------------------------------------------------------------------------


def describe_topics(client: WireClient, names: list[str] | None = None) -> list[TopicInfo]:
    """Topics (all, or ``names``) with partitions, leaders and earliest/latest offsets, by name."""
    from kwire.protocol.messages.metadata import MetadataRequest

    req = MetadataRequest(topics=None if not names else [MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                          allow_auto_topic_creation=False)
    meta = client.request(req)
    client.nodes = {b.node_id: (b.host, b.port) for b in meta.brokers}
    topics = []
    for t in meta.topics:
        tid = str(t.topic_id) if getattr(t, "topic_id", _ZERO_UUID) != _ZERO_UUID else None
        info = TopicInfo(t.name or "", tid, bool(t.is_internal), error=_error_name(t.error_code) if t.error_code else None)
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            info.partitions.append(PartitionInfo(p.partition_index, p.leader_id, list(p.replica_nodes),
                                                 list(p.isr_nodes), error=_error_name(p.error_code) if p.error_code
                                                 else None))
        topics.append(info)
    topics.sort(key=lambda t: t.name)
    by_leader: dict[int, list[tuple[TopicInfo, PartitionInfo]]] = defaultdict(list)
    for t in topics:
        for p in t.partitions:
            if p.leader >= 0:
                by_leader[p.leader].append((t, p))
    for leader, parts in by_leader.items():
        for ts in (EARLIEST, LATEST):
            found = _list_offsets(client, leader, [(t.name, p.partition) for t, p in parts], ts)
            for t, p in parts:
                off = found.get((t.name, p.partition))
                if off is not None:
                    if ts == EARLIEST:
                        p.start_offset = off
                    else:
                        p.end_offset = off
    return topics


def _list_offsets(client: WireClient, node: int, parts: list[tuple[str, int]], timestamp: int) -> dict[tuple[str, int], int]:
    from kwire.protocol.messages.list_offsets import ListOffsetsRequest

    by_topic: dict[str, list[int]] = defaultdict(list)
    for name, index in parts:
        by_topic[name].append(index)
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=name, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=i, timestamp=timestamp, current_leader_epoch=-1)
            for i in indexes]) for name, indexes in by_topic.items()])
    try:
        resp = client.request(req, node=node)
    except WireClientError:
        return {}
    out = {}
    for t in resp.topics:
        for p in t.partitions:
            if not p.error_code:
                out[(t.name, p.partition_index)] = p.offset
    return out


# --- groups ------------------------------------------------------------------------------------


def describe_groups(client: WireClient, names: list[str] | None = None) -> list[GroupInfo]:
    """Groups (all that ListGroups names, or ``names``) with state, members and lag, by id."""
    from kwire.protocol.messages.list_groups import ListGroupsRequest

    listed: dict[str, tuple[str, str, str]] = {}  # id -> (type, protocol type, state)
    if client.nodes == {}:
        client.metadata_nodes()
    for node in sorted(client.nodes):
        try:
            resp = client.request(ListGroupsRequest(), node=node)
        except WireClientError:
            continue
        for g in resp.groups:
            listed[g.group_id] = (g.group_type or "", g.protocol_type or "", g.group_state or "")
    wanted = sorted(listed) if not names else list(names)
    topics = {t.name: t for t in describe_topics(client)}
    names_by_id = {t.topic_id: t.name for t in topics.values() if t.topic_id}
    out = []
    for gid in wanted:
        gtype, protocol_type, state = listed.get(gid, ("", "", ""))
        info = GroupInfo(gid, gtype, state, protocol_type, -1)
        out.append(info)
        try:
            info.coordinator = _coordinator(client, gid)
            if gtype == "consumer":
                _describe_consumer_group(client, info, names_by_id)
            elif gtype == "share":
                _describe_share_group(client, info, names_by_id)
            else:
                _describe_classic_group(client, info)
            if gtype == "share":
                _share_offsets(client, info, topics)
            else:
                _committed(client, info, topics, names_by_id)
        except WireClientError as exc:
            info.error = str(exc)
    return out


def _coordinator(client: WireClient, group: str) -> int:
    from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest

    v = client.supported_version(ApiKey.FIND_COORDINATOR)
    if v is not None and v >= 4:
        resp = client.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
        c = resp.coordinators[0]
        code, node, host, port = c.error_code, c.node_id, c.host, c.port
    else:
        resp = client.request(FindCoordinatorRequest(key=group, key_type=0))
        code, node, host, port = resp.error_code, resp.node_id, resp.host, resp.port
    if code:
        raise WireClientError(f"FindCoordinator for {group!r}: {_error_name(code)}")
    client.nodes[node] = (host, port)
    return int(node)


def consumer_assignment(raw: bytes) -> dict[str, list[int]]:
    """A consumer-protocol assignment (int16 version, then the ConsumerProtocolAssignment)."""
    from kwire.protocol.data.consumer_protocol_assignment import ConsumerProtocolAssignment

    if len(raw) < 2:
        return {}
    (version,) = struct.unpack_from(">h", raw)
    try:
        a = ConsumerProtocolAssignment.decode(raw[2:], min(max(version, 0), 3))
    except DecodeError:
        return {}
    return {tp.topic: sorted(tp.partitions) for tp in a.assigned_partitions}


def _describe_classic_group(client: WireClient, info: GroupInfo) -> None:
    from kwire.protocol.messages.describe_groups import DescribeGroupsRequest

    resp = client.request(DescribeGroupsRequest(groups=[info.group_id]), node=info.coordinator)
    g = resp.groups[0]
    if g.error_code:
        info.error = _error_name(g.error_code)
        return
    info.state, info.protocol_type = g.group_state, g.protocol_type
    info.type = info.type or "classic"
    for m in g.members:
        assignment = consumer_assignment(bytes(m.member_assignment)) if g.protocol_type == "consumer" else {}
        info.members.append(MemberInfo(m.member_id, m.client_id, m.client_host, assignment))


def _topic_partitions(parts: list[Any], names_by_id: dict[str, str]) -> dict[str, list[int]]:
    return {getattr(tp, "topic_name", None) or names_by_id.get(str(tp.topic_id), str(tp.topic_id)):
            sorted(tp.partitions) for tp in parts}


def _describe_consumer_group(client: WireClient, info: GroupInfo, names_by_id: dict[str, str]) -> None:
    from kwire.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest

    resp = client.request(ConsumerGroupDescribeRequest(group_ids=[info.group_id]), node=info.coordinator)
    g = resp.groups[0]
    if g.error_code:
        info.error = _error_name(g.error_code)
        return
    info.state = g.group_state
    for m in g.members:
        info.members.append(MemberInfo(m.member_id, m.client_id, m.client_host,
                                       _topic_partitions(m.assignment.topic_partitions, names_by_id)))


def _describe_share_group(client: WireClient, info: GroupInfo, names_by_id: dict[str, str]) -> None:
    from kwire.protocol.messages.share_group_describe import ShareGroupDescribeRequest

    resp = client.request(ShareGroupDescribeRequest(group_ids=[info.group_id]), node=info.coordinator)
    g = resp.groups[0]
    if g.error_code:
        info.error = _error_name(g.error_code)
        return
    info.state = g.group_state
    for m in g.members:
        info.members.append(MemberInfo(m.member_id, m.client_id, m.client_host,
                                       _topic_partitions(m.assignment.topic_partitions, names_by_id)))


def _committed(client: WireClient, info: GroupInfo, topics: dict[str, TopicInfo],
               names_by_id: dict[str, str]) -> None:
    from kwire.protocol.messages.offset_fetch import OffsetFetchRequest

    v = client.supported_version(ApiKey.OFFSET_FETCH, info.coordinator)
    if v is not None and v >= 8:
        req = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=info.group_id,
                                                                                    topics=None)])
        resp = client.request(req, node=info.coordinator)
        group = resp.groups[0]
        if group.error_code:
            info.error = _error_name(group.error_code)
            return
        rows = [(t.name or names_by_id.get(str(t.topic_id), str(t.topic_id)), p.partition_index,
                 p.committed_offset) for t in group.topics for p in t.partitions]
    else:
        resp = client.request(OffsetFetchRequest(group_id=info.group_id, topics=None), node=info.coordinator)
        if resp.error_code:
            info.error = _error_name(resp.error_code)
            return
        rows = [(t.name, p.partition_index, p.committed_offset) for t in resp.topics for p in t.partitions]
    for topic, partition, committed in sorted(rows):
        t = topics.get(topic)
        end = next((p.end_offset for p in t.partitions if p.partition == partition), -1) if t is not None else -1
        lag = max(0, end - committed) if committed >= 0 and end >= 0 else None
        info.offsets.setdefault(topic, {})[partition] = (committed, end, lag)


def _share_offsets(client: WireClient, info: GroupInfo, topics: dict[str, TopicInfo]) -> None:
    """Per share partition: start offset and lag (DescribeShareGroupOffsets), end offset (ListOffsets)."""
    from kwire.protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsRequest as Req

    if client.supported_version(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, info.coordinator) is None:
        info.error = "the cluster does not serve DescribeShareGroupOffsets"
        return
    version = client.supported_version(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, info.coordinator)
    resp = client.request(Req(groups=[Req.DescribeShareGroupOffsetsRequestGroup(group_id=info.group_id, topics=None)]),
                          node=info.coordinator)
    g = resp.groups[0]
    if g.error_code:
        info.error = _error_name(g.error_code) + (f": {g.error_message}" if g.error_message else "")
        return
    assigned: dict[tuple[str, int], int] = defaultdict(int)
    for m in info.members:
        for t, parts in m.assignment.items():
            for p in parts:
                assigned[(t, p)] += 1
    for t in g.topics:
        known = topics.get(t.topic_name)
        for p in t.partitions:
            end = next((x.end_offset for x in known.partitions if x.partition == p.partition_index), -1) if known else -1
            if p.error_code:
                sp = ShareProgress(-1, end, None, error=_error_name(p.error_code))
            elif p.start_offset < 0:
                sp = ShareProgress(-1, end, None)
            else:
                broker_lag = p.lag if version is not None and version >= 1 and p.lag >= 0 else None
                lag = broker_lag if broker_lag is not None else (max(0, end - p.start_offset) if end >= 0 else None)
                sp = ShareProgress(p.start_offset, end, lag)
            sp.consumers = assigned[(t.topic_name, p.partition_index)]
            info.share_offsets.setdefault(t.topic_name, {})[p.partition_index] = sp

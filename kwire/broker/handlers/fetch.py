"""Fetch — key 1, v4–18 (KIP-74 byte limits, KIP-227 sessions, KIP-320 epochs, KIP-516 topic ids).

Behaviour: consumers only (replica id -1). Per partition: unknown topic/partition →
UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id, v13+); not the leader →
NOT_LEADER_OR_FOLLOWER with the current leader (v12+ tagged, node endpoints v16+); leader
epoch checks (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); offset outside
[log start, log end] → OFFSET_OUT_OF_RANGE. Data: whole batches up to the partition's max
bytes and the response's max bytes, but always the first batch (KIP-74). read_committed
reads up to the LSO and lists aborted transactions. When less than MinBytes is ready and
MaxWaitMs > 0 the request waits, woken by any append to a partition it reads.
Deviations: no preferred read replica (-1), no diverging-epoch detection (one replica).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kwire.broker.core.fetch_sessions import SessionContext, SessionTarget
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._common import leader_epoch_error, node_endpoints
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.fetch import FetchRequest, FetchResponse, FetchResponse_PartitionData
from kwire.protocol.primitives import ZERO_UUID
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.FETCH
VERSIONS = (4, 18)

PD = FetchResponse_PartitionData
READ_COMMITTED = 1


def _topic_key(ctx: RequestContext, name: str | None, topic_id: Any, by_id: bool) -> str:
    """Session key of a topic: its name (ids resolved), or "id:<uuid>" for an unknown id."""
    if not by_id:
        return name or ""
    t = ctx.core.cluster.topics_by_id.get(topic_id)
    return t.name if t is not None else f"id:{topic_id}"


def _targets(ctx: RequestContext, req: FetchRequest) -> tuple[list[tuple[tuple[str, int], SessionTarget]],
                                                              list[tuple[str, int]]]:
    by_id = ctx.api_version >= 13
    updates = []
    for ft in req.topics:
        name = _topic_key(ctx, ft.topic, ft.topic_id, by_id)
        for fp in ft.partitions:
            updates.append(((name, fp.partition), SessionTarget(
                fetch_offset=fp.fetch_offset, partition_max_bytes=fp.partition_max_bytes,
                current_leader_epoch=fp.current_leader_epoch, log_start_offset=fp.log_start_offset,
                topic_id=ft.topic_id)))
    forgotten: list[tuple[str, int]] = []
    for fg in req.forgotten_topics_data:
        name = _topic_key(ctx, fg.topic, fg.topic_id, by_id)
        forgotten.extend((name, i) for i in fg.partitions)
    return updates, forgotten


def _read(ctx: RequestContext, key: tuple[str, int], t: SessionTarget, budget: int, committed: bool,
          first: bool) -> tuple[PD, int, bool]:
    """One partition's answer; returns (data, bytes used, has error)."""
    core = ctx.core
    name, index = key
    pd = PD(partition_index=index, high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
            preferred_read_replica=-1, records=b"")
    topic = core.cluster.topics.get(name)
    if topic_denied(ctx, AclOperation.READ, name if topic is not None or not name.startswith("id:") else None):
        pd.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return pd, 0, True
    if topic is None:
        pd.error_code = ErrorCode.UNKNOWN_TOPIC_ID if name.startswith("id:") else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return pd, 0, True
    if index < 0 or index >= len(topic.partitions):
        pd.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return pd, 0, True
    p = topic.partitions[index]
    injected = core.faults.partition_error(API_KEY, ctx.broker_id, name, index) if core.faults.rules else None
    code = injected if injected is not None else leader_epoch_error(ctx, p, t.current_leader_epoch)
    if code:
        pd.error_code = code
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and p.leader_id >= 0 and ctx.api_version >= 12:
            pd.current_leader = FetchResponse.LeaderIdAndEpoch(leader_id=p.leader_id, leader_epoch=p.leader_epoch)
        return pd, 0, True
    log = p.log
    pd.high_watermark = log.high_watermark
    pd.last_stable_offset = log.last_stable_offset
    pd.log_start_offset = log.log_start_offset
    if t.fetch_offset < log.log_start_offset or t.fetch_offset > log.log_end_offset:
        pd.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
        return pd, 0, True
    upto = log.last_stable_offset if committed else log.high_watermark
    limit = min(t.partition_max_bytes, budget)
    data = log.read(t.fetch_offset, limit, upto=upto, min_one=first)
    pd.records = data
    if committed:
        pd.aborted_transactions = [FetchResponse.AbortedTransaction(producer_id=a.producer_id,
                                                                    first_offset=a.first_offset)
                                   for a in log.aborted_in_range(t.fetch_offset, upto)]
    else:
        pd.aborted_transactions = None
    return pd, len(data), False


def _changed(pd: PD, t: SessionTarget) -> bool:
    return bool(pd.error_code or pd.records or pd.high_watermark != t.sent_hw
                or pd.last_stable_offset != t.sent_lso or pd.log_start_offset != t.sent_log_start)


class FetchPoll:
    """One fetch's answer: ``ready`` when MinBytes are there (or a partition has an error);
    ``complete`` builds the response and moves the fetch session on (KIP-227), once."""

    __slots__ = ("ctx", "req", "sctx", "sessions", "committed", "by_id")

    def __init__(self, ctx: RequestContext, req: FetchRequest, sctx: SessionContext, sessions: Any) -> None:
        self.ctx = ctx
        self.req = req
        self.sctx = sctx
        self.sessions = sessions
        self.committed = req.isolation_level == READ_COMMITTED
        self.by_id = ctx.api_version >= 13

    def ready(self) -> bool:
        budget = self.req.max_bytes
        total = 0
        for key, t in self.sctx.targets.items():
            _, n, err = _read(self.ctx, key, t, max(0, budget - total), self.committed, first=(total == 0))
            total += n
            if err or total >= self.req.min_bytes:
                return True
        return total >= self.req.min_bytes

    def complete(self, final: bool) -> FetchResponse:
        ctx, sctx = self.ctx, self.sctx
        budget = self.req.max_bytes
        total = 0
        topics: dict[str, Any] = {}
        leaders: set[int] = set()
        for key, t in sctx.targets.items():
            pd, n, _ = _read(ctx, key, t, max(0, budget - total), self.committed, first=(total == 0))
            total += n
            if not sctx.full and not _changed(pd, t):
                continue
            t.sent_hw, t.sent_lso, t.sent_log_start = pd.high_watermark, pd.last_stable_offset, pd.log_start_offset
            if pd.current_leader.leader_id >= 0 and pd.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                leaders.add(pd.current_leader.leader_id)
            tr = topics.get(key[0])
            if tr is None:
                tr = FetchResponse.FetchableTopicResponse(topic="" if self.by_id else key[0],
                                                          topic_id=t.topic_id if self.by_id else ZERO_UUID)
                topics[key[0]] = tr
            tr.partitions.append(pd)
        self.sessions.finish(sctx)
        resp = FetchResponse(session_id=sctx.response_session_id, responses=list(topics.values()))
        if leaders and ctx.api_version >= 16:
            resp.node_endpoints = node_endpoints(ctx, leaders, FetchResponse.NodeEndpoint)
        return resp


def handle(ctx: RequestContext, req: FetchRequest) -> FetchResponse | None:
    core = ctx.core
    quotas = core.subsystems.quotas
    if quotas is not None and quotas.entities:  # without quota entities there is nothing to cap
        quotas.cap_fetch(ctx, req)  # QUO-3: one answer fits the consumer quota's window
    sessions = core.subsystems.fetch_sessions
    updates, forgotten = _targets(ctx, req)
    try:
        sctx = sessions.begin(req.session_id, req.session_epoch, ctx.conn.conn_id, updates, forgotten,
                              broker_id=ctx.broker_id)
    except KafkaError as exc:
        return FetchResponse(error_code=exc.code, session_id=0)
    poll = FetchPoll(ctx, req, sctx, sessions)
    if req.max_wait_ms <= 0 or poll.ready():
        return poll.complete(True)
    # Woken by an append to any partition it reads (the wake key is the session key).
    core.park(ctx.defer(), sctx.targets, req.max_wait_ms, poll)
    return None


def error_response(ctx: RequestContext, req: FetchRequest, code: int) -> FetchResponse:
    return FetchResponse(error_code=code, session_id=0)

"""ShareFetch — key 78, v1–2 (KIP-932; v2 ShareAcquireMode and IsRenewAck, KIP-1222).

Behaviour, in upstream's order: SG-3's pre-checks (share.version off → UNSUPPORTED_VERSION;
GroupId null or MemberId null/empty/over 36 characters → INVALID_REQUEST), each answered at
the top level with no partitions; RN-2 (IsRenewAck with MaxWaitMs, MinBytes, MaxBytes or
MaxRecords not 0 → INVALID_REQUEST naming them); the share session of this broker (SS-1..SS-4:
SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, INVALID_REQUEST for acknowledgements on
an opening request, SHARE_SESSION_LIMIT_REACHED after MaxWaitMs). The member need not be in the
group (SG-5, SS-9). Then the piggy-backed acknowledgements (result in AcknowledgeErrorCode,
AK-14), and — unless the request is final (epoch -1, SS-4) or a renewal (RN-3) — acquisition
over the session's partitions in a rotating order (AQ-8), capped by MaxRecords (soft in
batch-optimized mode, exact in record-limit mode, AQ-3), BatchSize (AQ-4), min(MaxBytes,
fetch.max.bytes) split evenly over the partitions fetched (whole log batches, always one) and
the lock limit (AQ-2); MaxBytes or MaxRecords 0 fetches nothing and answers at once (SS-11).
Each partition carries the raw log batches holding its AcquiredRecords (AQ-5). With nothing to acquire the request waits up to
MaxWaitMs, acknowledgements or not (SS-10), woken by appends and by records that become
acquirable again (AQ-7). Per partition: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER with the current leader (SG-4). AcquisitionLockTimeoutMs is the group's
lock duration (SS-7). The opening response lists every requested partition; later ones list
partitions with records, errors or acknowledgements (SS-6).
Version notes: v1 has no ShareAcquireMode (batch-optimized) and no RENEW (AK-5). A v2
ShareAcquireMode other than 0 or 1 is UNKNOWN_SERVER_ERROR at the top level when the request would
fetch (upstream's ShareFetch constructor throws), checked before the session or an
acknowledgement changes.
Deviations: MinBytes counts as met once any record is acquirable. Partitions of an unknown topic
or beyond a topic's partition count are answered with their error but not kept in the session
(upstream keeps them and repeats the error in every answer), so a session cannot be grown without
bound by made-up partition indexes. A negative MaxBytes or MaxRecords fetches nothing, as 0 does
(upstream answers acquirable partitions UNKNOWN_SERVER_ERROR for a negative MaxBytes).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.share_coordinator import share_wake_key
from kwire.broker.core.share_partition import ShareAcquireMode
from kwire.broker.core.share_session import ContextKind, ShareSessionContext
from kwire.broker.handlers._common import node_endpoints
from kwire.broker.handlers._share import (
    Target,
    ack_batches,
    acknowledge_partition,
    coordinator,
    dropped,
    precheck,
    resolve,
)
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.share_fetch import (
    ShareFetchRequest,
    ShareFetchResponse,
    ShareFetchResponse_AcquiredRecords,
    ShareFetchResponse_LeaderIdAndEpoch,
    ShareFetchResponse_NodeEndpoint,
    ShareFetchResponse_PartitionData,
    ShareFetchResponse_ShareFetchableTopicResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext
    from kwire.broker.core.share_coordinator import ShareCoordinator

API_KEY = ApiKey.SHARE_FETCH
VERSIONS = (1, 2)

PD = ShareFetchResponse_PartitionData
Key = tuple[uuid.UUID, int]  # a session's partition: (topic id, partition)


# The partition errors that mean "no such partition": answered, never kept in a session, never fetched.
_MISSING = (ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def _top(code: int, message: str | None = None) -> ShareFetchResponse:
    return ShareFetchResponse(error_code=code, error_message=message, acquisition_lock_timeout_ms=0)


def _renew_errors(req: ShareFetchRequest) -> list[str]:
    """RN-2: the fields a renew-only ShareFetch must leave at 0."""
    return [name for name, value in (("MaxWaitMs", req.max_wait_ms), ("MinBytes", req.min_bytes),
                                      ("MaxBytes", req.max_bytes), ("MaxRecords", req.max_records)) if value != 0]


class ShareFetchPoll:
    """One ShareFetch's fetch part: ``ready`` when a partition has something to acquire (or an
    error); ``complete`` acquires and builds the response, once."""

    __slots__ = ("ctx", "req", "share", "sctx", "keys", "acks", "errors", "new")

    def __init__(self, ctx: RequestContext, req: ShareFetchRequest, share: ShareCoordinator,
                 sctx: ShareSessionContext[Key] | None, keys: list[Key], acks: dict[Key, tuple[int, str | None]],
                 errors: dict[Key, Target]) -> None:
        self.ctx = ctx
        self.req = req
        self.share = share
        self.sctx = sctx
        self.keys = keys  # partitions to fetch, in the rotated order (AQ-8)
        self.acks = acks  # acknowledgement results by partition
        self.errors = errors  # partitions answered with an error, not fetched
        self.new = sctx is not None and sctx.kind is ContextKind.NEW

    def ready(self) -> bool:
        if self.errors:
            return True
        share, gid = self.share, self.req.group_id or ""
        for key in self.keys:
            t = resolve(self.ctx, *key)
            if t.error or t.name is None:
                return True
            if share.partitions.for_fetch(gid, t.name, t.partition).has_acquirable():
                return True
        return False

    def wake_keys(self) -> list[Any]:
        out: list[Any] = []
        for key in self.keys:
            name = resolve(self.ctx, *key).name
            if name is not None:
                out.append((name, key[1]))
                out.append(share_wake_key(self.req.group_id or "", name, key[1]))
        return out

    def complete(self, final: bool) -> ShareFetchResponse:
        ctx, req, share = self.ctx, self.req, self.share
        gid = req.group_id
        assert gid is not None and req.member_id is not None
        v = ctx.api_version
        # An unknown mode reaches here only with nothing to fetch (the session check answers it).
        mode = ShareAcquireMode(req.share_acquire_mode) if v >= 2 and req.share_acquire_mode in (0, 1) \
            else ShareAcquireMode.BATCH_OPTIMIZED
        records_left = req.max_records  # > 0 here: 0 never reaches a poll (SS-11)
        bytes_left = _fetch_max_bytes(ctx, req)
        parts: dict[Key, PD] = {}
        leaders: set[int] = set()
        for key, t in self.errors.items():
            parts[key] = self._error_pd(t, leaders)
        fetchable: list[tuple[Key, Target]] = []
        for key in self.keys:
            t = resolve(ctx, *key)
            if not t.error:
                assert t.name is not None
                injected = ctx.core.faults.partition_error(API_KEY, ctx.broker_id, t.name, t.partition) \
                    if ctx.core.faults.rules else None
                if injected is not None:
                    t.error = injected
            if t.error:
                parts[key] = self._error_pd(t, leaders)
            else:
                fetchable.append((key, t))
        caps = _partition_max_bytes(bytes_left, len(fetchable))
        for (key, t), cap in zip(fetchable, caps, strict=True):
            assert t.name is not None
            pd = PD(partition_index=t.partition, records=b"", current_leader=_leader(t))
            if records_left > 0 and min(cap, bytes_left) > 0:
                sp = share.partitions.for_fetch(gid, t.name, t.partition)
                got = sp.acquire(req.member_id, records_left, batch_size=req.batch_size or None, mode=mode,
                                 max_bytes=min(cap, bytes_left))
                if got:
                    first, last = got[0].first_offset, got[-1].last_offset
                    log = ctx.core.cluster.topics[t.name].partitions[t.partition].log
                    data = log.read(first, 2**31 - 1, upto=last + 1)  # whole batches holding them (AQ-5)
                    pd.records = data
                    pd.acquired_records = [ShareFetchResponse_AcquiredRecords(
                        first_offset=a.first_offset, last_offset=a.last_offset, delivery_count=a.delivery_count)
                        for a in got]
                    records_left -= sum(a.last_offset - a.first_offset + 1 for a in got)
                    bytes_left -= len(data)
            if dropped(ctx, API_KEY, t):
                continue  # fault injection: acquired, but the answer never says so
            if self.new or pd.acquired_records:
                parts[key] = pd
        for key, (code, message) in self.acks.items():
            if key not in parts:  # SS-6: ack-only partitions
                parts[key] = PD(partition_index=key[1], records=b"", current_leader=_leader(resolve(ctx, *key)))
            parts[key].acknowledge_error_code, parts[key].acknowledge_error_message = code, message
        return _response(ctx, parts, leaders, share.config(gid).record_lock_duration_ms)

    def _error_pd(self, t: Target, leaders: set[int]) -> PD:
        pd = PD(partition_index=t.partition, error_code=t.error, records=b"", current_leader=_leader(t))
        if t.error == ErrorCode.NOT_LEADER_OR_FOLLOWER and t.leader_id >= 0:
            leaders.add(t.leader_id)
        return pd


def _partition_max_bytes(total: int, n: int) -> list[int]:
    """SS-11: PartitionMaxBytesStrategy UNIFORM over the ``n`` partitions being fetched: an even
    share each, the remainder to one (upstream picks it at random, kwire the first); fewer bytes
    than partitions, one byte to each of the first ``total``."""
    if n == 0:
        return []
    if total < n:
        return [1 if i < total else 0 for i in range(n)]
    share, rest = divmod(total, n)
    return [share + rest] + [share] * (n - 1)


def _fetch_max_bytes(ctx: RequestContext, req: ShareFetchRequest) -> int:
    """SS-11: KafkaApis' fetchMaxBytes, min(MaxBytes, fetch.max.bytes) (no quotas here)."""
    return min(req.max_bytes, ctx.core.configs.get_int(ResourceType.BROKER, "", "fetch.max.bytes"))


def _acquire_mode_check(ctx: RequestContext, mode: int) -> Callable[[set[Key]], None]:
    """Hostile input: upstream builds its ShareFetch (``ShareAcquireMode.forId`` throws on an
    unknown id, so the answer is UNKNOWN_SERVER_ERROR) only when the session holds a partition it
    would fetch; kwire answers the same but before the session or an acknowledgement changes."""

    def check(partitions: set[Key]) -> None:
        for key in partitions:
            if resolve(ctx, *key).error not in _MISSING:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown share acquire mode id: {mode}")

    return check


def _leader(t: Target) -> ShareFetchResponse_LeaderIdAndEpoch:
    """The partition's current leader and epoch (-1, -1 for an unknown partition)."""
    return ShareFetchResponse_LeaderIdAndEpoch(leader_id=t.leader_id, leader_epoch=t.leader_epoch)


def _response(ctx: RequestContext, parts: dict[Key, PD], leaders: set[int], lock_ms: int) -> ShareFetchResponse:
    topics: dict[uuid.UUID, ShareFetchResponse_ShareFetchableTopicResponse] = {}
    for (tid, _), pd in parts.items():
        tr = topics.get(tid)
        if tr is None:
            tr = topics[tid] = ShareFetchResponse_ShareFetchableTopicResponse(topic_id=tid)
        tr.partitions.append(pd)
    resp = ShareFetchResponse(acquisition_lock_timeout_ms=lock_ms, responses=list(topics.values()))  # SS-7
    if leaders:
        resp.node_endpoints = node_endpoints(ctx, leaders, ShareFetchResponse_NodeEndpoint)
    return resp


def handle(ctx: RequestContext, req: ShareFetchRequest) -> ShareFetchResponse | None:
    code, message = precheck(ctx, req.group_id, req.member_id)
    if code:
        return _top(code, message)
    assert req.group_id is not None and req.member_id is not None
    v = ctx.api_version
    renew = v >= 2 and req.is_renew_ack
    if renew:
        bad = _renew_errors(req)
        if bad:  # RN-2
            return _top(ErrorCode.INVALID_REQUEST, f"{', '.join(bad)} must be 0 in a renew-only ShareFetch.")
    share = coordinator(ctx)
    requested: list[Key] = []
    acks: dict[Key, list[Any]] = {}
    for ft in req.topics:
        for fp in ft.partitions:
            key = (ft.topic_id, fp.partition_index)
            requested.append(key)
            if fp.acknowledgement_batches:
                acks.setdefault(key, []).extend(fp.acknowledgement_batches)
    forgotten = [(fg.topic_id, p) for fg in req.forgotten_topics_data for p in fg.partitions]
    # Partitions of unknown topics, or beyond a topic's partitions, are answered with their error
    # and not kept in the session: made-up partition indexes cannot grow it without bound.
    targets = {key: resolve(ctx, *key) for key in dict.fromkeys(requested)}
    errors = {k: t for k, t in targets.items() if t.error in _MISSING}
    bad_mode = v >= 2 and req.share_acquire_mode not in (0, 1) and not renew
    try:
        sctx = share.sessions.fetch_context(
            req.group_id, req.member_id, req.share_session_epoch, ctx.conn.conn_id, broker_id=ctx.broker_id,
            partitions=[k for k in targets if k not in errors], forgotten=forgotten,
            has_acknowledgements=bool(acks),
            check=_acquire_mode_check(ctx, req.share_acquire_mode) if bad_mode else None)
    except KafkaError as exc:
        if exc.code == ErrorCode.SHARE_SESSION_LIMIT_REACHED and req.max_wait_ms > 0:
            # SS-2: the broker waits MaxWaitMs before saying so.
            ctx.core.park(ctx.defer(), (), req.max_wait_ms, _Refusal(exc.code, exc.message or ""))
            return None
        if exc.code == ErrorCode.UNKNOWN_SERVER_ERROR:
            return _top(exc.code)  # upstream's error answer carries no message
        return _top(exc.code, exc.message or None)
    ack_results: dict[Key, tuple[int, str | None]] = {}
    for key, raw in acks.items():
        ack_results[key] = acknowledge_partition(share, req.group_id, req.member_id, targets[key], ack_batches(raw),
                                                 version=v, is_renew_ack=renew, broker_id=ctx.broker_id)
    if sctx.kind is ContextKind.FINAL or renew:
        # SS-4 / RN-3: nothing is fetched; a final request then closes the session.
        share.sessions.finish(sctx)
        parts: dict[Key, PD] = {}
        for key, (code, message) in ack_results.items():
            parts[key] = PD(partition_index=key[1], records=b"", acknowledge_error_code=code,
                            acknowledge_error_message=message, current_leader=_leader(targets[key]))
        return _response(ctx, parts, set(), share.config(req.group_id).record_lock_duration_ms)
    if req.max_records <= 0 or _fetch_max_bytes(ctx, req) <= 0:
        # SS-11: SharePartitionManager.processShareFetch completes at once with nothing fetched;
        # only the partitions that are missing and the acknowledgements are answered.
        parts = {}
        for key in sctx.session.partitions:
            t = resolve(ctx, *key)
            if t.error in _MISSING:
                parts[key] = PD(partition_index=t.partition, error_code=t.error, records=b"", current_leader=_leader(t))
        for key, t in errors.items():
            parts[key] = PD(partition_index=t.partition, error_code=t.error, records=b"", current_leader=_leader(t))
        for key, (code, message) in ack_results.items():
            pd = parts.get(key)
            if pd is None:
                pd = parts[key] = PD(partition_index=key[1], records=b"", current_leader=_leader(targets[key]))
            pd.acknowledge_error_code, pd.acknowledge_error_message = code, message
        return _response(ctx, parts, set(), share.config(req.group_id).record_lock_duration_ms)
    keys = sorted(sctx.session.partitions, key=lambda k: (str(k[0]), k[1]))
    if keys:
        turn = sctx.session.epoch % len(keys)  # AQ-8: rotate by the session epoch
        keys = keys[turn:] + keys[:turn]
    poll = ShareFetchPoll(ctx, req, share, sctx, keys, ack_results, errors)
    # SS-10: acknowledgements do not shorten the wait; only records (or an error) do.
    if req.max_wait_ms <= 0 or poll.ready():
        return poll.complete(True)
    ctx.core.park(ctx.defer(), poll.wake_keys(), req.max_wait_ms, poll)
    return None


class _Refusal:
    """A parked answer that is an error whenever it completes (SS-2's full session cache)."""

    __slots__ = ("code", "message")

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.message = message

    def ready(self) -> bool:
        return False

    def complete(self, final: bool) -> ShareFetchResponse:
        return _top(self.code, self.message or None)


def error_response(ctx: RequestContext, req: ShareFetchRequest, code: int) -> ShareFetchResponse:
    return _top(code)

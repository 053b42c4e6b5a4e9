"""Produce — key 0, v3–13 (advertised from v0 for librdkafka, RB-5).

Behaviour, per partition in the leader's order: unknown topic → UNKNOWN_TOPIC_OR_PARTITION
(UNKNOWN_TOPIC_ID by id in v13); not the leader → NOT_LEADER_OR_FOLLOWER (with the new
leader, KIP-951, v10+); exactly one magic-2 batch (TX-10, RB-5: legacy sets → INVALID_RECORD,
or up-converted when ``kwire.legacy.produce.upconvert`` is on); CRC → CORRUPT_MESSAGE;
control batches → INVALID_RECORD; zstd before v7 → UNSUPPORTED_COMPRESSION_TYPE; over
``max.message.bytes`` → MESSAGE_TOO_LARGE; producer id/epoch/sequence checks (TX-6..TX-8).
Transactional batches without a TransactionalId → TRANSACTIONAL_ID_AUTHORIZATION_FAILED for
every partition (KafkaApis); a transactional batch is verified with the coordinator first
(TX-13: CONCURRENT_TRANSACTIONS while its last transaction's markers are out, TX-15, as
NOT_ENOUGH_REPLICAS before v12).
Offsets and the leader epoch are written into the batch in place (no re-encode);
LogAppendTime topics get the broker time. acks=0 gets no response, and one that failed for any
partition closes the connection instead; acks outside {-1,0,1} → INVALID_REQUIRED_ACKS.
Deviations: acks=all waits for no replica (single-replica storage).
"""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.dispatch import EncodedBody
from kwire.broker.core.log import AppendOrigin
from kwire.broker.handlers._auth import AclOperation, authorize_topic
from kwire.broker.handlers._common import error_message, leader_error, node_endpoints, resolve_topic
from kwire.errors import KafkaError, KwireError, RecordError, RecordErrorsError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.produce import (
    ProduceRequest,
    ProduceResponse,
    ProduceResponse_BatchIndexAndErrorMessage,
    ProduceResponse_PartitionProduceResponse,
)
from kwire.protocol.registry import ApiKey
from kwire.records import BatchInfo, iter_batches, upconvert_to_v2

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext
    from kwire.broker.core.cluster import Partition

API_KEY = ApiKey.PRODUCE
VERSIONS = (3, 13)

PR = ProduceResponse_PartitionProduceResponse
log = logging.getLogger("kwire.broker")


def _single_batch(ctx: RequestContext, records: Any) -> bytearray | memoryview:
    """The one batch of a partition's records, writable (magic 2, RB-5/TX-10).

    Records decoded from a request frame are a writable view into the frame's own buffer
    (``FrameBuffer``); the batch is validated, given its offsets and stored right there,
    without a copy. A recorded request keeps its records as the client sent them (copy).
    """
    if records is None or len(records) == 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request has no records for this partition")
    try:
        it = iter_batches(records, verify_crc=False)
        batches = list(it)
    except RecordError as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    if it.has_partial_tail or not batches:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "records end inside a batch")
    magic = batches[0].magic
    if magic != 2:
        if not ctx.core.configs.get_bool(ResourceType.BROKER, "", "kwire.legacy.produce.upconvert"):
            raise KafkaError(ErrorCode.INVALID_RECORD,
                             f"Produce requests with version {ctx.api_version} must have at least one record batch "
                             f"with magic 2, not magic {magic}")
        try:
            return bytearray(upconvert_to_v2(records))
        except RecordError as exc:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    if len(batches) != 1:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         "Produce requests must contain exactly one record batch per partition")
    if isinstance(records, memoryview) and not records.readonly and ctx.exchange is None:
        return records
    return bytearray(records)


def _append(ctx: RequestContext, p: Partition, records: Any, transactional_id: str | None = None) -> PR:
    core = ctx.core
    buf = _single_batch(ctx, records)
    txn = core.subsystems.transactions
    verify = None
    if txn is not None:
        def verify(info: BatchInfo) -> None:  # TX-13: the transaction's verification, before producer state
            code = txn.check_produce(ctx, p, info, transactional_id)
            if code:
                raise KafkaError(code)
    res = p.log.append(buf, AppendOrigin.CLIENT, now_ms=ctx.now_ms, leader_epoch=p.leader_epoch,
                       config=core.log_config(p.topic), allow_zstd=ctx.api_version >= 7, verify=verify)
    return PR(index=p.index, base_offset=res.base_offset, log_append_time_ms=res.log_append_time,
              log_start_offset=p.log.log_start_offset)


def handle(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | EncodedBody | None:
    if req.acks not in (-1, 0, 1):
        return error_response(ctx, req, ErrorCode.INVALID_REQUIRED_ACKS)
    fast = _fast_produce(ctx, req)
    if fast is not None:
        return fast
    txn = ctx.core.subsystems.transactions
    if (req.transactional_id is not None and txn is None) or (
            req.transactional_id is None and _has_transactional_records(req)):
        # KafkaApis.handleProduceRequest: transactional records need a transactional id this
        # principal may write (none given, or no coordinator to own it, is unauthorized)
        if req.acks == 0:
            _close_unanswered(ctx, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
            return None
        return error_response(ctx, req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if _verification_must_wait(ctx, req):
        _retry_verification(ctx, req, ctx.core.clock.now_ms() + _config(ctx, "add.partitions.to.txn.retry.backoff.max.ms"))
        return None
    return _produce(ctx, req)


def _config(ctx: RequestContext, key: str) -> int:
    return int(ctx.core.configs.get_int(ResourceType.BROKER, "", key))


def _verification_must_wait(ctx: RequestContext, req: ProduceRequest) -> bool:
    """ReplicaManager.appendRecordsWithTransactionVerification: a TV2 produce (v12+) whose
    verification (the implicit add) meets CONCURRENT_TRANSACTIONS (the transactional id's last
    transaction still has markers out, TX-15) is retried by the leader every
    ``add.partitions.to.txn.retry.backoff.ms`` until ``add.partitions.to.txn.retry.backoff.max.ms``
    has passed, and only then answered; older produces get the error at once."""
    txn = ctx.core.subsystems.transactions
    if txn is None or req.transactional_id is None or req.acks == 0 or ctx.api_version < 12:
        return False
    concurrent = getattr(txn, "verification_concurrent", None)
    if concurrent is None or not _has_transactional_records(req) or not _needs_verification(ctx, req):
        return False
    return bool(concurrent(req.transactional_id))


def _needs_verification(ctx: RequestContext, req: ProduceRequest) -> bool:
    """Some transactional batch of the request goes to a partition where the leader has no open
    transaction of its producer at its epoch (UnifiedLog.maybeStartTransactionVerification)."""
    for td in req.topic_data:
        topic, _ = resolve_topic(ctx, td.name, td.topic_id, ctx.api_version >= 13)
        if topic is None:
            continue  # answered per partition by the append path
        for pd in td.partition_data:
            view = _view(pd.records)
            if not 0 <= pd.index < len(topic.partitions) or view is None or len(view) < 61:
                continue
            pid = int.from_bytes(view[43:51], "big", signed=True)
            epoch = int.from_bytes(view[51:53], "big", signed=True)
            entry = topic.partitions[pd.index].producers.entries.get(pid)
            if entry is None or entry.txn_first_offset is None or entry.epoch != epoch:
                return True
    return False


def _retry_verification(ctx: RequestContext, req: ProduceRequest, give_up_ms: int) -> None:
    """Hold the request and try again after the backoff; past ``give_up_ms`` run it as it is
    (its verification then answers CONCURRENT_TRANSACTIONS per partition)."""
    reply = ctx.defer()
    core = ctx.core
    backoff = max(1, _config(ctx, "add.partitions.to.txn.retry.backoff.ms"))

    def retry() -> None:
        now = core.clock.now_ms()
        if now < give_up_ms and _verification_must_wait(ctx, req):
            core.deadlines.at(min(now + backoff, give_up_ms), retry)
            return
        try:
            response = _produce(ctx, req)
        except Exception:  # noqa: BLE001 - a failed retry costs this request, not the timer
            log.exception("retrying a produce after CONCURRENT_TRANSACTIONS failed")
            response = error_response(ctx, req, ErrorCode.UNKNOWN_SERVER_ERROR)
        reply.send(response)

    core.deadlines.at(core.clock.now_ms() + backoff, retry)


def _produce(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | None:
    core = ctx.core
    by_id = ctx.api_version >= 13
    responses = []
    leaders: set[int] = set()
    for td in req.topic_data:
        topic, tcode = resolve_topic(ctx, td.name, td.topic_id, by_id)
        topic, tcode = authorize_topic(ctx, AclOperation.WRITE, None if by_id else td.name, topic, tcode)
        parts = []
        for pd in td.partition_data:
            r = PR(index=pd.index, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
            parts.append(r)
            if topic is None:
                r.error_code = tcode
                continue
            if pd.index < 0 or pd.index >= len(topic.partitions):
                r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            p = topic.partitions[pd.index]
            injected = core.faults.partition_error(API_KEY, ctx.broker_id, topic.name, p.index) \
                if core.faults.rules else None
            code = injected if injected is not None else leader_error(ctx, p)
            if code:
                r.error_code = code
                if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and p.leader_id >= 0 and ctx.api_version >= 10:
                    r.current_leader = ProduceResponse.LeaderIdAndEpoch(leader_id=p.leader_id,
                                                                        leader_epoch=p.leader_epoch)
                    leaders.add(p.leader_id)
                continue
            try:
                ok = _append(ctx, p, pd.records, req.transactional_id)
            except KafkaError as exc:
                _refused(ctx, p, r, exc)
                continue
            parts[-1] = ok
        responses.append(ProduceResponse.TopicProduceResponse(name=td.name, topic_id=td.topic_id,
                                                              partition_responses=parts))
    if req.acks == 0:
        failed = sorted({ErrorCode(r.error_code).name for t in responses for r in t.partition_responses
                         if r.error_code})
        if failed:
            _close_unanswered(ctx, ", ".join(failed))
        return None
    resp = ProduceResponse(responses=responses)
    if leaders and ctx.api_version >= 10:
        resp.node_endpoints = node_endpoints(ctx, leaders, ProduceResponse.NodeEndpoint)
    return resp


def _refused(ctx: RequestContext, p: Partition, r: PR, exc: KafkaError) -> None:
    """A partition whose batch the log refused: its error, message and record errors."""
    r.error_code = exc.code
    r.error_message = exc.message or error_message(exc.code)
    r.log_start_offset = p.log.log_start_offset
    if isinstance(exc, RecordErrorsError) and ctx.api_version >= 8:
        r.record_errors = [ProduceResponse_BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                           for i, m in exc.record_errors]


# --- the common shape, without the answer objects -------------------------------------------------
# Index, ErrorCode, BaseOffset, LogAppendTimeMs, LogStartOffset: one PartitionProduceResponse's
# fixed fields, in every version from 8 (the fast path's range).
_PARTITION_FIELDS = struct.Struct(">ihqqq")
_BATCH_LENGTH = struct.Struct(">i")
_FAST_VERSIONS = range(9, 14)  # flexible versions: the answer's layout does not depend on the rest
_MAX_TEMPLATES = 4096
# Placeholders the templates are encoded with (base offset, append time, log start), and a
# second set that checks where they were found.
_MARKS = (0x5EED_0001_0203_0405, 0x5EED_0607_0809_0A0B, 0x5EED_0C0D_0E0F_1011)
_CHECK = (0x0C0D_0E0F_1011_5EED, 0x0607_0809_0A0B_5EED, 0x0001_0203_0405_5EED)
# (version, then per topic: its name or id as answered, its partition count, its partitions)
# -> (the success answer's encoded body, where each partition's fixed fields are in it, in
# request order); None: this answer cannot be patched (the objects are built)
_templates: dict[tuple[object, ...], tuple[bytes, list[int]] | None] = {}
_UNKNOWN: Any = object()  # a shape not seen yet (None is cached too: not patchable)


def _success_answer(req: ProduceRequest, marks: tuple[int, int, int]) -> ProduceResponse:
    return ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(
        name=td.name, topic_id=td.topic_id, partition_responses=[
            PR(index=pd.index, base_offset=marks[0], log_append_time_ms=marks[1], log_start_offset=marks[2])
            for pd in td.partition_data]) for td in req.topic_data])


def _template(version: int, req: ProduceRequest, key: tuple[object, ...]) -> tuple[bytes, list[int]] | None:
    """The success answer to a request of this shape (``key``), encoded by the generated encoder
    with placeholders, and where each partition's fixed fields sit: found in order, and checked
    by patching in a second set of values, which must give that set's own encoding."""
    found: tuple[bytes, list[int]] | None = None
    try:
        body, check = _success_answer(req, _MARKS).encode(version), _success_answer(req, _CHECK).encode(version)
    except KwireError:
        body = check = b""
    at: list[int] = []
    patched = bytearray(body)
    for pd in (pd for td in req.topic_data for pd in td.partition_data):
        i = body.find(_PARTITION_FIELDS.pack(pd.index, 0, *_MARKS), at[-1] + _PARTITION_FIELDS.size if at else 0)
        if i < 0:
            break
        at.append(i)
        _PARTITION_FIELDS.pack_into(patched, i, pd.index, 0, *_CHECK)
    else:
        if body and patched == check:
            found = (body, at)
    if len(_templates) >= _MAX_TEMPLATES:
        _templates.clear()
    _templates[key] = found
    return found


def _fast_produce(ctx: RequestContext, req: ProduceRequest) -> EncodedBody | ProduceResponse | None:
    """The common Produce: non-transactional batches, one per partition, to partitions this
    broker leads, acks 1 or -1 and no transactional id, answered as ``_produce`` answers it
    without building the answer's objects when every batch is appended: the same checks and the
    same appends in the same order, the answer patched into bytes the generated encoder made
    (``_template``); when the log refuses a batch, the answer's objects are built as
    ``_produce`` builds them. None: not this shape (an unknown topic or partition, another
    leader, a transactional, legacy or partial batch...), or something would look at the answer
    objects (recording, client quotas, fault rules, an authorizer): the general path runs then,
    nothing having changed. tests/broker/test_produce_fast_path.py checks answers and log state
    against the general path, request by request."""
    version = ctx.api_version
    if (req.transactional_id is not None or req.acks == 0 or version not in _FAST_VERSIONS
            or ctx.exchange is not None):
        return None
    core = ctx.core
    subs = core.subsystems
    if core.faults.rules or (subs.acl is not None and subs.acl.enabled) or (
            subs.quotas is not None and subs.quotas.entities):
        return None
    cluster = core.cluster
    by_id = version >= 13
    plan: list[tuple[Partition, memoryview]] = []
    shape: list[object] = [version]  # the template's key (see _templates)
    for td in req.topic_data:
        topic = cluster.topics_by_id.get(td.topic_id) if by_id else cluster.topics.get(td.name)
        if topic is None:
            return None
        partitions = topic.partitions
        shape.append(td.topic_id if by_id else td.name)
        shape.append(len(td.partition_data))
        for pd in td.partition_data:
            records = pd.records
            # Exactly one whole magic-2 batch, not transactional, writable in the frame's buffer:
            # what _single_batch returns as it is and _has_transactional_records does not flag.
            if type(records) is not memoryview or records.readonly or records.format != "B":
                return None
            n = len(records)
            if (n < 61 or records[16] != 2 or records[22] & 0x10
                    or _BATCH_LENGTH.unpack_from(records, 8)[0] + 12 != n):
                return None
            if not 0 <= pd.index < len(partitions):
                return None
            p = partitions[pd.index]
            if leader_error(ctx, p):
                return None
            plan.append((p, records))
            shape.append(pd.index)
    if not plan:
        return None
    key = tuple(shape)
    tpl = _templates.get(key, _UNKNOWN)
    if tpl is _UNKNOWN:
        tpl = _template(version, req, key)
    if tpl is None:
        return None
    now = core.clock.now_ms()
    allow_zstd = version >= 7
    done: list[tuple[int, int, int] | KafkaError] = []
    refused = False
    for p, records in plan:
        log = p.log
        try:
            # verify: the coordinator's check passes every non-transactional batch (check_produce)
            res = log.append(records, AppendOrigin.CLIENT, now_ms=now, leader_epoch=p.leader_epoch,
                             config=core.log_config(p.topic), allow_zstd=allow_zstd)
        except KafkaError as exc:
            done.append(exc)
            refused = True
            continue
        done.append((res.base_offset, res.log_append_time, log.log_start_offset))
    if refused:
        return _answer_objects(ctx, req, plan, done)
    body, at = tpl
    out = bytearray(body)
    for k, r in enumerate(done):
        _PARTITION_FIELDS.pack_into(out, at[k], plan[k][0].index, 0, *r)  # type: ignore[misc]
    return EncodedBody(out)


def _answer_objects(ctx: RequestContext, req: ProduceRequest, plan: list[tuple[Partition, memoryview]],
                    done: list[tuple[int, int, int] | KafkaError]) -> ProduceResponse:
    """``_produce``'s answer for the appends ``_fast_produce`` made (one of them refused)."""
    responses = []
    k = 0
    for td in req.topic_data:
        parts = []
        for pd in td.partition_data:
            p, r = plan[k][0], done[k]
            k += 1
            if isinstance(r, KafkaError):
                pr = PR(index=pd.index, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
                _refused(ctx, p, pr, r)
            else:
                pr = PR(index=p.index, base_offset=r[0], log_append_time_ms=r[1], log_start_offset=r[2])
            parts.append(pr)
        responses.append(ProduceResponse.TopicProduceResponse(name=td.name, topic_id=td.topic_id,
                                                              partition_responses=parts))
    return ProduceResponse(responses=responses)


_ATTRIBUTES = struct.Struct(">h")


def _view(records: object) -> memoryview | None:
    """A request's records as bytes to peek at (a request never carries a RecordChain)."""
    return memoryview(records) if isinstance(records, bytes | bytearray | memoryview) else None


def _has_transactional_records(req: ProduceRequest) -> bool:
    """RequestUtils.hasTransactionalRecords: some magic-2 batch of the request has the
    transactional bit (read from the batch headers only)."""
    for td in req.topic_data:
        for pd in td.partition_data:
            view = _view(pd.records)
            if view is None:
                continue
            pos, end = 0, len(view)
            while pos + 23 <= end:  # base offset, length, leader epoch, magic, crc, attributes
                length = int.from_bytes(view[pos + 8:pos + 12], "big", signed=True)
                if view[pos + 16] == 2 and _ATTRIBUTES.unpack_from(view, pos + 21)[0] & 0x10:
                    return True
                if length <= 0:
                    break
                pos += 12 + length
    return False


def _close_unanswered(ctx: RequestContext, errors: str) -> None:
    """An acks=0 produce that failed: never answered, the connection is closed instead, so the
    client notices (Kafka: ProduceRequest.getErrorResponse is null for acks=0, and KafkaApis
    closes the connection when any partition failed)."""
    ctx.defer().close(f"acks=0 produce failed: {errors}")


def error_response(ctx: RequestContext, req: ProduceRequest, code: int) -> ProduceResponse:
    return ProduceResponse(responses=[
        ProduceResponse.TopicProduceResponse(name=td.name, topic_id=td.topic_id, partition_responses=[
            PR(index=pd.index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
            for pd in td.partition_data])
        for td in req.topic_data])

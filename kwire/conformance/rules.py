"""Client-behaviour rules, checked from recorded traffic (docs/client-rules.md).

A rule reads the decoded requests and responses a broker recorded (``Broker.recorded()``)
and reports every place where the *client* departed from Kafka's protocol. Rules never
judge the broker. Each has an id (``CR-n``), the one-line statement docs/client-rules.md
carries, and a check ``(frames) -> violations``; a violation names the rule, the broker
connection and the offending decoded frames.

Theory of operation: the recording is in request-arrival order, with each response attached
to its request. A rule walks it once, keeping only the state a client must itself keep
(advertised versions, session epochs, sequence numbers, held records), and is lenient
wherever Kafka lets the client reset that state: after an error answer or a dropped
connection a rule forgets what it tracked instead of guessing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kwire.errors import DecodeError, KwireError

__all__ = [
    "RULES",
    "Frame",
    "Rule",
    "Violation",
    "check_frames",
    "check_recording",
    "frames_from_exchanges",
    "rule_by_id",
]

_PRODUCE, _FETCH, _API_VERSIONS, _INIT_PRODUCER_ID = 0, 1, 18, 22
_ADD_PARTITIONS_TO_TXN, _END_TXN = 24, 26
_SHARE_FETCH, _SHARE_ACKNOWLEDGE = 78, 79
_INT32_MAX = 2**31 - 1
# AcknowledgeType wire ids (KIP-932, KIP-1222): 0 gap, 1 accept, 2 release, 3 reject, 4 renew.
_ACK_GAP, _ACK_RENEW = 0, 4
# Produce v12 is the first transaction-version-2 request (KIP-890: partitions added implicitly).
_PRODUCE_TV2_MIN_VERSION = 12
# How much of one frame's JSON a violation shows; record sets make frames large.
_FRAME_TEXT_LIMIT = 1200


@dataclass(slots=True)
class Frame:
    """One recorded request and what became of it, as the rules see it."""

    index: int  # position in the recording
    at_ms: int
    broker_id: int
    conn_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: Any  # decoded body; None when even a lenient decode failed
    response: Any = None  # decoded body; None when none was sent (closed, acks=0, undecodable)
    closed: str | None = None
    received_at_ms: int | None = None  # when the request arrived (a throttled connection holds it)
    response_at_ms: int | None = None  # when the answer was made

    @property
    def connection(self) -> str:
        return f"broker {self.broker_id} connection {self.conn_id}"

    def api_name(self) -> str:
        from kwire.protocol.registry import api_info

        try:
            return str(api_info(self.api_key).name)
        except KwireError:
            return f"api key {self.api_key}"

    def to_json(self) -> dict[str, Any]:
        """The frame in ``kwire decode`` JSON form, with its place in the recording."""
        out: dict[str, Any] = {
            "index": self.index,
            "at_ms": self.at_ms,
            "broker": self.broker_id,
            "connection": self.conn_id,
            "api": self.api_name(),
            "api_key": self.api_key,
            "api_version": self.api_version,
            "correlation_id": self.correlation_id,
        }
        if self.request is not None:
            out["request"] = _message_json(self.request, self.api_version)
        if self.response is not None:
            out["response"] = _message_json(self.response, self.api_version)
        if self.closed:
            out["closed"] = self.closed
        return out

    def describe(self) -> str:
        """One line plus the decoded request (truncated), for terminal and HTML reports."""
        head = (
            f"#{self.index} {self.connection} {self.api_name()} v{self.api_version} "
            f"correlation {self.correlation_id}"
        )
        body = (
            json.dumps(_message_json(self.request, self.api_version), default=str)
            if self.request is not None
            else "(undecodable)"
        )
        if len(body) > _FRAME_TEXT_LIMIT:
            body = body[:_FRAME_TEXT_LIMIT] + " …"
        return f"{head}: {body}"


def _message_json(msg: Any, version: int) -> Any:
    try:
        return msg.to_json(version)
    except (KwireError, AttributeError, TypeError, ValueError):
        return repr(msg)


@dataclass(slots=True)
class Violation:
    """One place where the client broke a rule."""

    rule_id: str
    statement: str
    connection: str
    explanation: str
    frames: tuple[Frame, ...]

    def format(self) -> str:
        """Rule, connection, explanation, then the offending frames, one per line."""
        lines = [f"{self.rule_id} {self.statement}", f"  on {self.connection}: {self.explanation}"]
        lines += [f"  {f.describe()}" for f in self.frames]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule_id,
            "statement": self.statement,
            "connection": self.connection,
            "explanation": self.explanation,
            "frames": [f.to_json() for f in self.frames],
        }


# (connection, explanation, offending frames) per violation
Found = list[tuple[str, str, tuple[Frame, ...]]]
Check = Callable[[Sequence[Frame]], Found]


@dataclass(slots=True, frozen=True)
class Rule:
    """A client-behaviour rule: id, one-line statement, and the check over a recording."""

    id: str
    statement: str
    check: Check

    def run(self, frames: Sequence[Frame]) -> list[Violation]:
        return [Violation(self.id, self.statement, conn, why, fs) for conn, why, fs in self.check(frames)]


# --- decoding the recording --------------------------------------------------------------------


def _lenient_decode(payload: bytes) -> tuple[int, int, int, str | None, Any]:
    """Header fields and body of a request the broker did not decode (as a Kafka broker
    would read it: bytes after the body are ignored). Body None when the codec cannot."""
    from kwire.protocol import peek_request_header, request_header_version, schema_class
    from kwire.protocol.registry import api_info

    key, version, corr = peek_request_header(payload)
    try:
        info = api_info(key)
        hv = request_header_version(key, version)
        header, pos = schema_class("RequestHeader").decode_from(payload, 0, hv)
        body, _ = info.request_class.decode_from(memoryview(payload)[pos:], 0, version)
    except (KwireError, ValueError, IndexError):
        return key, version, corr, None, None
    return key, version, corr, header.client_id, body


def frames_from_exchanges(exchanges: Iterable[Any]) -> list[Frame]:
    """Frames from a broker recording (``kwire.broker.core.broker_core.Exchange`` objects).

    Requests the broker rejected before decoding (an API or version it does not serve) are
    decoded here with the codec, so a rule still sees what the client sent.
    """
    from kwire.protocol import decode_response

    out: list[Frame] = []
    for i, ex in enumerate(exchanges):
        request, client_id = ex.request, ex.client_id
        key, version, corr = ex.api_key, ex.api_version, ex.correlation_id
        if request is None and ex.request_bytes:
            with contextlib.suppress(DecodeError):
                key, version, corr, client_id, request = _lenient_decode(ex.request_bytes)
        response = ex.response
        if response is None and ex.response_bytes is not None and key >= 0:
            try:
                response = decode_response(ex.response_bytes, key, version).body
            except (KwireError, ValueError):
                response = None
        out.append(Frame(i, ex.at_ms, ex.broker_id, ex.conn_id, key, version, corr, client_id, request,
                         response, ex.closed, getattr(ex, "received_at_ms", None), getattr(ex, "response_at_ms", None)))
    return out


# --- shared helpers ----------------------------------------------------------------------------


def _answers(frames: Sequence[Frame]) -> list[tuple[int, int, dict[int, tuple[int, int]]]]:
    """(recording index, broker id, api key -> (min, max)) of every ApiVersions answer, in order."""
    out = []
    for f in frames:
        if f.api_key != _API_VERSIONS or f.response is None or getattr(f.response, "error_code", 1) != 0:
            continue
        out.append((f.index, f.broker_id,
                    {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in f.response.api_keys}))
    return out


class _Advertised:
    """What the broker had advertised when a request arrived: the latest ApiVersions answer of
    that broker before it (a broker's versions can change: an upgrade, or a test capping them),
    else of any broker of the cluster (they run the same software), else the first answer at all
    (a client that sent before asking is judged by what the broker says it serves)."""

    __slots__ = ("answers",)

    def __init__(self, frames: Sequence[Frame]) -> None:
        self.answers = _answers(frames)

    def at(self, f: Frame) -> dict[int, tuple[int, int]] | None:
        before = [a for a in self.answers if a[0] < f.index]
        mine = [a for a in before if a[1] == f.broker_id]
        if mine:
            return mine[-1][2]
        if before:
            return before[-1][2]
        later = [a for a in self.answers if a[1] == f.broker_id] or self.answers
        return later[0][2] if later else None


def _next_epoch(epoch: int) -> int:
    """Session epochs wrap from 2147483647 to 1 (ShareRequestMetadata.nextEpoch, FetchMetadata)."""
    return 1 if epoch >= _INT32_MAX else epoch + 1


def _top_error(msg: Any) -> int:
    return int(getattr(msg, "error_code", 0) or 0)


# --- CR-1 --------------------------------------------------------------------------------------


def _check_versions(frames: Sequence[Frame]) -> Found:
    adv = _Advertised(frames)
    out: Found = []
    for f in frames:
        if f.api_key == _API_VERSIONS:
            continue  # KIP-511: the client may ask in any version; the broker answers in v0 if it must
        table = adv.at(f)
        if table is None:
            continue
        rng = table.get(f.api_key)
        if rng is None:
            out.append((f.connection, f"{f.api_name()} (key {f.api_key}) is not advertised at all", (f,)))
        elif not rng[0] <= f.api_version <= rng[1]:
            out.append((f.connection, f"{f.api_name()} v{f.api_version} is outside the advertised "
                                      f"range v{rng[0]}-v{rng[1]}", (f,)))
    return out


# --- CR-2 --------------------------------------------------------------------------------------


# SaslHandshake, SaslAuthenticate: Kafka's SaslClientAuthenticator takes their ids from a reserved
# range (MIN_RESERVED_CORRELATION_ID..Integer.MAX_VALUE) again on every (re-)authentication, and
# nothing else is in flight on the connection while an exchange runs (KIP-368 mutes it).
_SASL_KEYS = frozenset({17, 36})


def _check_correlation_ids(frames: Sequence[Frame]) -> Found:
    seen: dict[tuple[int, int], dict[int, Frame]] = {}
    out: Found = []
    for f in frames:
        if f.api_key in _SASL_KEYS:
            continue
        ids = seen.setdefault((f.broker_id, f.conn_id), {})
        first = ids.get(f.correlation_id)
        if first is not None:
            out.append((f.connection, f"correlation id {f.correlation_id} was already used by request "
                                      f"#{first.index}", (first, f)))
        else:
            ids[f.correlation_id] = f
    return out


# --- CR-3 --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _SeqState:
    last: int  # last sequence sent
    sent: set[tuple[int, int]] = field(default_factory=set)  # (base sequence, record count) of batches
    frame: Frame | None = None


def _produce_batches(f: Frame) -> Iterable[tuple[str, int, Any]]:
    from kwire.records import iter_batches

    for topic in f.request.topic_data or ():
        name = topic.name if topic.name else str(topic.topic_id)
        for part in topic.partition_data or ():
            data = part.records
            if not data:
                continue
            try:
                for batch in iter_batches(bytes(data), verify_crc=False):
                    yield name, int(part.index), batch
            except (KwireError, ValueError):
                continue  # a corrupt record set is the broker's business (CORRUPT_MESSAGE), not this rule's


def _produce_errors(f: Frame) -> set[tuple[str, int]]:
    """Partitions whose produce answer was an error (or that got no answer)."""
    bad: set[tuple[str, int]] = set()
    if f.response is None:
        return {(t.name if t.name else str(t.topic_id), int(p.index))
                for t in f.request.topic_data or () for p in t.partition_data or ()}
    for t in f.response.responses or ():
        name = t.name if t.name else str(t.topic_id)
        for p in t.partition_responses or ():
            if p.error_code:
                bad.add((name, int(p.index)))
    return bad


def _check_sequences(frames: Sequence[Frame]) -> Found:
    fresh: set[tuple[int, int]] = set()  # (producer id, epoch) handed out by InitProducerId
    state: dict[tuple[int, int, str, int], _SeqState] = {}
    started: set[tuple[int, int, str, int]] = set()  # keys that ever sent a batch (state may be reset)
    out: Found = []
    for f in frames:
        if f.request is None:
            continue
        if f.api_key == _INIT_PRODUCER_ID and f.response is not None and _top_error(f.response) == 0:
            fresh.add((int(f.response.producer_id), int(f.response.producer_epoch)))
            continue
        if f.api_key != _PRODUCE:
            continue
        for topic, partition, batch in _produce_batches(f):
            pid, epoch = int(batch.producer_id), int(batch.producer_epoch)
            if pid < 0 or batch.is_control:
                continue
            key = (pid, epoch, topic, partition)
            base, count = int(batch.base_sequence), int(batch.record_count)
            last = (base + count - 1) % (_INT32_MAX + 1)
            st = state.get(key)
            if st is None:
                if (pid, epoch) in fresh and key not in started and base != 0:
                    out.append((f.connection, f"producer {pid} epoch {epoch} starts {topic}-{partition} at "
                                              f"sequence {base}, not 0", (f,)))
                state[key] = _SeqState(last, {(base, count)}, f)
                started.add(key)
                continue
            if (base, count) in st.sent:
                continue  # a retry of a batch already sent: same sequences
            expected = 0 if st.last >= _INT32_MAX else st.last + 1
            if base != expected:
                prev = (st.frame,) if st.frame is not None else ()
                out.append((f.connection, f"producer {pid} epoch {epoch} sent {topic}-{partition} sequence "
                                          f"{base} after {st.last} (expected {expected})", (*prev, f)))
            st.last, st.frame = last, f
            st.sent.add((base, count))
        # An error answer lets the client rewrite its sequences (Java's adjustSequencesDueToFailedBatch).
        for topic, partition in _produce_errors(f):
            for key in [k for k in state if k[2] == topic and k[3] == partition]:
                del state[key]
    return out


# --- CR-4 --------------------------------------------------------------------------------------


def _check_fetch_sessions(frames: Sequence[Frame]) -> Found:
    expected: dict[tuple[int, int], tuple[int, Frame]] = {}  # (broker, session id) -> next epoch
    out: Found = []
    for f in frames:
        if f.api_key != _FETCH or f.request is None or f.api_version < 7:
            continue
        sid, epoch = int(f.request.session_id), int(f.request.session_epoch)
        key = (f.broker_id, sid)
        if sid != 0 and epoch > 0 and key in expected:
            want, prev = expected[key]
            if epoch != want:
                out.append((f.connection, f"fetch session {sid} epoch {epoch} after #{prev.index} "
                                          f"(expected {want})", (prev, f)))
            expected[key] = (_next_epoch(epoch), f)
        elif sid != 0 and epoch == -1:
            expected.pop(key, None)  # closed by the client
        if f.response is None or _top_error(f.response) != 0:
            expected.pop(key, None)  # no answer or an error: the client starts a new session
            continue
        if sid == 0 and epoch == 0 and int(f.response.session_id) != 0:
            expected[(f.broker_id, int(f.response.session_id))] = (1, f)
    return out


# --- CR-5 --------------------------------------------------------------------------------------


def _check_share_sessions(frames: Sequence[Frame]) -> Found:
    # (broker, group, member) -> (connection, next epoch, last frame). SS-1: the session is the
    # member's, not the connection's: requests on another connection continue its epochs (a client
    # may fetch on one connection and acknowledge on another). When the connection that opened it
    # closes (SS-8) the broker answers SHARE_SESSION_NOT_FOUND, which ends it here too.
    sessions: dict[tuple[int, str, str], tuple[int, int, Frame]] = {}
    out: Found = []
    for f in frames:
        if f.api_key not in (_SHARE_FETCH, _SHARE_ACKNOWLEDGE) or f.request is None:
            continue
        key = (f.broker_id, str(f.request.group_id), str(f.request.member_id))
        epoch = int(f.request.share_session_epoch)
        cur = sessions.get(key)
        what = "ShareFetch" if f.api_key == _SHARE_FETCH else "ShareAcknowledge"
        if epoch == 0:
            if f.api_key == _SHARE_ACKNOWLEDGE:
                out.append((f.connection, "ShareAcknowledge with epoch 0 (only ShareFetch opens a session)", (f,)))
            else:
                sessions[key] = (f.conn_id, 1, f)
        elif epoch == -1:
            if cur is None:
                out.append((f.connection, f"{what} with epoch -1 but no open share session", (f,)))
            sessions.pop(key, None)
        elif cur is None:
            out.append((f.connection, f"{what} with epoch {epoch} before a ShareFetch with epoch 0 opened "
                                      f"the session", (f,)))
        else:
            if epoch != cur[1]:
                out.append((f.connection, f"{what} epoch {epoch} after #{cur[2].index} (expected {cur[1]})",
                            (cur[2], f)))
            sessions[key] = (f.conn_id, _next_epoch(epoch), f)
        if f.response is not None and _top_error(f.response) != 0:
            sessions.pop(key, None)  # SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH: start again at 0
    return out


# --- CR-6, CR-7 --------------------------------------------------------------------------------


def _ack_batches(req: Any) -> Iterable[tuple[Any, int, Any]]:
    """(topic id, partition, acknowledgement batch) of a ShareFetch or ShareAcknowledge."""
    for t in req.topics or ():
        for p in t.partitions or ():
            for b in p.acknowledgement_batches or ():
                yield t.topic_id, int(p.partition_index), b


def _check_renew_advertised(frames: Sequence[Frame]) -> Found:
    adv = _Advertised(frames)
    out: Found = []
    for f in frames:
        if f.api_key not in (_SHARE_FETCH, _SHARE_ACKNOWLEDGE) or f.request is None:
            continue
        renew = bool(getattr(f.request, "is_renew_ack", False)) or any(
            _ACK_RENEW in (b.acknowledge_types or ()) for _, _, b in _ack_batches(f.request)
        )
        if not renew:
            continue
        table = adv.at(f) or {}
        rng = table.get(f.api_key)
        if rng is None or rng[1] < 2:
            shown = "not advertised" if rng is None else f"advertised up to v{rng[1]}"
            out.append((f.connection, f"RENEW in {f.api_name()} v{f.api_version} while the broker has it {shown}",
                        (f,)))
    return out


def _check_renew_only_zeros(frames: Sequence[Frame]) -> Found:
    out: Found = []
    for f in frames:
        if f.api_key != _SHARE_FETCH or f.request is None or not getattr(f.request, "is_renew_ack", False):
            continue
        r = f.request
        nonzero = [n for n, v in (("MaxWaitMs", r.max_wait_ms), ("MinBytes", r.min_bytes),
                                  ("MaxBytes", r.max_bytes), ("MaxRecords", r.max_records)) if v]
        if nonzero:
            out.append((f.connection, f"renew-only ShareFetch with non-zero {', '.join(nonzero)}", (f,)))
    return out


# --- CR-8 --------------------------------------------------------------------------------------


def _txn_added(f: Frame) -> tuple[str | None, set[tuple[str, int]]]:
    """Transactional id and the partitions an AddPartitionsToTxn request added with success."""
    req, resp = f.request, f.response
    ok: set[tuple[str, int]] = set()
    if resp is not None and _top_error(resp) == 0:
        topics = resp.results_by_topic_v3_and_below or ()
        if f.api_version >= 4:
            topics = [t for tx in resp.results_by_transaction or () for t in tx.topic_results or ()]
        for t in topics:
            for p in t.results_by_partition or ():
                if p.partition_error_code == 0:
                    ok.add((str(t.name), int(p.partition_index)))
    if f.api_version <= 3:
        return req.v3_and_below_transactional_id, ok
    txns = [tx for tx in req.transactions or () if not tx.verify_only]
    return (txns[0].transactional_id if txns else None), ok


def _check_txn_partitions(frames: Sequence[Frame]) -> Found:
    added: dict[str, set[tuple[str, int]]] = {}
    out: Found = []
    for f in frames:
        if f.request is None:
            continue
        if f.api_key == _ADD_PARTITIONS_TO_TXN:
            tid, ok = _txn_added(f)
            if tid is not None:
                added.setdefault(tid, set()).update(ok)
        elif f.api_key == _END_TXN:
            added.pop(str(f.request.transactional_id), None)
        elif f.api_key == _PRODUCE and f.request.transactional_id is not None \
                and f.api_version < _PRODUCE_TV2_MIN_VERSION:
            have = added.get(str(f.request.transactional_id), set())
            missing = sorted({(t.name, int(p.index)) for t in f.request.topic_data or ()
                              for p in t.partition_data or ()} - have)
            if missing:
                shown = ", ".join(f"{t}-{p}" for t, p in missing)
                out.append((f.connection, f"transactional produce (TV1, v{f.api_version}) by "
                                          f"{f.request.transactional_id!r} to {shown}, not added to the "
                                          f"transaction", (f,)))
    return out


# --- CR-9 --------------------------------------------------------------------------------------


class _Ranges:
    """A set of int64 offsets kept as sorted, disjoint, inclusive ranges."""

    __slots__ = ("spans",)

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []

    def add(self, lo: int, hi: int) -> None:
        merged = []
        for a, b in self.spans:
            if b + 1 < lo or a > hi + 1:
                merged.append((a, b))
            else:
                lo, hi = min(lo, a), max(hi, b)
        merged.append((lo, hi))
        self.spans = sorted(merged)

    def remove(self, lo: int, hi: int) -> None:
        kept = []
        for a, b in self.spans:
            if b < lo or a > hi:
                kept.append((a, b))
                continue
            if a < lo:
                kept.append((a, lo - 1))
            if b > hi:
                kept.append((hi + 1, b))
        self.spans = kept

    def covers(self, lo: int, hi: int) -> bool:
        return any(a <= lo and hi <= b for a, b in self.spans)


def _check_acks_held(frames: Sequence[Frame]) -> Found:
    held: dict[tuple[str, str, Any, int], _Ranges] = {}
    out: Found = []
    for f in frames:
        if f.api_key not in (_SHARE_FETCH, _SHARE_ACKNOWLEDGE) or f.request is None:
            continue
        group, member = str(f.request.group_id), str(f.request.member_id)
        # Acknowledgements first: a ShareFetch acknowledges before it acquires (KafkaApis).
        for topic_id, partition, b in _ack_batches(f.request):
            types = list(b.acknowledge_types or ())
            lo, hi = int(b.first_offset), int(b.last_offset)
            if not types or hi < lo:
                continue  # malformed; the broker answers INVALID_REQUEST
            ranges = held.setdefault((group, member, topic_id, partition), _Ranges())
            if len(types) == 1:
                spans = [(lo, hi, types[0])]
            else:
                spans = [(lo + i, lo + i, t) for i, t in enumerate(types[: hi - lo + 1])]
            for a, z, t in spans:
                if t == _ACK_GAP:
                    continue  # a gap names offsets with no record; nothing was held there
                if not ranges.covers(a, z):
                    out.append((f.connection, f"member {member!r} acknowledged offsets {a}-{z} of partition "
                                              f"{partition} (type {t}) that it does not hold", (f,)))
                if t != _ACK_RENEW:
                    ranges.remove(a, z)
        if int(f.request.share_session_epoch) == -1:
            # SS-4, SS-5: closing the session releases whatever the member still held.
            for key in [k for k in held if k[:2] == (group, member)]:
                del held[key]
            continue
        if f.api_key == _SHARE_FETCH and f.response is not None and _top_error(f.response) == 0:
            for t in f.response.responses or ():
                for p in t.partitions or ():
                    for a in p.acquired_records or ():
                        held.setdefault((group, member, t.topic_id, int(p.partition_index)), _Ranges()).add(
                            int(a.first_offset), int(a.last_offset))
    return out


# A Produce that arrives this soon after a throttled answer may have been written before the client
# read that answer (producers keep several requests in flight); later ones were sent knowingly.
_IN_FLIGHT_GRACE_MS = {_PRODUCE: 100}


def _check_throttle_honoured(frames: Sequence[Frame]) -> Found:
    """KIP-219: after a response with ThrottleTimeMs > 0 (a version whose client throttles itself),
    nothing more is sent on that connection until the time has passed. A request that arrived
    before the answer was made (or, for a Produce, within the in-flight grace after it) was
    already on its way and is not counted."""
    from kwire.broker.core.quotas import ClientQuotas

    # connection -> (answer made at, quiet until, the throttled frame)
    quiet: dict[tuple[int, int], tuple[int, int, Frame]] = {}
    out: Found = []
    for f in frames:
        key = (f.broker_id, f.conn_id)
        arrived = f.received_at_ms if f.received_at_ms is not None else f.at_ms
        held = quiet.get(key)
        if held is not None and held[0] + _IN_FLIGHT_GRACE_MS.get(f.api_key, 0) <= arrived < held[1]:
            out.append((f.connection, f"{f.api_name()} sent {held[1] - arrived} ms before the throttle time "
                                      f"({getattr(held[2].response, 'throttle_time_ms', 0)} ms) of "
                                      f"{held[2].api_name()} #{held[2].index} had passed", (held[2], f)))
            quiet.pop(key)
            held = None
        throttle = getattr(f.response, "throttle_time_ms", 0) or 0
        if throttle > 0 and f.response_at_ms is not None and ClientQuotas.client_throttles(f.api_key, f.api_version):
            until = f.response_at_ms + throttle
            if held is None or until > held[1]:
                quiet[key] = (f.response_at_ms, until, f)
    return out


# --- CR-11 -------------------------------------------------------------------------------------


def _renewed_offsets(req: Any) -> Iterable[tuple[Any, int, int]]:
    """(topic id, partition, offset) of every RENEW in a ShareFetch or ShareAcknowledge."""
    for topic_id, partition, b in _ack_batches(req):
        types = list(b.acknowledge_types or ())
        lo, hi = int(b.first_offset), int(b.last_offset)
        if hi < lo or hi - lo > 100_000:
            continue  # malformed or absurd; other rules and the broker deal with it
        for i, off in enumerate(range(lo, hi + 1)):
            t = types[0] if len(types) == 1 else (types[i] if i < len(types) else None)
            if t == _ACK_RENEW:
                yield topic_id, partition, off


def _check_renew_after_answer(frames: Sequence[Frame]) -> Found:
    # (group, member, topic id, partition, offset) -> the frame of the renewal not yet answered
    # as of its answer time. KafkaShareConsumer hands a renewed record back through poll() only
    # once the renewal's answer came (ShareConsumerImpl: takeRenewedRecords), and the application
    # may acknowledge only records poll() returned: a second RENEW before the first was answered
    # means the client renewed a record that poll() had not handed back.
    pending: dict[tuple[str, str, Any, int, int], Frame] = {}
    out: Found = []
    for f in frames:
        if f.api_key not in (_SHARE_FETCH, _SHARE_ACKNOWLEDGE) or f.request is None:
            continue
        group, member = str(f.request.group_id), str(f.request.member_id)
        for topic_id, partition, off in _renewed_offsets(f.request):
            key = (group, member, topic_id, partition, off)
            prev = pending.get(key)
            if prev is not None and prev.response_at_ms is not None and f.at_ms < prev.response_at_ms:
                out.append((f.connection, f"member {member!r} renewed offset {off} of partition {partition} again "
                                          f"before the broker answered its renewal in #{prev.index}", (prev, f)))
            if f.response is not None and f.response_at_ms is not None:
                pending[key] = f
            else:
                pending.pop(key, None)  # no answer (connection closed): the client starts over
    return out


RULES: tuple[Rule, ...] = (
    Rule("CR-1", "The client never sends a request version the broker did not advertise in ApiVersions.",
         _check_versions),
    Rule("CR-2", "Correlation ids are unique per connection (the SASL exchange's requests exempt).",
         _check_correlation_ids),
    Rule("CR-3", "Producer sequence numbers are contiguous per partition and producer epoch "
                 "(a fresh epoch starts at 0; retries resend the same sequences).", _check_sequences),
    Rule("CR-4", "Fetch session epochs increase by one per request of the session.", _check_fetch_sessions),
    Rule("CR-5", "Share session epochs start at 0 (ShareFetch) and increase by one per ShareFetch or "
                 "ShareAcknowledge.", _check_share_sessions),
    Rule("CR-6", "RENEW acknowledgements are sent only when the broker advertised ShareFetch/ShareAcknowledge v2.",
         _check_renew_advertised),
    Rule("CR-7", "A renew-only ShareFetch has MaxWaitMs, MinBytes, MaxBytes and MaxRecords 0.",
         _check_renew_only_zeros),
    Rule("CR-8", "Transactional produce (TV1) goes only to partitions added to the transaction.",
         _check_txn_partitions),
    Rule("CR-9", "A share consumer acknowledges only records it holds (acquired by it and not yet acknowledged).",
         _check_acks_held),
    Rule("CR-10", "After a response with ThrottleTimeMs > 0 (KIP-219 versions), the client sends nothing on that "
                  "connection before the throttle time has passed.", _check_throttle_honoured),
    Rule("CR-11", "A share consumer renews a record again only after the broker answered its previous renewal "
                  "(the record comes back through poll in between).", _check_renew_after_answer),
)


def rule_by_id(rule_id: str) -> Rule:
    for r in RULES:
        if r.id == rule_id:
            return r
    raise KwireError(f"no client rule {rule_id!r}")


def check_frames(frames: Sequence[Frame], rules: Sequence[Rule] = RULES) -> list[Violation]:
    """Every violation of ``rules`` in ``frames``, rule by rule."""
    return [v for r in rules for v in r.run(frames)]


def check_recording(exchanges: Iterable[Any], rules: Sequence[Rule] = RULES) -> list[Violation]:
    """Every violation in a broker recording (``Broker.recorded()``)."""
    return check_frames(frames_from_exchanges(exchanges), rules)

"""Child program driving the Python clients: confluent-kafka, kafka-python, aiokafka.

``python -m kwire.conformance.clients._pyrunner CLIENT`` speaks the JSON-lines
protocol of ``kwire.conformance.clients.base``. Running in a child rather than in the
test process gives every call a hard timeout (the parent kills the child) and keeps a
client's threads and sockets out of pytest.
"""

from __future__ import annotations

import asyncio
import json
import queue
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

# classic-protocol timers: short so rebalances finish fast (6 s is the broker minimum).
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
POLL_S = 0.1

Cmd = dict[str, Any]
_lock = threading.Lock()


def emit(**event: Any) -> None:
    """Print one event line (callbacks may run on client threads)."""
    with _lock:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def _hex(b: bytes | None) -> str | None:
    return None if b is None else bytes(b).hex()


def _unhex(s: str | None) -> bytes | None:
    return None if s is None else bytes.fromhex(s)


def _headers_in(rec: Cmd) -> list[tuple[str, bytes | None]]:
    return [(str(k), _unhex(v)) for k, v in rec.get("headers") or ()]


def _record_event(
    partition: int | None, offset: int | None, key: Any, value: Any, headers: Any
) -> dict[str, Any]:
    return {
        "event": "record",
        "partition": partition,
        "offset": offset,
        "key": _hex(key),
        "value": _hex(value),
        "headers": [[k, _hex(v)] for k, v in (headers or ())],
    }


class StdinCommands:
    """Later stdin lines (``{"op": "stop"}``), read by a thread; EOF counts as stop."""

    def __init__(self) -> None:
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in sys.stdin:
            if line.strip():
                self._q.put(line)
        self._q.put(None)

    def next(self, timeout_s: float) -> Cmd | None:
        """The next command within ``timeout_s`` (None: none yet); EOF reads as ``{"op": "stop"}``."""
        try:
            line = self._q.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if line is None:
            self._q.put(None)  # keep EOF visible
            return {"op": "stop"}
        parsed: Cmd = json.loads(line)
        return parsed

    def stop_requested(self) -> bool:
        """Whether a stop command or EOF has arrived (never blocks)."""
        while True:
            try:
                line = self._q.get_nowait()
            except queue.Empty:
                return False
            if line is None or json.loads(line).get("op") == "stop":
                return True


class Assignment:
    """A member's current partitions, reported whole after every change."""

    def __init__(self) -> None:
        self.owned: set[int] = set()

    def add(self, partitions: Any) -> None:
        self.owned.update(int(p) for p in partitions)
        emit(event="assignment", partitions=sorted(self.owned))

    def remove(self, partitions: Any) -> None:
        self.owned.difference_update(int(p) for p in partitions)
        emit(event="assignment", partitions=sorted(self.owned))


def _unsecured_jws(principal: str) -> str:
    """An unsecured JWS (alg none) for OAUTHBEARER, as Kafka's unsecured login makes one."""
    import base64

    def enc(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{enc({'alg': 'none'})}.{enc({'sub': principal, 'iat': now, 'exp': now + 3600})}."


def _security(config: dict[str, Any]) -> dict[str, Any]:
    """The adapters' JSON stand-ins for objects: ``kwire_ssl_cafile`` → aiokafka's ssl_context,
    ``kwire_oauth_principal`` → kafka-python's token provider, ``kwire_oauth_principal_async``
    aiokafka's."""
    conf = dict(config)
    cafile = conf.pop("kwire_ssl_cafile", None)
    if cafile is not None:
        from aiokafka.helpers import create_ssl_context

        conf["ssl_context"] = create_ssl_context(cafile=cafile)
    principal = conf.pop("kwire_oauth_principal", None)
    if principal is not None:
        from kafka.net.sasl.oauth import AbstractTokenProvider

        class _Sync(AbstractTokenProvider):
            def token(self) -> str:
                return _unsecured_jws(principal)

        conf["sasl_oauth_token_provider"] = _Sync()
    async_principal = conf.pop("kwire_oauth_principal_async", None)
    if async_principal is not None:
        from aiokafka.abc import AbstractTokenProvider as AsyncProvider

        class _Async(AsyncProvider):
            async def token(self) -> str:
                return _unsecured_jws(async_principal)

        conf["sasl_oauth_token_provider"] = _Async()
    return conf


# ---- confluent-kafka ------------------------------------------------------------------


def _ck_consumer_conf(cmd: Cmd, group_id: str | None) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": cmd["bootstrap"],
        "client.id": "kwire-confluent-kafka",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest" if cmd.get("from_beginning", True) else "latest",
        # No group: assign() only; librdkafka still wants an id, which is never joined.
        "group.id": group_id or f"kwire-nogroup-{uuid.uuid4().hex[:8]}",
    }
    if group_id is not None:
        proto = cmd.get("group_protocol", "classic")
        conf["group.protocol"] = proto
        if proto == "classic":
            conf["session.timeout.ms"] = SESSION_TIMEOUT_MS
            conf["heartbeat.interval.ms"] = HEARTBEAT_INTERVAL_MS
    conf.update(_security(cmd.get("config") or {}))
    return conf


def _ck_producer_conf(cmd: Cmd) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": cmd["bootstrap"],
        "client.id": "kwire-confluent-kafka",
        "compression.type": cmd.get("compression", "none"),
        "acks": str(cmd.get("acks", -1)),
        "message.timeout.ms": int(cmd["timeout_ms"]),
    }
    if str(cmd.get("acks", -1)) != "-1":
        conf["enable.idempotence"] = False
    conf.update(_security(cmd.get("config") or {}))
    return conf


def _ck_record_kwargs(rec: Cmd) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"key": _unhex(rec.get("key")), "value": _unhex(rec.get("value"))}
    if rec.get("headers"):
        kwargs["headers"] = _headers_in(rec)
    if rec.get("partition") is not None:
        kwargs["partition"] = int(rec["partition"])
    return kwargs


def ck_produce(cmd: Cmd) -> None:
    from confluent_kafka import KafkaException, Producer

    timeout_s = cmd["timeout_ms"] / 1000
    p = Producer(_ck_producer_conf(cmd))
    results: list[tuple[int, int] | str | None] = [None] * len(cmd["records"])

    def on_delivery(i: int) -> Callable[[Any, Any], None]:
        def cb(err: Any, msg: Any) -> None:
            results[i] = str(err) if err is not None else (msg.partition(), msg.offset())

        return cb

    for i, rec in enumerate(cmd["records"]):
        p.produce(cmd["topic"], on_delivery=on_delivery(i), **_ck_record_kwargs(rec))
    left = p.flush(timeout_s)
    if left:
        raise KafkaException(f"{left} messages not delivered in {timeout_s}s")
    for r in results:
        if not isinstance(r, tuple):
            raise KafkaException(f"delivery failed: {r}")
        emit(event="produced", partition=r[0], offset=r[1])


def _report_delivery(seq: int) -> Callable[[Any, Any], None]:
    def cb(err: Any, msg: Any) -> None:
        if err is not None:
            emit(event="produce_failed", seq=seq, message=str(err))
        else:
            emit(event="produced", seq=seq, partition=msg.partition(), offset=msg.offset())

    return cb


def ck_producer(cmd: Cmd) -> None:
    from confluent_kafka import Producer

    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    stdin = StdinCommands()
    p = Producer(_ck_producer_conf(cmd))
    emit(event="ready")
    while time.monotonic() < deadline:
        p.poll(0)  # serve delivery callbacks
        c = stdin.next(POLL_S / 2)
        if c is None:
            continue
        if c.get("op") == "stop":
            break
        for rec in c.get("records") or ():
            p.produce(cmd["topic"], on_delivery=_report_delivery(int(rec["seq"])), **_ck_record_kwargs(rec))
    # Undelivered records at the deadline get no event: the parent counts missing acks.
    p.flush(max(deadline - time.monotonic(), 0.1))
    emit(event="closed")


def ck_consume(cmd: Cmd) -> None:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    group_id = cmd.get("group_id")
    c = Consumer(_ck_consumer_conf(cmd, group_id))
    try:
        if group_id is None:
            md = c.list_topics(cmd["topic"], timeout=max(deadline - time.monotonic(), 0.1))
            start = OFFSET_BEGINNING if cmd.get("from_beginning", True) else OFFSET_END
            parts = sorted(md.topics[cmd["topic"]].partitions)
            c.assign([TopicPartition(cmd["topic"], p, start) for p in parts])
        else:
            c.subscribe([cmd["topic"]])
        got = 0
        while got < cmd["count"] and time.monotonic() < deadline:
            msgs = c.consume(num_messages=cmd["count"] - got, timeout=POLL_S)
            for m in msgs:
                if m.error():
                    raise KafkaException(m.error())
                emit(**_record_event(m.partition(), m.offset(), m.key(), m.value(), m.headers()))
                got += 1
            if group_id is not None and msgs:
                c.commit(asynchronous=False)
        if cmd.get("positions"):
            # Where the consumer stands after the read (read_committed: past the markers it fetched).
            emit(event="positions", positions={tp.partition: tp.offset for tp in c.position(c.assignment())})
    finally:
        c.close()


def ck_member(cmd: Cmd) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    stdin = StdinCommands()
    owned = Assignment()
    c = Consumer(_ck_consumer_conf(cmd, cmd["group_id"]))
    c.subscribe(
        [cmd["topic"]],
        on_assign=lambda _c, parts: owned.add(tp.partition for tp in parts),
        on_revoke=lambda _c, parts: owned.remove(tp.partition for tp in parts),
        on_lost=lambda _c, parts: owned.remove(tp.partition for tp in parts),
    )
    emit(event="ready")
    try:
        while time.monotonic() < deadline and not stdin.stop_requested():
            msgs = c.consume(num_messages=100, timeout=POLL_S)
            good = []
            for m in msgs:
                if m.error():
                    raise KafkaException(m.error())
                good.append(m)
            if not good:
                continue
            # Commit exactly what this batch read, then report the records of the partitions whose
            # commit held: a reported record is a committed one. (A bare commit() covers only the
            # current assignment; a rebalance served inside consume() would leave the records of a
            # revoked partition reported but uncommitted, and their next owner would read them again.)
            ends: dict[tuple[str, int], int] = {}
            for m in good:
                ends[(str(m.topic()), int(m.partition() or 0))] = int(m.offset() or 0) + 1
            try:
                done = c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in ends.items()], asynchronous=False)
            except KafkaException as exc:
                emit(event="commit_failed", message=str(exc))
                continue
            held = {tp.partition for tp in done or () if not tp.error}
            for tp in done or ():
                if tp.error:
                    emit(event="commit_failed", message=f"partition {tp.partition}: {tp.error}")
            for m in good:
                if m.partition() in held:
                    emit(**_record_event(m.partition(), m.offset(), m.key(), m.value(), m.headers()))
    finally:
        c.close()
    emit(event="closed")


# ---- kafka-python ---------------------------------------------------------------------


def _kp_acks(acks: int) -> int | str:
    return "all" if acks == -1 else acks


def _kp_producer_conf(cmd: Cmd) -> dict[str, Any]:
    timeout_ms = int(cmd["timeout_ms"])
    codec = cmd.get("compression", "none")
    acks = int(cmd.get("acks", -1))
    conf: dict[str, Any] = {
        "bootstrap_servers": cmd["bootstrap"].split(","),
        "client_id": "kwire-kafka-python",
        "compression_type": None if codec == "none" else codec,
        "acks": _kp_acks(acks),
        "max_block_ms": timeout_ms,
        "request_timeout_ms": min(timeout_ms, 30000),
    }
    if acks != -1:
        conf["enable_idempotence"] = False
    conf.update(_security(cmd.get("config") or {}))
    return conf


def kp_produce(cmd: Cmd) -> None:
    from kafka import KafkaProducer

    timeout_ms = int(cmd["timeout_ms"])
    p = KafkaProducer(**_kp_producer_conf(cmd))
    try:
        futures = []
        for rec in cmd["records"]:
            part = rec.get("partition")
            futures.append(
                p.send(
                    cmd["topic"],
                    value=_unhex(rec.get("value")),
                    key=_unhex(rec.get("key")),
                    headers=_headers_in(rec),
                    partition=None if part is None else int(part),
                )
            )
        p.flush(timeout=timeout_ms / 1000)
        for f in futures:
            md = f.get(timeout=timeout_ms / 1000)
            emit(event="produced", partition=md.partition, offset=md.offset)
    finally:
        p.close(timeout=5)


def kp_producer(cmd: Cmd) -> None:
    from kafka import KafkaProducer

    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    stdin = StdinCommands()
    p = KafkaProducer(**_kp_producer_conf(cmd))
    emit(event="ready")
    try:
        while time.monotonic() < deadline:
            c = stdin.next(POLL_S)
            if c is None:
                continue
            if c.get("op") == "stop":
                break
            for rec in c.get("records") or ():
                seq = int(rec["seq"])
                part = rec.get("partition")
                f = p.send(
                    cmd["topic"],
                    value=_unhex(rec.get("value")),
                    key=_unhex(rec.get("key")),
                    headers=_headers_in(rec),
                    partition=None if part is None else int(part),
                )
                f.add_callback(
                    lambda md, seq=seq: emit(
                        event="produced", seq=seq, partition=md.partition, offset=md.offset
                    )
                )
                f.add_errback(lambda exc, seq=seq: emit(event="produce_failed", seq=seq, message=repr(exc)))
        p.flush(timeout=max(deadline - time.monotonic(), 0.1))
    finally:
        p.close(timeout=5)
    emit(event="closed")


def _kp_consumer(cmd: Cmd, group_id: str | None) -> Any:
    from kafka import KafkaConsumer

    conf: dict[str, Any] = {
        "bootstrap_servers": cmd["bootstrap"].split(","),
        "client_id": "kwire-kafka-python",
        "group_id": group_id,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest" if cmd.get("from_beginning", True) else "latest",
    }
    if group_id is not None:
        conf["session_timeout_ms"] = SESSION_TIMEOUT_MS
        conf["heartbeat_interval_ms"] = HEARTBEAT_INTERVAL_MS
    conf.update(_security(cmd.get("config") or {}))
    return KafkaConsumer(**conf)


def kp_consume(cmd: Cmd) -> None:
    from kafka import TopicPartition
    from kafka.errors import KafkaTimeoutError

    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    group_id = cmd.get("group_id")
    c = _kp_consumer(cmd, group_id)
    try:
        if group_id is None:
            parts = None
            # Metadata arrives asynchronously; poll for it within the deadline.
            while not parts:
                if time.monotonic() >= deadline:
                    raise KafkaTimeoutError(f"no partitions for {cmd['topic']}")
                parts = c.partitions_for_topic(cmd["topic"])
            tps = [TopicPartition(cmd["topic"], p) for p in sorted(parts)]
            c.assign(tps)
            if cmd.get("from_beginning", True):
                c.seek_to_beginning(*tps)
            else:
                c.seek_to_end(*tps)
        else:
            c.subscribe([cmd["topic"]])
        got = 0
        while got < cmd["count"] and time.monotonic() < deadline:
            batch = c.poll(timeout_ms=int(POLL_S * 1000), max_records=cmd["count"] - got)
            for recs in batch.values():
                for r in recs:
                    emit(**_record_event(r.partition, r.offset, r.key, r.value, r.headers))
                    got += 1
            if group_id is not None and batch:
                c.commit()
    finally:
        c.close()


def kp_member(cmd: Cmd) -> None:
    from kafka import ConsumerRebalanceListener
    from kafka.errors import KafkaError

    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    stdin = StdinCommands()
    owned = Assignment()

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            owned.remove(tp.partition for tp in revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            owned.add(tp.partition for tp in assigned)

    c = _kp_consumer(cmd, cmd["group_id"])
    c.subscribe([cmd["topic"]], listener=Listener())
    emit(event="ready")
    try:
        while time.monotonic() < deadline and not stdin.stop_requested():
            batch = c.poll(timeout_ms=int(POLL_S * 1000))
            if not batch:
                continue
            try:
                c.commit()
            except KafkaError as exc:
                emit(event="commit_failed", message=str(exc))
                continue
            for recs in batch.values():
                for r in recs:
                    emit(**_record_event(r.partition, r.offset, r.key, r.value, r.headers))
    finally:
        c.close()
    emit(event="closed")


# ---- aiokafka -------------------------------------------------------------------------


def _aio_producer(cmd: Cmd) -> Any:
    from aiokafka import AIOKafkaProducer

    codec = cmd.get("compression", "none")
    acks = int(cmd.get("acks", -1))
    conf: dict[str, Any] = {
        "bootstrap_servers": cmd["bootstrap"],
        "client_id": "kwire-aiokafka",
        "compression_type": None if codec == "none" else codec,
        "acks": _kp_acks(acks),
        "request_timeout_ms": min(int(cmd["timeout_ms"]), 30000),
    }
    if acks != -1:
        conf["enable_idempotence"] = False
    conf.update(_security(cmd.get("config") or {}))
    return AIOKafkaProducer(**conf)


async def _aio_produce(cmd: Cmd) -> None:
    timeout_s = cmd["timeout_ms"] / 1000
    p = _aio_producer(cmd)
    await asyncio.wait_for(p.start(), timeout_s)
    try:
        futures = []
        for rec in cmd["records"]:
            part = rec.get("partition")
            futures.append(
                await p.send(
                    cmd["topic"],
                    value=_unhex(rec.get("value")),
                    key=_unhex(rec.get("key")),
                    headers=_headers_in(rec),
                    partition=None if part is None else int(part),
                )
            )
        for f in futures:
            md = await asyncio.wait_for(f, timeout_s)
            emit(event="produced", partition=md.partition, offset=md.offset)
    finally:
        await p.stop()


async def _aio_producer_session(cmd: Cmd) -> None:
    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    stdin = StdinCommands()
    loop = asyncio.get_running_loop()
    p = _aio_producer(cmd)
    await asyncio.wait_for(p.start(), 30)
    emit(event="ready")
    pending: list[asyncio.Future[Any]] = []

    def report(seq: int) -> Callable[[asyncio.Future[Any]], None]:
        def done(f: asyncio.Future[Any]) -> None:
            if f.cancelled():
                emit(event="produce_failed", seq=seq, message="cancelled")
            elif f.exception() is not None:
                emit(event="produce_failed", seq=seq, message=repr(f.exception()))
            else:
                md = f.result()
                emit(event="produced", seq=seq, partition=md.partition, offset=md.offset)

        return done

    try:
        while time.monotonic() < deadline:
            c = await loop.run_in_executor(None, stdin.next, POLL_S)
            if c is None:
                continue
            if c.get("op") == "stop":
                break
            for rec in c.get("records") or ():
                part = rec.get("partition")
                f = await p.send(
                    cmd["topic"],
                    value=_unhex(rec.get("value")),
                    key=_unhex(rec.get("key")),
                    headers=_headers_in(rec),
                    partition=None if part is None else int(part),
                )
                f.add_done_callback(report(int(rec["seq"])))
                pending.append(f)
        if pending:
            await asyncio.wait(pending, timeout=max(deadline - time.monotonic(), 0.1))
    finally:
        await p.stop()
    emit(event="closed")


def _aio_consumer(cmd: Cmd, group_id: str | None) -> Any:
    from aiokafka import AIOKafkaConsumer

    conf: dict[str, Any] = {
        "bootstrap_servers": cmd["bootstrap"],
        "client_id": "kwire-aiokafka",
        "group_id": group_id,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest" if cmd.get("from_beginning", True) else "latest",
    }
    if group_id is not None:
        conf["session_timeout_ms"] = SESSION_TIMEOUT_MS
        conf["heartbeat_interval_ms"] = HEARTBEAT_INTERVAL_MS
    conf.update(_security(cmd.get("config") or {}))
    return AIOKafkaConsumer(**conf)


async def _aio_consume(cmd: Cmd) -> None:
    from aiokafka import TopicPartition

    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    group_id = cmd.get("group_id")
    c = _aio_consumer(cmd, group_id)
    await asyncio.wait_for(c.start(), max(deadline - time.monotonic(), 0.1))
    try:
        if group_id is None:
            parts = None
            while not parts:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"no partitions for {cmd['topic']}")
                parts = c.partitions_for_topic(cmd["topic"])
                if not parts:
                    await c._client.force_metadata_update()  # public API has no metadata wait
            tps = [TopicPartition(cmd["topic"], p) for p in sorted(parts)]
            c.assign(tps)
            if cmd.get("from_beginning", True):
                await c.seek_to_beginning(*tps)
            else:
                await c.seek_to_end(*tps)
        else:
            c.subscribe([cmd["topic"]])
        got = 0
        while got < cmd["count"] and time.monotonic() < deadline:
            batch = await c.getmany(timeout_ms=int(POLL_S * 1000), max_records=cmd["count"] - got)
            for recs in batch.values():
                for r in recs:
                    emit(**_record_event(r.partition, r.offset, r.key, r.value, r.headers))
                    got += 1
            if group_id is not None and batch:
                await c.commit()
    finally:
        await c.stop()


async def _aio_member(cmd: Cmd) -> None:
    from aiokafka import ConsumerRebalanceListener
    from aiokafka.errors import KafkaError

    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    stdin = StdinCommands()
    owned = Assignment()

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            owned.remove(tp.partition for tp in revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            owned.add(tp.partition for tp in assigned)

    c = _aio_consumer(cmd, cmd["group_id"])
    c.subscribe([cmd["topic"]], listener=Listener())
    await asyncio.wait_for(c.start(), 30)
    emit(event="ready")
    try:
        while time.monotonic() < deadline and not stdin.stop_requested():
            batch = await c.getmany(timeout_ms=int(POLL_S * 1000))
            if not batch:
                continue
            try:
                # Exactly what this batch read: aiokafka rebalances in a background task, so a
                # bare commit() may already cover a newer assignment than the batch came from.
                await c.commit({tp: recs[-1].offset + 1 for tp, recs in batch.items() if recs})
            except KafkaError as exc:  # IllegalStateError too: a partition no longer assigned
                emit(event="commit_failed", message=str(exc))
                continue
            for recs in batch.values():
                for r in recs:
                    emit(**_record_event(r.partition, r.offset, r.key, r.value, r.headers))
    finally:
        await c.stop()
    emit(event="closed")


# ---- transactional producers (op txn_producer) -----------------------------------------


def _txn_loop(cmd: Cmd, begin: Callable[[], None], send: Callable[[list[Cmd]], list[tuple[int, int]]],
              commit: Callable[[], None], abort: Callable[[], None],
              send_offsets: Callable[[str, list[tuple[str, int, int]]], None] | None = None) -> None:
    """Serve begin/send/send_offsets/commit/abort commands one at a time, each answered with a
    ``txn`` event (``txn_failed`` with the client's message when the step raised).
    ``send_offsets(group, [(topic, partition, offset)])`` is the client's sendOffsetsToTransaction."""
    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    stdin = StdinCommands()
    emit(event="ready")
    steps: dict[str, Callable[[], None]] = {"begin": begin, "commit": commit, "abort": abort}
    while time.monotonic() < deadline:
        c = stdin.next(POLL_S)
        if c is None:
            continue
        op = str(c.get("op"))
        if op == "stop":
            break
        try:
            if op == "send":
                recs = list(c.get("records") or ())
                for rec, (part, off) in zip(recs, send(recs), strict=True):
                    emit(event="produced", seq=rec.get("seq"), partition=part, offset=off)
            elif op == "send_offsets":
                if send_offsets is None:
                    raise ValueError("this driver has no send_offsets")
                send_offsets(str(c["group"]), [(str(o["topic"]), int(o["partition"]), int(o["offset"]))
                                               for o in c.get("offsets") or ()])
            else:
                steps[op]()
            emit(event="txn", step=op)
        except Exception as exc:  # noqa: BLE001 - the parent needs the client's own failure
            emit(event="txn_failed", step=op, error=type(exc).__name__, message=str(exc))


def ck_txn_producer(cmd: Cmd) -> None:
    from confluent_kafka import KafkaException, Producer

    timeout_s = min(cmd["timeout_ms"] / 1000, 60.0)
    conf = _ck_producer_conf(cmd)
    conf["transactional.id"] = cmd["transactional_id"]
    conf["message.timeout.ms"] = min(int(conf["message.timeout.ms"]), 60000)  # <= transaction.timeout.ms
    p = Producer(conf)
    p.init_transactions(timeout_s)

    def send(recs: list[Cmd]) -> list[tuple[int, int]]:
        out: list[tuple[int, int] | str | None] = [None] * len(recs)

        def cb(i: int) -> Callable[[Any, Any], None]:
            def done(err: Any, msg: Any) -> None:
                out[i] = str(err) if err is not None else (msg.partition(), msg.offset())
            return done

        for i, rec in enumerate(recs):
            p.produce(cmd["topic"], on_delivery=cb(i), **_ck_record_kwargs(rec))
        if p.flush(timeout_s):
            raise KafkaException(f"records not delivered in {timeout_s}s")
        if not all(isinstance(r, tuple) for r in out):
            raise KafkaException(f"delivery failed: {out}")
        return [r for r in out if isinstance(r, tuple)]

    def send_offsets(group: str, offsets: list[tuple[str, int, int]]) -> None:
        from confluent_kafka import Consumer, TopicPartition

        # the group's metadata comes from a consumer of that group (librdkafka has no other way)
        c = Consumer({"bootstrap.servers": cmd["bootstrap"], "group.id": group})
        try:
            meta = c.consumer_group_metadata()
        finally:
            c.close()
        p.send_offsets_to_transaction([TopicPartition(t, part, off) for t, part, off in offsets], meta, timeout_s)

    _txn_loop(cmd, p.begin_transaction, send, lambda: p.commit_transaction(timeout_s),
              lambda: p.abort_transaction(timeout_s), send_offsets)
    p.flush(1)
    emit(event="closed")


def kp_txn_producer(cmd: Cmd) -> None:
    from kafka import KafkaProducer

    timeout_s = min(cmd["timeout_ms"] / 1000, 60.0)
    conf = _kp_producer_conf(cmd)
    conf["transactional_id"] = cmd["transactional_id"]
    p = KafkaProducer(**conf)
    p.init_transactions()

    def send(recs: list[Cmd]) -> list[tuple[int, int]]:
        futures = []
        for rec in recs:
            part = rec.get("partition")
            futures.append(p.send(cmd["topic"], value=_unhex(rec.get("value")), key=_unhex(rec.get("key")),
                                  headers=_headers_in(rec), partition=None if part is None else int(part)))
        p.flush(timeout=timeout_s)
        return [(md.partition, md.offset) for md in (f.get(timeout=timeout_s) for f in futures)]

    def send_offsets(group: str, offsets: list[tuple[str, int, int]]) -> None:
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        p.send_offsets_to_transaction({TopicPartition(t, part): OffsetAndMetadata(off, "", -1)
                                       for t, part, off in offsets}, group)

    try:
        _txn_loop(cmd, p.begin_transaction, send, p.commit_transaction, p.abort_transaction, send_offsets)
    finally:
        p.close(timeout=5)
    emit(event="closed")


async def _aio_txn_producer(cmd: Cmd) -> None:
    conf_cmd = dict(cmd)
    conf_cmd["config"] = {**(cmd.get("config") or {}), "transactional_id": cmd["transactional_id"]}
    p = _aio_producer(conf_cmd)
    await asyncio.wait_for(p.start(), 30)  # start() runs InitProducerId for a transactional producer
    loop = asyncio.get_running_loop()

    async def send(recs: list[Cmd]) -> list[tuple[int, int]]:
        futures = []
        for rec in recs:
            part = rec.get("partition")
            futures.append(await p.send(cmd["topic"], value=_unhex(rec.get("value")), key=_unhex(rec.get("key")),
                                        headers=_headers_in(rec), partition=None if part is None else int(part)))
        out = []
        for f in futures:
            md = await asyncio.wait_for(f, 30)
            out.append((md.partition, md.offset))
        return out

    async def begin() -> None:
        await p.begin_transaction()  # aiokafka's begin is a coroutine

    def sync(coro_fn: Callable[..., Any]) -> Callable[..., Any]:
        # _txn_loop is synchronous: it runs in a worker thread and hands each step to this loop.
        return lambda *a: asyncio.run_coroutine_threadsafe(coro_fn(*a), loop).result(60)

    async def send_offsets(group: str, offsets: list[tuple[str, int, int]]) -> None:
        from aiokafka.structs import TopicPartition

        await p.send_offsets_to_transaction({TopicPartition(t, part): off for t, part, off in offsets}, group)

    try:
        await loop.run_in_executor(None, _txn_loop, cmd, sync(begin), sync(send),
                                   sync(p.commit_transaction), sync(p.abort_transaction), sync(send_offsets))
    finally:
        await p.stop()
    emit(event="closed")


OPS: dict[str, dict[str, Callable[[Cmd], None]]] = {
    "confluent_kafka": {
        "produce": ck_produce,
        "consume": ck_consume,
        "member": ck_member,
        "producer": ck_producer,
        "txn_producer": ck_txn_producer,
    },
    "kafka_python": {
        "produce": kp_produce,
        "consume": kp_consume,
        "member": kp_member,
        "producer": kp_producer,
        "txn_producer": kp_txn_producer,
    },
    "aiokafka": {
        "produce": lambda c: asyncio.run(_aio_produce(c)),
        "consume": lambda c: asyncio.run(_aio_consume(c)),
        "member": lambda c: asyncio.run(_aio_member(c)),
        "producer": lambda c: asyncio.run(_aio_producer_session(c)),
        "txn_producer": lambda c: asyncio.run(_aio_txn_producer(c)),
    },
}


def main(argv: list[str]) -> int:
    """Run one command for the client named in ``argv[0]``."""
    if not argv or argv[0] not in OPS or argv[0] in ("-h", "--help"):
        print(f"usage: python -m kwire.conformance.clients._pyrunner {{{'|'.join(OPS)}}} < command.json")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        cmd = json.loads(sys.stdin.readline())
        op = OPS[argv[0]][cmd["op"]]
        op(cmd)
        if cmd["op"] not in ("member", "producer", "txn_producer"):
            emit(event="done")
        return 0
    except Exception as exc:  # noqa: BLE001 - the parent needs every failure as an event
        traceback.print_exc()  # stderr: its tail shows in the parent's diagnostics
        emit(event="error", error=type(exc).__name__, message=str(exc))
        return 1


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    # Client threads (librdkafka, kafka-python's IO thread) must not delay exit.
    import os

    os._exit(code)

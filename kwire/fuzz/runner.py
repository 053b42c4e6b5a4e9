"""The fuzz loop: mutated and generated requests against an in-process kwire broker.

What counts as a finding:

* **crash**: a handler exception that reaches the broker's last-resort handler (anything the
  ``kwire.broker`` logger reports with a traceback), or a response whose correlation id is
  not the request's;
* **hang**: a request with neither an answer nor a close within ``hang_s`` while the broker
  holds nothing for it with a deadline (a long poll or a rebalance the broker parked with a
  deadline is legitimate: the fuzzer drops that connection instead); also a canary connection
  (ApiVersions + Metadata on its own socket every ``canary_every`` frames) that is not answered
  within ``hang_s``: one bad connection must not stall the broker;
* **lost**: a record the ledger connection produced with acks=all and got an offset for, missing
  or different when read back at the end (unless retention or DeleteRecords moved the log start
  past it).

Most frames go straight into a second broker core in this thread (``BrokerCore.handle`` on a
manual clock, no sockets: ``core_share`` of them, 99.5%, each about 15x cheaper); the rest go over
real sockets to the running broker, with pipelining, slow writers, lying sizes and dropped
connections. The same findings in-process: a traceback in the broker's log or an answer with
another correlation id is a crash; a request that asked for no wait, deferred and still not
answered after the core's clock has moved ``hang_s`` past it (every timer due by then fired), is a
hang; the canary (ApiVersions + Metadata on a connection of its own) must be answered at once;
the ledger (acks=all) is read back at the end from each broker.

Each crash and hang is replayed alone on a fresh connection, minimised (shorter and simpler
bytes that still trip it) and saved under ``out`` as a fixture (``<kind>-<api>-v<N>-<hash>.bin``
and ``.json``, the recording.py sidecar format plus what it tripped), ready for ``kwire replay``
and for ``fixtures/fuzz/`` with its regression test.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import socket
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kwire.conformance.wire_client import WireClient, WireClosed
from kwire.errors import KwireError
from kwire.fuzz.mutators import Seed, default_seeds, fixture_seeds, mutate, payload_of

__all__ = ["FuzzConfig", "FuzzReport", "Finding", "run_fuzz", "save_finding"]

_SIZE = struct.Struct(">i")
_SIZE_H = struct.Struct(">h")
# Hypothesis-drawn requests kept as mutation seeds, at most
_DRAWN_SEEDS = 500
# How long to wait for an answer before asking the broker whether it parked the request.
_FIRST_WAIT_S = 0.25
# Minimisation attempts per finding (each is one connection and one request).
_MINIMISE_TRIES = 300
_MINIMISE_TRIES_HANG = 12


@dataclass(slots=True)
class FuzzConfig:
    seconds: float | None = None
    budget: int | None = None
    seed: int = 0
    out: Path | None = None
    fixtures: Path | None = None
    hang_s: float = 5.0
    canary_every: int = 250
    ledger_every: int = 100
    hypothesis_share: float = 0.001  # fraction of frames drawn by Hypothesis (each also joins the mutation seeds)
    sequence_share: float = 0.1  # fraction of rounds that walk a stateful sequence (kwire.fuzz.sequences)
    core_share: float = 0.995  # fraction of frames (and sequences) sent into the in-process core, not over sockets
    memory_limit_mb: float = 256.0  # growth of the resident memory after warm-up that counts as a finding
    progress: Callable[[FuzzReport], None] | None = None
    broker_setup: Callable[[Any], None] | None = None  # tests: install faults before fuzzing


@dataclass(slots=True)
class Finding:
    kind: str  # "crash" | "hang" | "lost" | "canary"
    detail: str
    payload: bytes = b""
    origin: str = ""
    saved: Path | None = None


@dataclass(slots=True)
class FuzzReport:
    frames: int = 0
    crashes: int = 0
    hangs: int = 0
    lost: int = 0
    acked: int = 0
    elapsed_s: float = 0.0
    memory_growth_mb: float = 0.0  # highest resident-memory growth after warm-up (broker and fuzzer share the process)
    findings: list[Finding] = field(default_factory=list)

    def summary(self) -> str:
        return f"fuzz: frames: {self.frames}, crashes: {self.crashes}, hangs: {self.hangs}, lost: {self.lost}"


class _ErrorLog(logging.Handler):
    """Counts tracebacks the broker logs: each is a bug that reached a last-resort handler."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.count += 1
            exc = record.exc_info[1]
            self.last = f"{record.getMessage()}: {type(exc).__name__}: {exc}"


def _with_corr(payload: bytes, corr: int) -> bytes:
    if len(payload) < 8:
        return payload
    return payload[:4] + struct.pack(">i", corr) + payload[8:]


# Request fields that ask the broker to hold the request: a long poll, a rebalance, a timeout.
_WAIT_FIELDS = ("max_wait_ms", "rebalance_timeout_ms", "session_timeout_ms", "timeout_ms")


def _lenient_body(payload: bytes) -> Any:
    """The request body as the broker reads it (trailing bytes ignored); None if undecodable."""
    from kwire.protocol import peek_request_header, request_header_version, schema_class
    from kwire.protocol.registry import api_info

    try:
        key, version, _ = peek_request_header(payload)
        header, pos = schema_class("RequestHeader").decode_from(payload, 0, request_header_version(key, version))
        body, _ = api_info(key).request_class.decode_from(memoryview(payload)[pos:], 0, version)
    except Exception:  # noqa: BLE001 - undecodable: the broker closes, which counts as an answer
        return None
    return body


def _declared_wait_ms(payload: bytes) -> int:
    body = _lenient_body(payload)
    if body is None:
        return 0
    waits = [getattr(body, f, 0) for f in _WAIT_FIELDS]
    # A negative wait is "the default" to some handlers, or a value they reject; both may park.
    return max([abs(int(w)) for w in waits if isinstance(w, int)] or [0])


def _expects_answer(payload: bytes) -> bool:
    """False for a request the broker must not answer (Produce with acks=0)."""
    if len(payload) < 4 or struct.unpack(">h", payload[:2])[0] != 0:
        return True
    body = _lenient_body(payload)
    return body is None or int(body.acks) != 0


class _Fuzzer:
    def __init__(self, cfg: FuzzConfig, broker: Any, errors: _ErrorLog) -> None:
        self.cfg = cfg
        self.broker = broker
        self.errors = errors
        self.rng = random.Random(cfg.seed)
        self.report = FuzzReport()
        self.conn: socket.socket | None = None
        self.corr = 1
        self.ledger_topic = f"fuzz-ledger-{uuid.UUID(int=self.rng.getrandbits(128)).hex[:12]}"
        self.ledger: WireClient | None = None
        self.ledger_acks: list[tuple[int, int, bytes]] = []  # (partition, offset, value)
        self.ledger_seq = 0
        self.canary: WireClient | None = None
        # The frame sent before the current one on the fuzz connection: a late answer is its fault.
        self.previous: tuple[bytes, str, str] | None = None

    # --- connections ------------------------------------------------------------------------
    def _connect(self) -> socket.socket:
        host, port = self.broker.bootstrap.split(",")[0].rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=self.cfg.hang_s)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def _drop(self) -> None:
        self.previous = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _parked(self) -> bool:
        return bool(self.broker.parked_requests())

    def _read_answer(self, sock: socket.socket, corr: int, deadline: float, payload: bytes = b"") -> str:
        """'answer', 'closed', 'parked' or 'hang' for the request just sent.

        'parked': the broker holds the request and the request itself asked for a wait (a long
        poll, a rebalance); a request that asked for none and is not answered by ``deadline``
        is a hang, parked or not.
        """
        asked = False
        buf = b""
        while True:
            now = time.monotonic()
            if now >= deadline:
                return "hang"
            wait = min(deadline - now, _FIRST_WAIT_S if not asked else deadline - now)
            sock.settimeout(max(wait, 0.001))
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                if not asked:
                    asked = True
                    if _declared_wait_ms(payload) > 0 and self._parked():
                        return "parked"
                continue
            except OSError:
                return "closed"
            if not chunk:
                return "closed"
            buf += chunk
            if len(buf) >= 8:
                size = _SIZE.unpack_from(buf, 0)[0]
                if len(buf) >= 4 + size:
                    got = _SIZE.unpack_from(buf, 4)[0]
                    if got != corr:
                        return f"wrong correlation id {got} for {corr}"
                    return "answer"

    # --- one frame ----------------------------------------------------------------------------
    def send(self, payload: bytes, origin: str, transport: str = "plain") -> None:
        """Send one payload on the fuzz connection and judge what happens."""
        self.report.frames += 1
        self.corr = (self.corr + 1) & 0x7FFFFFFF
        payload = _with_corr(payload, self.corr)
        before = self.errors.count
        if self.conn is None:
            self.conn = self._connect()
        sock = self.conn
        framed = _SIZE.pack(len(payload)) + payload
        try:
            if transport == "lying_size":
                # A size that does not match: the broker reads a different frame boundary or waits.
                lie = len(payload) + self.rng.choice((-3, -1, 1, 7, 1 << 20, -len(payload) - 5))
                sock.sendall(_SIZE.pack(lie) + payload)
                self._settle(before, payload, origin)
                self._drop()
                return
            if transport == "drop_mid_frame":
                sock.sendall(framed[: self.rng.randrange(1, len(framed))])
                self._drop()
                self._settle(before, payload, origin)
                return
            if transport == "slow_writer":
                for i in range(0, len(framed), 3):
                    sock.sendall(framed[i : i + 3])
            elif transport == "pipelined":
                # This frame plus a copy right behind it in one write: answers must come in order.
                second = _with_corr(payload, (self.corr + 1) & 0x7FFFFFFF)
                sock.sendall(framed + _SIZE.pack(len(second)) + second)
            else:
                sock.sendall(framed)
        except OSError:
            self._drop()
            self._settle(before, payload, origin)
            return
        if not _expects_answer(payload):
            self.previous = (payload, origin, transport)
            self._settle(before, payload, origin)
            return
        outcome = self._read_answer(sock, self.corr, time.monotonic() + self.cfg.hang_s, payload)
        if outcome == "answer" and transport == "pipelined":
            self.corr = (self.corr + 1) & 0x7FFFFFFF
            # Whatever is left of the first answer was consumed with the second's prefix; start clean.
            self._drop()
        elif outcome in ("closed", "parked"):
            self._drop()
        elif outcome == "hang":
            self._drop()
            self._finding("hang", f"no answer and no close within {self.cfg.hang_s}s", payload, origin)
        elif outcome != "answer":
            prev = self.previous
            self._drop()
            if prev is not None and outcome.startswith("wrong correlation"):
                # An answer to the frame before: the broker answered what it must not (acks=0).
                self._finding("crash", f"{outcome}: the previous frame ({prev[2]}) was answered", prev[0], prev[1])
            else:
                self._finding("crash", outcome, payload, origin)
        self.previous = (payload, origin, transport) if self.conn is not None else None
        self._settle(before, payload, origin)

    def _settle(self, before: int, payload: bytes, origin: str) -> None:
        if self.errors.count > before:
            self._finding("crash", self.errors.last, payload, origin)

    def _finding(self, kind: str, detail: str, payload: bytes, origin: str,
                 trips: Callable[[str, bytes], bool] | None = None) -> None:
        if kind == "crash":
            self.report.crashes += 1
        elif kind in ("hang", "canary"):
            self.report.hangs += 1
        finding = Finding(kind, detail, payload, origin)
        self.report.findings.append(finding)
        if kind in ("crash", "hang") and payload:
            finding.payload = self._minimise(kind, payload, trips or self._trips)
            if self.cfg.out is not None:
                finding.saved = save_finding(self.cfg.out, finding, self.cfg.seed)

    # --- minimisation ---------------------------------------------------------------------------
    def _trips(self, kind: str, payload: bytes) -> bool:
        """Whether ``payload`` alone, on a fresh connection, trips the same kind of finding."""
        before = self.errors.count
        try:
            s = self._connect()
        except OSError:
            return False
        try:
            s.sendall(_SIZE.pack(len(payload)) + payload)
            corr = _SIZE.unpack_from(payload, 4)[0] if len(payload) >= 8 else 0
            outcome = self._read_answer(s, corr, time.monotonic() + self.cfg.hang_s, payload) \
                if _expects_answer(payload) else "none"
        except OSError:
            outcome = "closed"
        finally:
            s.close()
        if kind == "hang":
            return outcome == "hang"
        return self.errors.count > before or outcome.startswith("wrong correlation")

    def _minimise(self, kind: str, payload: bytes, trips: Callable[[str, bytes], bool]) -> bytes:
        if not trips(kind, payload):
            return payload  # needs the frames before it on its connection; saved as found
        # A hang costs up to hang_s per try: fewer of them.
        limit = _MINIMISE_TRIES if kind == "crash" else _MINIMISE_TRIES_HANG
        best, tries = payload, 0
        chunk = max(1, len(best) // 2)
        while chunk >= 1 and tries < limit:
            progressed = False
            i = 8  # keep the header's key, version and correlation id
            while i < len(best) and tries < limit:
                cand = best[:i] + best[i + chunk :]
                tries += 1
                if trips(kind, cand):
                    best, progressed = cand, True
                else:
                    i += chunk
            if not progressed:
                chunk //= 2
        # Simpler bytes: zero what can be zeroed.
        for i in range(8, len(best)):
            if tries >= limit or best[i] == 0:
                continue
            cand = best[:i] + b"\0" + best[i + 1 :]
            tries += 1
            if trips(kind, cand):
                best = cand
        return best

    # --- canary and ledger ----------------------------------------------------------------------
    def check_canary(self) -> None:
        try:
            if self.canary is None:
                self.canary = WireClient(self.broker.bootstrap, timeout_s=self.cfg.hang_s).connect()
            self.canary.request(18, 3, {"ClientSoftwareName": "canary", "ClientSoftwareVersion": "1"})
            self.canary.request(3, 12, {"Topics": None, "AllowAutoTopicCreation": False,
                                        "IncludeTopicAuthorizedOperations": False})
        except (TimeoutError, WireClosed, OSError) as exc:
            if self.canary is not None:
                self.canary.close()
            self.canary = None
            self._finding("canary", f"the canary connection stalled or was dropped: {exc}", b"", "canary")

    def produce_ledger(self) -> None:
        from kwire.records import BatchBuilder

        value = f"ledger-{self.cfg.seed}-{self.ledger_seq}".encode()
        self.ledger_seq += 1
        b = BatchBuilder()
        b.append(value, key=b"k")
        part = self.ledger_seq % 2
        body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 5000, "TopicData": [
            {"Name": self.ledger_topic, "PartitionData": [{"Index": part, "Records": b.build().hex()}]}]}
        try:
            if self.ledger is None:
                self.ledger = WireClient(self.broker.bootstrap, timeout_s=self.cfg.hang_s).connect()
            resp = self.ledger.request(0, 9, body)
        except (TimeoutError, WireClosed, OSError):
            if self.ledger is not None:
                self.ledger.close()
            self.ledger = None
            return  # not acknowledged: nothing promised
        pr = resp.responses[0].partition_responses[0]
        if pr.error_code == 0:
            self.ledger_acks.append((part, int(pr.base_offset), value))
            self.report.acked += 1

    def verify_ledger(self) -> None:
        if not self.ledger_acks:
            return
        with WireClient(self.broker.bootstrap, timeout_s=max(self.cfg.hang_s, 10)) as c:
            def fetch(part: int, offset: int) -> Any:
                return c.request(1, 11, {
                    "ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 0, "MaxBytes": 1 << 22, "IsolationLevel": 0,
                    "SessionId": 0, "SessionEpoch": -1, "RackId": "", "ForgottenTopicsData": [],
                    "Topics": [{"Topic": self.ledger_topic, "Partitions": [{
                        "Partition": part, "CurrentLeaderEpoch": -1, "FetchOffset": offset,
                        "LogStartOffset": -1, "PartitionMaxBytes": 1 << 22}]}]}).responses[0].partitions[0]

            _check_ledger(self.report, self.ledger_acks, fetch, self.ledger_topic, "")


def _check_ledger(report: FuzzReport, acks: list[tuple[int, int, bytes]], fetch: Callable[[int, int], Any],
                  topic: str, where: str) -> None:
    """Read both ledger partitions back from offset 0 with ``fetch(partition, offset)`` (the Fetch
    v11 response's partition) and count each acknowledged record missing or changed as lost;
    ``where`` goes after the offset in a finding's detail."""
    from kwire.records import iter_batches

    found: dict[tuple[int, int], bytes | None] = {}
    start: dict[int, int] = {}
    for part in (0, 1):
        offset = 0
        while True:
            p = fetch(part, offset)
            start[part] = int(p.log_start_offset)
            if p.error_code == 1:  # OFFSET_OUT_OF_RANGE: begin at the log start
                offset = max(offset, int(p.log_start_offset))
                continue
            got = 0
            for batch in iter_batches(bytes(p.records or b"")):
                for rec in batch.records():
                    if rec.offset >= offset:
                        found[(part, rec.offset)] = None if rec.value is None else bytes(rec.value)
                        offset = rec.offset + 1
                        got += 1
            if got == 0 or offset >= int(p.high_watermark):
                break
    for part, off, value in acks:
        if off < start.get(part, 0):
            continue  # removed by retention or DeleteRecords, which fuzzed frames may ask for
        if found.get((part, off)) != value:
            report.lost += 1
            report.findings.append(Finding(
                "lost", f"{topic}-{part} offset {off}{where}: acknowledged {value!r}, "
                        f"read back {found.get((part, off))!r}"))


# In-process: a request that asks for a longer wait than this is dropped as legitimately parked
# (the socket loop does the same with any wait); shorter ones are run to their end on the clock.
_CORE_MAX_WAIT_MS = 60_000
# The core's clock moves this much every _CORE_TICK_FRAMES frames, so timers (session timeouts,
# transaction timeouts, retention, lock expiry) fire during a run as they do in wall time.
_CORE_TICK_MS = 50
_CORE_TICK_FRAMES = 64


def _core_broker(config: Any) -> Any:
    """A ``kwire.control.Broker`` whose core this thread drives: no server thread, no sockets, a
    manual clock. Its control API (hooks, faults, topics, transactions) runs here directly."""
    from kwire.control import Broker

    class CoreBroker(Broker):
        def call(self, fn: Callable[[], Any]) -> Any:
            return fn()

        def _peek(self, fn: Callable[[], Any]) -> Any:
            return fn()

        def start(self, timeout: float = 30.0) -> CoreBroker:
            return self

        def stop(self) -> None:
            self.core.close()

    return CoreBroker(config, manual_clock=True)


class _CoreTarget:
    """Frames handed to ``BrokerCore.handle`` on connections of a core in this thread."""

    def __init__(self, fz: _Fuzzer, broker: Any) -> None:
        from kwire.protocol import encode_request
        from kwire.protocol.messages.api_versions import ApiVersionsRequest
        from kwire.protocol.messages.metadata import MetadataRequest

        self.fz = fz
        self.broker = broker
        self.core = broker.core
        self.node = min(self.core.cluster.nodes)
        self.conn: Any = None
        self.corr = 1
        self.frames = 0
        self.ledger_conn: Any = None
        self.ledger_acks: list[tuple[int, int, bytes]] = []
        self.canary_frames = (
            encode_request(ApiVersionsRequest(client_software_name="canary", client_software_version="1"), 3,
                           correlation_id=7, client_id="canary", size_prefix=False),
            encode_request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12,
                           correlation_id=8, client_id="canary", size_prefix=False),
        )

    def _drop(self) -> None:
        if self.conn is not None:
            self.core.disconnect(self.conn.conn_id)
            self.conn = None

    def _answer(self, conn_id: int) -> tuple[str, bytes | None]:
        """What the outbox holds for ``conn_id``: ('answer', data), ('closed', None) or ('none', None).
        Everything else in it is for connections that are gone (a fuzz connection dropped while
        parked) and is discarded, as the edge discards answers to closed sockets."""
        from kwire.protocol.splice import as_bytes

        found: tuple[str, bytes | None] = ("none", None)
        for cid, data in self.core.take_outbox():
            if cid == conn_id and found[0] == "none":
                found = ("closed", None) if data is None else ("answer", as_bytes(data))
        return found

    def _run(self, conn: Any, payload: bytes, corr: int) -> str:
        """'answer', 'closed', 'parked', 'hang', 'silent' (acks=0 answered by nothing) or a
        correlation-id complaint, for ``payload`` on ``conn``."""
        from kwire.protocol.splice import as_bytes

        out = self.core.handle(conn, payload)
        kind = out.kind
        if kind == "send":
            data = as_bytes(out.data)
        elif kind == "close":
            return "closed"
        elif kind == "none":
            return "silent"
        else:  # deferred: run the clock to the end of what the request asked for, then past it
            wait = _declared_wait_ms(payload)
            if wait > _CORE_MAX_WAIT_MS:
                return "parked"
            self.core.advance(wait + int(self.fz.cfg.hang_s * 1000))
            got, answer = self._answer(conn.conn_id)
            if got == "closed":
                return "closed"
            if got == "none":
                return "parked" if wait > 0 else "hang"
            assert answer is not None
            data = answer
        if len(data) < 4:
            return f"an answer of {len(data)} bytes"
        got_corr = _SIZE.unpack_from(data, 0)[0]
        if got_corr != corr:
            return f"wrong correlation id {got_corr} for {corr}"
        return "answer"

    def send(self, payload: bytes, origin: str) -> None:
        fz = self.fz
        fz.report.frames += 1
        self.frames += 1
        if self.frames % _CORE_TICK_FRAMES == 0:
            self.core.advance(_CORE_TICK_MS)
            self.core.take_outbox()  # answers to connections already dropped
        self.corr = (self.corr + 1) & 0x7FFFFFFF
        payload = _with_corr(payload, self.corr)
        before = fz.errors.count
        if self.conn is None:
            self.conn = self.core.connect(self.node)
        outcome = self._run(self.conn, payload, self.corr)
        if outcome == "silent":
            if _expects_answer(payload):
                self._drop()
                fz._finding("hang", "no answer to a request that needs one (the core sent nothing)",
                            payload, origin, self._trips)
        elif outcome == "answer":
            if len(payload) >= 2 and payload[1] == 0 and payload[0] == 0 and not _expects_answer(payload):
                self._drop()
                fz._finding("crash", "an answer to a Produce with acks=0", payload, origin, self._trips)
        elif outcome in ("closed", "parked"):
            self._drop()
        elif outcome == "hang":
            self._drop()
            fz._finding("hang", f"deferred and not answered {fz.cfg.hang_s}s (broker clock) after its wait",
                        payload, origin, self._trips)
        else:
            self._drop()
            fz._finding("crash", outcome, payload, origin, self._trips)
        if fz.errors.count > before:
            fz._finding("crash", fz.errors.last, payload, origin, self._trips)

    def _trips(self, kind: str, payload: bytes) -> bool:
        """Whether ``payload`` alone, on a fresh in-process connection, trips ``kind``."""
        before = self.fz.errors.count
        conn = self.core.connect(self.node)
        corr = _SIZE.unpack_from(payload, 4)[0] if len(payload) >= 8 else 0
        try:
            outcome = self._run(conn, payload, corr)
        finally:
            self.core.disconnect(conn.conn_id)
        if kind == "hang":
            return outcome == "hang" or (outcome == "silent" and _expects_answer(payload))
        return self.fz.errors.count > before or outcome.startswith("wrong correlation")

    def check_canary(self) -> None:
        conn = self.core.connect(self.node)
        try:
            for frame in self.canary_frames:
                out = self.core.handle(conn, frame)
                if out.kind != "send":
                    self.fz._finding("canary", f"the in-process canary got {out.kind!r} ({out.reason})", b"",
                                     "canary (in-process)")
                    return
        finally:
            self.core.disconnect(conn.conn_id)

    def produce_ledger(self, topic: str, value: bytes, part: int) -> None:
        from kwire.protocol import decode_response, encode_request
        from kwire.protocol.messages.produce import ProduceRequest
        from kwire.records import BatchBuilder

        b = BatchBuilder()
        b.append(value, key=b"k")
        req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=part, records=b.build())])])
        if self.ledger_conn is None:
            self.ledger_conn = self.core.connect(self.node)
        self.corr = (self.corr + 1) & 0x7FFFFFFF
        payload = encode_request(req, 9, correlation_id=self.corr, client_id="ledger", size_prefix=False)
        from kwire.protocol.splice import as_bytes

        out = self.core.handle(self.ledger_conn, payload)
        if out.kind != "send":
            if self.ledger_conn is not None:
                self.core.disconnect(self.ledger_conn.conn_id)
            self.ledger_conn = None
            return  # not acknowledged: nothing promised
        resp = decode_response(as_bytes(out.data), 0, 9).body
        pr = resp.responses[0].partition_responses[0]
        if pr.error_code == 0:
            self.ledger_acks.append((part, int(pr.base_offset), value))
            self.fz.report.acked += 1

    def verify_ledger(self, topic: str) -> None:
        from kwire.protocol import decode_response, encode_request
        from kwire.protocol.messages.fetch import FetchRequest
        from kwire.protocol.splice import as_bytes

        if not self.ledger_acks:
            return
        conn = self.core.connect(self.node)

        def fetch(part: int, offset: int) -> Any:
            req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 22,
                               isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                               forgotten_topics_data=[], topics=[FetchRequest.FetchTopic(
                                   topic=topic, partitions=[FetchRequest.FetchPartition(
                                       partition=part, current_leader_epoch=-1, fetch_offset=offset,
                                       log_start_offset=-1, partition_max_bytes=1 << 22)])])
            out = self.core.handle(conn, encode_request(req, 11, correlation_id=1, client_id="ledger",
                                                        size_prefix=False))
            if out.kind != "send":
                raise KwireError(f"the in-process ledger fetch got {out.kind!r} ({out.reason})")
            return decode_response(as_bytes(out.data), 1, 11).body.responses[0].partitions[0]

        try:
            _check_ledger(self.fz.report, self.ledger_acks, fetch, topic, " (in-process core)")
        finally:
            self.core.disconnect(conn.conn_id)


def save_finding(out: Path, f: Finding, seed: int) -> Path:
    """Write a finding's frame (``.bin``) and its side file (``.json``: key, version, kind, frame,
    provenance with the seed that found it) under ``out``; returns the ``.bin`` path."""
    out.mkdir(parents=True, exist_ok=True)
    key, version = (struct.unpack(">hh", f.payload[:4]) if len(f.payload) >= 4 else (-1, -1))
    digest = hashlib.sha256(f.payload).hexdigest()[:10]
    stem = out / f"{f.kind}-{key}-v{version}-{digest}"
    stem.with_suffix(".bin").write_bytes(f.payload)
    side = {"api_key": key, "api_version": version, "kind": f.kind, "frame": f.payload.hex(),
            "provenance": f"kwire fuzz --seed {seed}: {f.origin}", "detail": f.detail}
    stem.with_suffix(".json").write_text(json.dumps(side, indent=1) + "\n")
    return stem.with_suffix(".bin")


def _hypothesis_payloads(rng: random.Random, count: int, sink: Callable[[bytes, str], None]) -> None:
    """``count`` requests drawn by Hypothesis from the schema strategies, each handed to ``sink``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    from kwire.fuzz.strategies import message_strategy
    from kwire.protocol import all_apis

    pairs = [(info, v) for info in all_apis() if info.versions is not None
             for v in range(info.versions[0], info.versions[1] + 1)]

    @hseed(rng.getrandbits(64))
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draw(data: Any) -> None:
        info, version = data.draw(st.sampled_from(pairs))
        msg = data.draw(message_strategy(info.request_class, version))
        try:
            payload = payload_of(msg, version)
        except Exception:  # noqa: BLE001 - a drawn value the encoder refuses is not a broker finding
            return
        sink(payload, f"hypothesis {info.name} v{version}")

    draw()


_TRANSPORTS = ("plain",) * 12 + ("pipelined", "slow_writer", "lying_size", "drop_mid_frame")


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


class _RssWatch:
    """Highest resident memory seen after a warm-up (the first 1,000 frames fill caches and pools).

    Reads the current RSS rather than the process's lifetime peak: a peak set before the run
    (another test in the same process, a big import) would hide any growth during it.
    """

    def __init__(self, limit_mb: float) -> None:
        self.limit_mb = limit_mb
        self.base_kb: int | None = None
        self.high_kb = 0

    @staticmethod
    def _rss_kb() -> int:
        try:
            with open("/proc/self/statm", "rb") as f:
                pages = int(f.read().split()[1])
            return pages * _PAGE_KB
        except (OSError, ValueError, IndexError):  # no procfs: the lifetime peak is the best there is
            import resource

            return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)

    def sample(self, frames: int) -> None:
        now = self._rss_kb()
        if self.base_kb is None:
            if frames >= 1000:
                self.base_kb = self.high_kb = now
            return
        self.high_kb = max(self.high_kb, now)

    def growth_mb(self) -> float:
        if self.base_kb is None:
            return 0.0
        return (max(self.high_kb, self._rss_kb()) - self.base_kb) / 1024


def _sequence(fz: _Fuzzer, broker: Any, topic_id: Any, seeds: list[Seed], one: Callable[[bytes, str], None]) -> None:
    """One stateful sequence on ``broker`` (whose frames ``one`` sends), each step sometimes mutated."""
    from kwire.fuzz.sequences import SEQUENCES
    from kwire.protocol import encode_request

    def lookup(tid: str) -> tuple[int, int]:
        for row in broker.transactions():
            if row.get("transactional_id") == tid:
                return int(row.get("producer_id", -1)), int(row.get("producer_epoch", -1))
        return -1, -1

    gen = fz.rng.choice(SEQUENCES)
    try:
        for label, msg, version in gen(fz.rng, topic_id, lookup):
            payload = encode_request(msg, version, correlation_id=1, client_id="kwire-fuzz", size_prefix=False)
            origin = f"sequence {gen.__name__}: {label} v{version}"
            if fz.rng.random() < 0.2:
                name, payload = next(iter(mutate(fz.rng, Seed(msg.API_KEY, version, payload, origin), seeds)))
                origin += f" mutated by {name}"
            one(payload, origin)
    except (KwireError, ValueError, TypeError) as exc:  # a value the codec refuses to encode: a generator bug
        fz._finding("crash", f"sequence {gen.__name__} could not encode a step: {exc}", b"", "sequences")


def run_fuzz(cfg: FuzzConfig) -> FuzzReport:
    """Fuzz a fresh in-process broker until the budget or the time is spent."""
    from kwire.control import Broker, BrokerConfig

    seeds: list[Seed] = default_seeds()
    if cfg.fixtures is not None and cfg.fixtures.is_dir():
        seeds += fixture_seeds(cfg.fixtures)
    errors = _ErrorLog()
    logger = logging.getLogger("kwire.broker")
    logger.addHandler(errors)
    propagate = logger.propagate
    logger.propagate = False  # the broker's tracebacks are findings, counted here, not console noise
    start = time.monotonic()
    try:
        # No initial rebalance delay: a JoinGroup is then held only as long as it asks to be.
        config = BrokerConfig(brokers=1, log_connections=False, seed=cfg.seed,
                              settings={"group.initial.rebalance.delay.ms": "0"})
        core_broker = _core_broker(config)
        with Broker(config) as broker:
            fz = _Fuzzer(cfg, broker, errors)
            inproc = _CoreTarget(fz, core_broker)
            for b in (broker, core_broker):
                b.create_topic(fz.ledger_topic, 2)
                b.create_topic("fuzz", 3)
                if cfg.broker_setup is not None:
                    cfg.broker_setup(b)

            def more() -> bool:
                if cfg.budget is not None and fz.report.frames >= cfg.budget:
                    return False
                return cfg.seconds is None or time.monotonic() - start < cfg.seconds

            socket_frames = 0

            def over_socket(payload: bytes, origin: str) -> None:
                # The socket broker's ledger and canary keep pace with the frames it gets, ten
                # times as often as the core's (it gets a small share of them).
                nonlocal socket_frames
                if not more():
                    return
                fz.send(payload, origin, fz.rng.choice(_TRANSPORTS))
                socket_frames += 1
                if socket_frames % max(1, cfg.ledger_every // 10) == 0:
                    fz.produce_ledger()
                if socket_frames % max(1, cfg.canary_every // 10) == 0:
                    fz.check_canary()
                after_frame()

            def in_process(payload: bytes, origin: str) -> None:
                if not more():
                    return
                inproc.send(payload, origin)
                after_frame()

            def after_frame() -> None:
                n = fz.report.frames
                if n % cfg.ledger_every == 0:
                    inproc.produce_ledger(fz.ledger_topic, f"ledger-{cfg.seed}-{n}".encode(), n // cfg.ledger_every % 2)
                if n % cfg.canary_every == 0:
                    inproc.check_canary()
                    if cfg.progress is not None:
                        fz.report.elapsed_s = time.monotonic() - start
                        cfg.progress(fz.report)

            def one(payload: bytes, origin: str) -> None:
                (in_process if fz.rng.random() < cfg.core_share else over_socket)(payload, origin)

            pool = list(seeds)
            by_api: dict[int, list[Seed]] = {}
            for sd in pool:
                by_api.setdefault(sd.api_key, []).append(sd)
            drawn_frames = 0

            def draw_one(payload: bytes, origin: str) -> None:
                one(payload, origin)
                if len(payload) >= 4 and len(pool) < len(seeds) + _DRAWN_SEEDS:
                    sd = Seed(_SIZE_H.unpack_from(payload, 0)[0], _SIZE_H.unpack_from(payload, 2)[0], payload, origin)
                    pool.append(sd)
                    by_api.setdefault(sd.api_key, []).append(sd)

            def fuzz_topic_id(b: Any) -> Any:
                return b.call(lambda: b.core.cluster.topics["fuzz"].topic_id)

            topic_ids = {b: fuzz_topic_id(b) for b in (broker, core_broker)}
            rss = _RssWatch(cfg.memory_limit_mb)
            while more():
                rss.sample(fz.report.frames)
                if fz.rng.random() < cfg.sequence_share:
                    # a sequence stays on one broker: its steps build on each other's state
                    if fz.rng.random() < cfg.core_share:
                        _sequence(fz, core_broker, topic_ids[core_broker], seeds, in_process)
                    else:
                        _sequence(fz, broker, topic_ids[broker], seeds, over_socket)
                    continue
                if drawn_frames < cfg.hypothesis_share * fz.report.frames:
                    # Hypothesis draws about a hundred requests a second, the core takes thousands:
                    # drawn requests are a share of the frames, and each joins the mutation seeds
                    before = fz.report.frames
                    _hypothesis_payloads(fz.rng, 20, draw_one)
                    drawn_frames += max(1, fz.report.frames - before)
                    continue
                for _ in range(200):
                    seed = fz.rng.choice(pool)
                    same_api = by_api.get(seed.api_key, pool) if fz.rng.random() < 0.5 else pool
                    for name, payload in mutate(fz.rng, seed, same_api):
                        one(payload, f"{seed.origin} mutated by {name}")
            fz._drop()
            fz.check_canary()
            inproc.check_canary()
            fz.produce_ledger()
            fz.verify_ledger()
            inproc.verify_ledger(fz.ledger_topic)
            grown = rss.growth_mb()
            fz.report.memory_growth_mb = grown
            if grown > cfg.memory_limit_mb:
                fz._finding("crash", f"memory growth: {grown:.0f} MB after warm-up (limit {cfg.memory_limit_mb} MB)",
                            b"", "the whole run")
            for c in (fz.ledger, fz.canary):
                if c is not None:
                    c.close()
            core_broker.stop()
            report = fz.report
    finally:
        logger.removeHandler(errors)
        logger.propagate = propagate
    report.elapsed_s = time.monotonic() - start
    return report

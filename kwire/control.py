"""Drive a kwire broker from Python: start it, change it, break it, watch it.

``Broker`` runs the trio server in a background thread; every control call is carried onto
that thread (the core has one owner), so tests call plain methods from any thread while real
clients talk to the broker over TCP.

    with Broker(brokers=3) as b:
        b.create_topic("orders", partitions=6)
        b.inject_error(api_key=0, error_code=6, times=2)   # NOT_LEADER_OR_FOLLOWER twice
        b.advance(30_000)                                  # move the broker clock 30 s
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import trio
import trio.from_thread
import trio.lowlevel

from kwire.broker.config import BrokerConfig, SaslConfig
from kwire.broker.core.broker_core import BrokerCore, Exchange
from kwire.broker.core.configs import ResourceType
from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.broker.handlers import load_handlers
from kwire.broker.server import BrokerServer
from kwire.clock import Clock, JumpClock, ManualClock, SystemClock
from kwire.errors import KwireError
from kwire.protocol.registry import resolve_api_key, resolve_error_code

__all__ = ["Broker", "BrokerConfig", "SaslConfig", "FaultAction"]

T = TypeVar("T")




def _cause(exc: BaseException) -> str:
    """The innermost reason of a start-up failure, in one line (trio wraps errors in groups)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_cause(e) for e in exc.exceptions)
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and text.startswith("[Errno"):
        text = text.split("] ", 1)[-1]  # "[Errno 98] ..." -> the sentence itself
    return text

def _api(api_key: int | str | None) -> int | None:
    return None if api_key is None else resolve_api_key(api_key)

class BrokerNotRunning(KwireError):
    """A control call on a broker that is not running."""


class Broker:
    """A kwire cluster running in a background thread, with its control API."""

    def __init__(self, config: BrokerConfig | None = None, *, clock: Clock | None = None,
                 manual_clock: bool = False, on_line: Callable[[str], None] | None = None, **kwargs: Any) -> None:
        self.config = config if config is not None else BrokerConfig(**kwargs)
        if clock is None:
            clock = ManualClock() if manual_clock else SystemClock()
        self.clock = clock
        self.core = BrokerCore(self.config, self.clock, handlers=load_handlers())
        self.server = BrokerServer(self.config, self.clock, self.core, on_line=on_line)
        self._on_line = on_line
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._stop: trio.Event | None = None
        self._error: BaseException | None = None
        self.bootstrap = ""
        self._progress = threading.Condition()
        self._progress_seq = 0
        self.server.on_progress = self._on_progress

    # --- lifecycle --------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> Broker:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name="kwire-broker", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise BrokerNotRunning("the broker did not start in time")
        if self._error is not None:
            where = f"{self.config.host}:{self.config.port}" if self.config.port else self.config.host
            raise BrokerNotRunning(f"the broker failed to start on {where}: {_cause(self._error)}") from self._error
        return self

    def _run(self) -> None:
        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            async with trio.open_nursery() as n:
                self.bootstrap = await n.start(self.server.serve)
                self._started.set()
                await self._stop.wait()
                n.cancel_scope.cancel()

        try:
            trio.run(main)
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
            self._error = exc
            self._started.set()

    def stop(self) -> None:
        if self._thread is None:
            return
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(timeout=30)
        self._thread = None
        self.core.close()  # the broker thread is gone: release files (data dir) from here
        if self.server.tls_ca is not None:  # a throwaway CA's keys do not outlive the broker
            self.server.tls_ca.remove()
            self.server.tls_ca = None

    def restart(self, *, crash: bool = True, timeout: float = 30.0) -> Broker:
        """Stop the cluster and start it again on the same ports, data dir and clock.

        ``crash`` (the default) stops it as ``kill -9`` stops a process: every connection drops,
        nothing more is written (no final metadata save, no timer), so what comes back is what the
        data dir held at that instant; ``crash=False`` is a clean stop first. Without a data dir
        the cluster comes back empty. The recording (``start_recording``) carries on.
        """
        if self._thread is None:
            raise BrokerNotRunning("the broker is not running")
        old = self.core
        ports = {n.node_id: n.port for n in old.cluster.nodes.values()}
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(timeout=timeout)
        self._thread = self._token = self._stop = None
        storage = old.subsystems.storage
        if not crash:
            old.close()
        elif storage is not None:
            storage.crash()
        self.core = BrokerCore(self.config, self.clock, handlers=load_handlers())
        for node_id, port in ports.items():
            if node_id in self.core.cluster.nodes:
                self.core.cluster.nodes[node_id].port = port
        # One recording and one numbering of connections across the restart (the client rules
        # key connections by id).
        self.core.recording = old.recording
        self.core.on_answer = old.on_answer
        self.core._conn_ids = old._conn_ids
        old_server = self.server
        self.server = BrokerServer(self.config, self.clock, self.core, on_line=self._on_line)
        # Every listener comes back on its port, and TLS clients keep trusting the same CA.
        self.server._bound = dict(old_server._bound)
        self.server.tls_ca = old_server.tls_ca
        self.server.on_progress = self._on_progress
        self._started = threading.Event()
        self._error = None
        return self.start(timeout)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the broker's thread (the owner of all state), then deliver what it completed."""
        if self._token is None:
            raise BrokerNotRunning("the broker is not running")

        def run() -> T:
            result = fn()
            self.core.persist()  # a change made here is durable before the call returns, as after a request
            self.server.poke()
            return result

        return trio.from_thread.run_sync(run, trio_token=self._token)

    def call_async(self, fn: Callable[[], Any]) -> Any:
        if self._token is None:
            raise BrokerNotRunning("the broker is not running")
        return trio.from_thread.run(fn, trio_token=self._token)

    def _on_progress(self) -> None:
        with self._progress:
            self._progress_seq += 1
            self._progress.notify_all()

    def _peek(self, fn: Callable[[], T]) -> T:
        """Run a read-only ``fn`` on the broker's thread without poking the server.

        ``call`` pokes, and a poke counts as progress; ``wait_until`` must not wake itself.
        """
        if self._token is None:
            raise BrokerNotRunning("the broker is not running")
        return trio.from_thread.run_sync(fn, trio_token=self._token)

    def wait_until(self, predicate: Callable[[BrokerCore], bool], timeout: float = 30.0) -> None:
        """Block until ``predicate(core)`` holds (checked on the broker thread after each step of work).

        For tests: e.g. wait until a request has arrived before moving the clock, without sleeping.
        Raises TimeoutError after ``timeout`` seconds, however busy the broker is.
        """
        end = time.monotonic() + timeout
        while True:
            with self._progress:
                seq = self._progress_seq
            if self._peek(lambda: predicate(self.core)):
                return
            with self._progress:
                while self._progress_seq == seq:
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    self._progress.wait(left)
            if time.monotonic() >= end:
                raise TimeoutError(f"broker condition not reached within {timeout} s")

    def _wait(self, what: str, check: Callable[[BrokerCore], tuple[bool, str]], timeout: float) -> None:
        """wait_until with a failure message naming what was expected and what was last seen."""
        seen: list[str] = [""]

        def predicate(core: BrokerCore) -> bool:
            ok, seen[0] = check(core)
            return ok

        try:
            self.wait_until(predicate, timeout)
        except TimeoutError:
            raise TimeoutError(f"waited {timeout} s for {what}; last seen: {seen[0]}") from None

    def wait_for_request(self, api_key: int | str, *, count: int = 1, timeout: float = 30.0) -> None:
        """Until ``count`` requests of ``api_key`` (number, ``ApiKey`` or name) have arrived in all."""
        key = resolve_api_key(api_key)

        def check(core: BrokerCore) -> tuple[bool, str]:
            n = core.stats.per_api.get(key, 0)
            return n >= count, f"{n} such request(s)"

        self._wait(f"{count} request(s) of api key {key}", check, timeout)

    def wait_for_parked(self, api_key: int | str | None = None, *, count: int = 1, timeout: float = 30.0) -> None:
        """Until ``count`` requests (of ``api_key``, or of any API) are waiting for their answer:
        a long poll, a JoinGroup or SyncGroup, a request held by a latency fault."""
        key = None if api_key is None else resolve_api_key(api_key)

        def check(core: BrokerCore) -> tuple[bool, str]:
            keys = core.unanswered_api_keys()
            n = len(keys) if key is None else keys.count(key)
            return n >= count, f"{n} parked (api keys {sorted(keys)})"

        self._wait(f"{count} parked request(s)" + (f" of api key {key}" if key is not None else ""), check, timeout)

    def wait_for_group(self, group_id: str, *, state: str | None = None, members: int | None = None,
                       timeout: float = 30.0) -> None:
        """Until the group exists and is in ``state`` (e.g. "Stable", any case) and/or has
        ``members`` members."""
        def check(core: BrokerCore) -> tuple[bool, str]:
            g = core.subsystems.groups.groups.get(group_id)
            if g is None:
                return False, "no such group"
            stats = g.statistics()
            ok = (state is None or g.state_name.lower() == state.lower()) and (
                members is None or stats.members == members)
            return ok, f"state {g.state_name}, {stats.members} member(s)"

        want = ", ".join(x for x in (f"state {state}" if state else "",
                                     f"{members} member(s)" if members is not None else "") if x)
        self._wait(f"group {group_id!r} with {want or 'existence'}", check, timeout)

    def wait_for_offset(self, topic: str, partition: int, offset: int, *, timeout: float = 30.0) -> None:
        """Until the partition's log end offset reaches ``offset``."""
        def check(core: BrokerCore) -> tuple[bool, str]:
            p = core.cluster.partition(topic, partition)
            if p is None:
                return False, "no such partition"
            return p.log.log_end_offset >= offset, f"log end offset {p.log.log_end_offset}"

        self._wait(f"{topic}-{partition} to reach offset {offset}", check, timeout)

    # --- inspection -------------------------------------------------------------------------
    def topics(self) -> dict[str, list[dict[str, Any]]]:
        """Every topic's partitions: leader, replicas, log start/end, high watermark, LSO."""
        def run() -> dict[str, list[dict[str, Any]]]:
            return {t.name: [{"partition": p.index, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                              "replicas": list(p.replicas), "log_start_offset": p.log.log_start_offset,
                              "log_end_offset": p.log.log_end_offset, "high_watermark": p.log.high_watermark,
                              "last_stable_offset": p.log.last_stable_offset} for p in t.partitions]
                    for t in sorted(self.core.cluster.topics.values(), key=lambda t: t.name)}
        return self._peek(run)

    def describe_group(self, group_id: str) -> dict[str, Any] | None:
        """A group's type, state, members (with assignments) and committed offsets; None if absent."""
        def run() -> dict[str, Any] | None:
            table = self.core.subsystems.groups
            g = table.get(group_id)
            if g is None:
                return None
            from kwire.cluster_info import consumer_assignment

            members: dict[str, Any] = {}
            by_id = self.core.cluster.topics_by_id
            for mid, m in getattr(g, "members", {}).items():
                if hasattr(m, "assigned"):  # KIP-848: topic id -> partitions
                    assignment: Any = {(by_id[t].name if t in by_id else str(t)): sorted(ps)
                                       for t, ps in m.assigned.items()}
                elif g.protocol_type == "consumer":  # classic: the consumer protocol's bytes
                    assignment = consumer_assignment(bytes(m.assignment))
                else:
                    assignment = bytes(getattr(m, "assignment", b"")).hex()
                members[mid] = {"client_id": getattr(m, "client_id", ""), "assignment": assignment}
            offsets = {f"{t}-{p}": c.offset for (t, p), c in self.core.subsystems.offsets.partitions(group_id).items()}
            return {"group_id": group_id, "type": g.group_type, "state": g.state_name,
                    "protocol_type": g.protocol_type, "members": members, "committed": offsets}
        return self._peek(run)

    def read(self, topic: str, partition: int, offset: int = 0, max_records: int = 1000) -> list[Any]:
        """Records of a partition from ``offset``, decoded (``kwire.records.Record``: offset,
        timestamp, key, value, headers); control records are left out."""
        from kwire.records import RecordBatch

        def run() -> list[bytes]:
            p = self.core.cluster.partition(topic, partition)
            if p is None:
                raise KwireError(f"{topic}-{partition} does not exist")
            return [bytes(b.data) for b in p.log.batches if b.last_offset >= offset and not b.is_control]

        out: list[Any] = []
        for data in self._peek(run):
            for r in RecordBatch(data):
                if r.offset >= offset:
                    out.append(r)
                    if len(out) >= max_records:
                        return out
        return out

    def produce(self, topic: str, values: list[bytes | None], *, partition: int = 0,
                keys: list[bytes | None] | None = None) -> int:
        """Append one batch of records to a partition as a client's Produce would (its leader's
        log, the topic's configs, wake-ups for waiting fetches); returns the base offset."""
        from kwire.broker.core.log import AppendOrigin
        from kwire.records import BatchBuilder

        def run() -> int:
            p = self.core.cluster.partition(topic, partition)
            if p is None:
                raise KwireError(f"{topic}-{partition} does not exist")
            now = self.core.clock.now_ms()
            b = BatchBuilder()
            for i, v in enumerate(values):
                b.append(v, keys[i] if keys else None, timestamp_ms=now)
            res = p.log.append(bytearray(b.build()), AppendOrigin.CLIENT, now_ms=now,
                               leader_epoch=p.leader_epoch, config=self.core.log_config(topic))
            return res.base_offset

        return int(self.call(run))

    # --- transactions -----------------------------------------------------------------------
    def transactions(self) -> list[dict[str, Any]]:
        """Every transactional id the coordinator knows: state (Kafka's names), producer id and
        epoch, partitions, groups, timeout and, for an Ongoing transaction, when it times out."""

        def run() -> list[dict[str, Any]]:
            txn = self.core.subsystems.transactions
            return [] if txn is None else txn.inspect()

        return self._peek(run)

    def fail_txn_markers(self, *, topic: str | None = None, partition: int | None = None,
                         error_code: int | str = "NOT_LEADER_OR_FOLLOWER", times: int | None = 1) -> None:
        """Fault injection: the next ``times`` transaction-marker writes (to ``topic``/``partition``
        when given; ``times=None``: every one until ``clear_faults()``) fail with ``error_code``. The transaction stays in PrepareCommit/PrepareAbort
        (clients get CONCURRENT_TRANSACTIONS) and the coordinator retries the marker every
        100 ms of broker time (``advance`` drives it), as Kafka's marker channel does (TX-15, TX-18)."""
        code = resolve_error_code(error_code)

        def run() -> None:
            from kwire.broker.core.txn_coordinator import txn_coordinator

            coord = txn_coordinator(self.core)
            if coord is None or not hasattr(coord.markers, "forced_failures"):
                raise KwireError("this broker has no transaction coordinator writing markers to its logs")
            coord.markers.forced_failures.append([topic, partition, code, times])

        self.call(run)

    def hold_txn_markers(self, hold_ms: int | None = None) -> None:
        """Widen the window between EndTxn's answer and the transaction markers (TX-15). Kafka
        answers EndTxn once PrepareCommit/PrepareAbort is logged and writes the markers after;
        until they land the partitions' LSO stays put, staged offsets stay pending and the id's
        AddPartitionsToTxn, produce verification, EndTxn and InitProducerId get
        CONCURRENT_TRANSACTIONS. kwire writes them on the next broker tick
        (``kwire.transaction.marker.delay.ms`` later); from this call on, transactions that end
        keep their markers ``hold_ms`` of broker time (``advance`` moves it on a manual or jump
        clock) or, with None, until ``release_txn_markers()``."""

        def run() -> None:
            self._txn_coordinator().hold_markers(hold_ms)

        self.call(run)

    def release_txn_markers(self) -> int:
        """End ``hold_txn_markers``: the markers that wait are written on the next broker tick
        (each transaction then completes); returns how many transactions were waiting."""

        def run() -> int:
            return self._txn_coordinator().release_markers()

        return int(self.call(run))

    def txn_stats(self) -> dict[str, Any]:
        """The transaction coordinator's counters: transactional ids by state, markers still to
        write, and how often clients were answered CONCURRENT_TRANSACTIONS, by request (TX-15:
        clients that met the window between EndTxn's answer and the markers; a TV2 produce counts
        once its leader gives up retrying, 100 ms)."""

        def run() -> dict[str, Any]:
            s = self._txn_coordinator().statistics()
            return {"coordinator_epoch": s.coordinator_epoch, "transactional_ids": s.transactional_ids,
                    "by_state": dict(s.by_state), "pending_markers": s.pending_markers,
                    "concurrent_transactions": dict(s.concurrent_transactions)}

        return self._peek(run)

    def _txn_coordinator(self) -> Any:
        from kwire.broker.core.txn_coordinator import txn_coordinator

        coord = txn_coordinator(self.core)
        if coord is None:
            raise KwireError("this broker has no transaction coordinator")
        return coord

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        """One partition's offsets as the broker holds them: log start, high watermark, last stable
        offset (TX-20) and the open transactions (producer id, epoch, first offset)."""

        def run() -> dict[str, Any]:
            p = self.core.cluster.partition(topic, partition)
            if p is None:
                raise KwireError(f"{topic}-{partition} does not exist")
            log = p.log
            open_txns = [{"producer_id": pid, "producer_epoch": e.epoch, "first_offset": e.txn_first_offset}
                         for pid, e in sorted(p.producers.entries.items()) if e.txn_first_offset is not None]
            return {"log_start_offset": log.log_start_offset, "high_watermark": log.high_watermark,
                    "last_stable_offset": log.last_stable_offset, "open_transactions": open_txns}

        return self._peek(run)

    # --- share groups -----------------------------------------------------------------------
    def share_state(self, group_id: str, topic: str, partition: int) -> dict[str, Any] | None:
        """A share partition as the broker holds it: the start and end offsets (SPSO, SPEO) and each
        in-flight offset's state, delivery count, holder and lock deadline; None before the group
        first fetched the partition. ``end_offset`` is inclusive, as Kafka's SPEO: the last offset
        in flight, not the partition's high watermark that ``kwire groups`` shows (exclusive)."""

        def run() -> dict[str, Any] | None:
            sp = self._share().partitions.get(group_id, topic, partition)
            if sp is None:
                return None
            st = sp.statistics()
            return {"start_offset": st.start_offset, "end_offset": st.end_offset,
                    "in_flight_records": st.in_flight_records,
                    "offsets": [{"offset": o.offset, "state": o.state.name, "delivery_count": o.delivery_count,
                                 "member_id": o.member_id, "lock_deadline_ms": o.lock_deadline_ms}
                                for o in st.offsets]}

        return self._peek(run)

    def describe_share_group(self, group_id: str) -> dict[str, Any] | None:
        """A share group's state, epochs and members with their assignments; None if absent."""

        def run() -> dict[str, Any] | None:
            g = self._share().groups.get(group_id)
            if g is None:
                return None
            d = g.describe()
            by_id = self.core.cluster.topics_by_id
            return {"state": d.group_state, "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
                    "members": {m.member_id: {"member_epoch": m.member_epoch, "client_id": m.client_id,
                                              "subscribed": list(m.subscribed_topic_names),
                                              "assignment": {by_id[t].name: sorted(ps) for t, ps in m.assignment.items()
                                                             if t in by_id}}
                                for m in d.members}}

        return self._peek(run)

    def expire_locks(self, group_id: str, topic: str, partition: int, offsets: list[int] | None = None) -> int:
        """Fault injection: the acquisition locks of ``offsets`` (every held one if None) expire
        now, as if their time had run out (AQ-12); returns how many records were released. A share
        partition the group never fetched raises KwireError (a misspelt name must not pass quietly)."""

        def run() -> int:
            sp = self._share().partitions.get(group_id, topic, partition)
            if sp is None:
                raise KwireError(f"share group {group_id!r} holds no share partition {topic}-{partition} "
                                 "(it has not fetched it yet, or a name is misspelt)")
            return sp.expire_now(offsets)

        return int(self.call(run))

    def fence_share_member(self, group_id: str, member_id: str) -> bool:
        """Fault injection: remove a share-group member now, as a session timeout would; its next
        heartbeat gets UNKNOWN_MEMBER_ID. As in Kafka its share sessions stay and its acquired
        records stay ACQUIRED until their locks expire, a session closes or its connection drops
        (SS-9). An unknown group or member raises KwireError."""

        def run() -> bool:
            if not self._share().fence_member(group_id, member_id):
                raise KwireError(f"share group {group_id!r} has no member {member_id!r}")
            return True

        return bool(self.call(run))

    def dlq_records(self, group_id: str) -> list[dict[str, Any]]:
        """The dead-letter records of a share group (KIP-1191), decoded: offset, key, value, timestamp
        and the headers as a dict (``__dlq.errors.topic``, ``.partition``, ``.offset``, ``.group``,
        ``.delivery.count``, ``.message``), from the group's dead-letter topic."""
        from kwire.broker.core.configs import ResourceType

        topic = self._peek(lambda: self.core.configs.get(ResourceType.GROUP, group_id,
                                                          "errors.deadletterqueue.topic.name"))
        if not topic or topic not in self.topics():
            return []
        out = []
        for p in range(len(self.topics()[topic])):
            for r in self.read(topic, p, 0, max_records=1_000_000):
                headers = {k: (None if v is None else bytes(v).decode()) for k, v in r.headers}
                if headers.get("__dlq.errors.group") != group_id:
                    continue
                out.append({"partition": p, "offset": r.offset, "timestamp": r.timestamp,
                            "key": None if r.key is None else bytes(r.key),
                            "value": None if r.value is None else bytes(r.value), "headers": headers})
        return out

    def dlq_stats(self, group_id: str) -> dict[str, Any]:
        """KIP-1191's metrics for a group (records written, produce requests, failed ones) and the
        records not written, by cause."""

        def run() -> dict[str, Any]:
            st = self._share().dlq.stats.get(group_id)
            if st is None:
                return {"records_written": 0, "produce_requests": 0, "failed_produce_requests": 0, "failures": {}}
            return {"records_written": st.records_written, "produce_requests": st.produce_requests,
                    "failed_produce_requests": st.failed_produce_requests, "failures": dict(st.failures)}

        return self._peek(run)

    def fail_dlq_writes(self, group_id: str, error_code: int | str = "KAFKA_STORAGE_ERROR",
                        times: int | None = 1) -> None:
        """Fault injection: the group's next ``times`` dead-letter writes fail with ``error_code``
        (NOT_LEADER_OR_FOLLOWER, NETWORK_EXCEPTION and REQUEST_TIMED_OUT are retried as DLQ-10 says,
        so each of those counts once per attempt; any other code fails the write at once)."""
        code = resolve_error_code(error_code)
        self.call(lambda: self._share().dlq.forced_failures.__setitem__(group_id, [code, times]))

    def _share(self) -> Any:
        from kwire.broker.core.share_coordinator import share_coordinator

        return share_coordinator(self.core)

    def parked_requests(self) -> int:
        """How many requests are waiting for their answer (long polls, group joins and syncs,
        injected latency or swallowed requests)."""
        return self._peek(self.core.unanswered_requests)

    # --- topics and configs -----------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> Any:
        return self.call(lambda: self.core.create_topic(name, partitions, replication_factor, configs))

    def create_partitions(self, name: str, total: int) -> Any:
        return self.call(lambda: self.core.create_partitions(name, total))

    def delete_topic(self, name: str) -> None:
        self.call(lambda: self.core.delete_topic(name))

    def set_config(self, resource: str, name: str, key: str, value: str | None) -> None:
        """Set (or with None, remove) a config of a "broker", "topic" or "group"."""
        rtype = {"broker": ResourceType.BROKER, "topic": ResourceType.TOPIC, "group": ResourceType.GROUP}[resource]
        def run() -> None:
            self.core.configs.set(rtype, "" if rtype is ResourceType.BROKER else name, key, value)
            self.core.metadata_changed()
        self.call(run)

    # --- ACLs and quotas (the authorizer needs ``authorizer.class.name`` in the settings) ---------
    def add_acl(self, principal: str, operation: str, resource_type: str, name: str, *, pattern: str = "LITERAL",
                permission: str = "ALLOW", host: str = "*") -> None:
        """Add an ACL, e.g. ``add_acl("User:alice", "READ", "TOPIC", "orders")`` (names as in Kafka's enums)."""
        from kwire.broker.core.acl import AclBinding, AclOperation, AclPermission, PatternType
        from kwire.broker.core.acl import ResourceType as AclResource

        binding = AclBinding(AclResource[resource_type.upper()], name, PatternType[pattern.upper()], principal, host,
                             AclOperation[operation.upper()], AclPermission[permission.upper()])
        self.call(lambda: self._acl().create(binding))

    def remove_acls(self, *, principal: str | None = None, resource_type: str = "ANY", name: str | None = None,
                    pattern: str = "ANY", operation: str = "ANY", permission: str = "ANY",
                    host: str | None = None) -> int:
        """Delete the ACLs a filter matches (DeleteAcls semantics); returns how many went."""
        flt = self._acl_filter(principal, resource_type, name, pattern, operation, permission, host)
        return self.call(lambda: len(self._acl().delete(flt)))

    def acls(self, **filter_args: Any) -> list[dict[str, str]]:
        """The ACLs (all, or those a filter as in ``remove_acls`` matches), as names."""
        flt = self._acl_filter(**filter_args)
        return self.call(lambda: [dict(zip(("resource_type", "name", "pattern", "principal", "host", "operation",
                                            "permission"), b.to_json(), strict=True))
                                  for b in self._acl().describe(flt)])

    def _acl(self) -> Any:
        acl = self.core.subsystems.acl
        assert acl is not None
        return acl

    @staticmethod
    def _acl_filter(principal: str | None = None, resource_type: str = "ANY", name: str | None = None,
                    pattern: str = "ANY", operation: str = "ANY", permission: str = "ANY",
                    host: str | None = None) -> Any:
        from kwire.broker.core.acl import AclFilter, AclOperation, AclPermission, PatternType
        from kwire.broker.core.acl import ResourceType as AclResource

        return AclFilter(AclResource[resource_type.upper()], name, PatternType[pattern.upper()], principal, host,
                         AclOperation[operation.upper()], AclPermission[permission.upper()])

    def set_quota(self, entity: str, **values: float | None) -> None:
        """Set (None: remove) client quotas of an entity, e.g. ``set_quota("user=alice,client-id=app",
        producer_byte_rate=1024)``; ``<default>`` or an empty name is the default entity."""
        from kwire.broker.core.quotas import parse_entity

        ent = parse_entity(entity)

        def run() -> None:
            quotas = self.core.subsystems.quotas
            assert quotas is not None
            quotas.alter(ent, list(values.items()))
        self.call(run)

    def quotas(self) -> dict[str, dict[str, float]]:
        """Every quota entity (as ``user=alice,client-id=<default>``) and its values."""
        def run() -> dict[str, dict[str, float]]:
            quotas = self.core.subsystems.quotas
            assert quotas is not None
            return {",".join(f"{t}={'<default>' if n is None else n}" for t, n in e): dict(v)
                    for e, v in quotas.entities.items()}
        return self.call(run)

    # --- faults -----------------------------------------------------------------------------
    def inject_error(self, *, api_key: int | str | None = None, error_code: int | str, times: int | None = 1,
                     broker_id: int | None = None, topic: str | None = None, partition: int | None = None,
                     when: Callable[[Any], bool] | None = None) -> int:
        """Answer matching requests (or one partition of them) with ``error_code``.

        ``api_key`` and ``error_code`` take numbers, ``ApiKey``/``ErrorCode`` members or names
        (``api_key="Produce"``, ``error_code="NOT_LEADER_OR_FOLLOWER"``); anything that names no
        API or error raises UnknownApiKeyError / UnknownErrorCodeError at once.
        """
        rule = FaultRule(FaultAction.ERROR, api_key=_api(api_key), broker_id=broker_id,
                         error_code=resolve_error_code(error_code),
                         times=times, topic=topic, partition=partition, when=when)
        return self.call(lambda: self.core.faults.add(rule).rule_id)

    def drop_partition(self, *, api_key: int | str, topic: str, partition: int | None = None,
                       times: int | None = 1, broker_id: int | None = None) -> int:
        """Leave a partition out of matching responses (ShareFetch, ShareAcknowledge): the broker
        does the work (acquires, applies acknowledgements) and the answer loses it, as when a
        response is cut short; the client never learns of the records it now holds."""
        rule = FaultRule(FaultAction.DROP, api_key=_api(api_key), broker_id=broker_id, times=times, topic=topic,
                         partition=partition)
        return self.call(lambda: self.core.faults.add(rule).rule_id)

    def add_latency(self, delay_ms: int, *, api_key: int | str | None = None, times: int | None = None,
                    broker_id: int | None = None) -> int:
        rule = FaultRule(FaultAction.LATENCY, api_key=_api(api_key), broker_id=broker_id, delay_ms=delay_ms, times=times)
        return self.call(lambda: self.core.faults.add(rule).rule_id)

    def swallow(self, *, api_key: int | str | None = None, times: int | None = 1,
                broker_id: int | None = None) -> int:
        rule = FaultRule(FaultAction.SWALLOW, api_key=_api(api_key), broker_id=broker_id, times=times)
        return self.call(lambda: self.core.faults.add(rule).rule_id)

    def close_on(self, *, api_key: int | str | None = None, times: int | None = 1,
                 broker_id: int | None = None) -> int:
        """Close the connection instead of answering the next matching request(s)."""
        rule = FaultRule(FaultAction.CLOSE, api_key=_api(api_key), broker_id=broker_id, times=times)
        return self.call(lambda: self.core.faults.add(rule).rule_id)

    def hook(self, fn: Callable[[Any, Any], Any], *, api_key: int | str | None = None, times: int | None = None,
             broker_id: int | None = None) -> int:
        """Call ``fn(request, context)``; a non-None return is sent as the response."""
        rule = FaultRule(FaultAction.HOOK, api_key=_api(api_key), broker_id=broker_id, times=times, hook=fn)
        return self.call(lambda: self.core.faults.add(rule).rule_id)

    def remove_fault(self, rule_id: int) -> None:
        self.call(lambda: self.core.faults.remove(rule_id))

    def clear_faults(self) -> None:
        """Remove every injected fault: request rules, failing transaction markers
        (``fail_txn_markers``) and failing dead-letter writes (``fail_dlq_writes``)."""

        def run() -> None:
            from kwire.broker.core.share_coordinator import share_coordinator
            from kwire.broker.core.txn_coordinator import txn_coordinator

            self.core.faults.clear()
            coord = txn_coordinator(self.core)
            if coord is not None and hasattr(coord.markers, "forced_failures"):
                coord.markers.forced_failures.clear()
            share = share_coordinator(self.core)
            if share is not None:
                share.dlq.forced_failures.clear()

        self.call(run)

    def close_connections(self, broker_id: int | None = None) -> int:
        return self.call(lambda: self.server.close_connections(broker_id))

    def cap_api_version(self, api_key: int | str, max_version: int | None) -> None:
        """Advertise at most ``max_version`` of an API (simulate an older broker); None lifts the cap."""
        api_key = resolve_api_key(api_key)

        def run() -> None:
            if max_version is None:
                self.core.version_caps.pop(api_key, None)
            else:
                self.core.version_caps[api_key] = max_version
        self.call(run)

    # --- cluster ----------------------------------------------------------------------------
    def broker_down(self, node_id: int) -> None:
        self.call_async(lambda: self.server.stop_broker(node_id))

    def broker_up(self, node_id: int) -> None:
        self.call_async(lambda: self.server.start_broker(node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        def run() -> None:
            self.core.cluster.move_leader(topic, partition, node_id)
            self.core.metadata_changed()
            self.core.wake_all()
        self.call(run)

    def leader_of(self, topic: str, partition: int) -> int:
        """The node leading a partition (-1 while none is live)."""
        def run() -> int:
            p = self.core.cluster.partition(topic, partition)
            if p is None:
                raise KwireError(f"{topic}-{partition} does not exist")
            return p.leader_id
        return self.call(run)

    def end_offsets(self, topic: str) -> dict[int, int]:
        """Log end offset of every partition of a topic."""
        def run() -> dict[int, int]:
            t = self.core.cluster.topics.get(topic)
            if t is None:
                raise KwireError(f"topic {topic!r} does not exist")
            return {p.index: p.log.log_end_offset for p in t.partitions}
        return self.call(run)

    @property
    def node_ids(self) -> list[int]:
        return sorted(self.core.cluster.nodes)

    def bootstrap_for(self, listener: str) -> str:
        """The bootstrap list of one listener (``listeners=SSL://:0,...``: ``bootstrap_for("SSL")``)."""
        return self.call(lambda: self.server.bootstrap(listener.upper()))

    @property
    def listeners(self) -> dict[str, str]:
        """Every listener's bootstrap list, by name (the first one is ``bootstrap``)."""
        return self.call(self.server.bootstraps)

    @property
    def ca_file(self) -> str | None:
        """The throwaway CA's PEM file when a TLS listener runs on one (None: configured keystores)."""
        ca = self.server.tls_ca
        return str(ca.ca_file) if ca is not None else None

    def live_node_ids(self) -> list[int]:
        """Nodes that are up (not taken down with ``broker_down``)."""
        return self.call(lambda: [n.node_id for n in self.core.cluster.live_nodes()])

    def run_cleaner(self, *, force: bool = True) -> list[dict[str, Any]]:
        """Run the log cleaner now over every compacted topic (cleanup.policy=compact): with
        ``force`` (the default) whatever is cleanable is compacted regardless of
        min.cleanable.dirty.ratio; the lags and the active segment still bound it, as in Kafka.
        Returns one row per cleaned partition (range, records read and kept, bytes)."""

        def run() -> list[dict[str, Any]]:
            cleaner = self.core.subsystems.cleaner
            if cleaner is None:
                return []
            return [{"topic": t, "partition": p, "first_dirty": r.first_dirty, "end_offset": r.end_offset,
                     "records_read": r.records_read, "records_kept": r.records_kept,
                     "bytes_before": r.bytes_before, "bytes_after": r.bytes_after}
                    for t, p, r in cleaner.run(force=force)]

        return self.call(run)

    def run_retention(self) -> int:
        """Apply retention.ms/retention.bytes now instead of at the next periodic check
        (``log.retention.check.interval.ms``); returns how many log segments were deleted."""
        return int(self.call(lambda: self.core.subsystems.retention.run()))

    # --- time -------------------------------------------------------------------------------
    def advance(self, ms: int) -> int:
        """Move a manual broker clock forward by ``ms``, stepping through every deadline on the way.

        Each timer fires with the broker's time at its own due time, and timers it sets fire too
        if they fall due within ``ms`` (a 10 ms periodic timer fires 3 times in ``advance(35)``).
        Answers those timers complete are sent when the call returns. Returns the new time.
        """
        if not isinstance(self.clock, ManualClock | JumpClock):
            raise KwireError("advance() needs a broker started with manual_clock=True or clock=JumpClock()")
        return self.call(lambda: self.core.advance(ms))

    # --- recording --------------------------------------------------------------------------
    def start_recording(self) -> None:
        def run() -> None:
            if self.core.recording is None:
                self.core.recording = []
        self.call(run)

    def recorded(self) -> list[Exchange]:
        """Every request since ``start_recording``, with its response, timestamps and connection.

        Requests the broker rejected before decoding (unreadable header, unknown api key,
        unsupported version, malformed body) are there too, raw: ``request`` is None and
        ``closed`` says why (or ``response_bytes`` holds the KIP-511 ApiVersions fallback).
        """
        return self.call(lambda: list(self.core.recording or []))

    def stats(self) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            s = self.core.stats
            return {"requests": s.requests, "closed_connections": s.closed_connections,
                    "per_api": dict(s.per_api), "connections": len(self.core.connections),
                    "reauthentications": s.reauthentications, "expired_sessions": s.expired_sessions}
        return self.call(run)

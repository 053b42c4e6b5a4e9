"""The adapter interface every real client implements, and the JSON-lines protocol behind it.

Each adapter runs its client as a child program (JVM, node, a Python runner, or a
wrapper around kcat), so every operation has a hard timeout and a crashing client
cannot take the test runner down. All programs speak the same protocol:

* stdin, first line: a command object.
  ``{"op": "produce", "bootstrap", "topic", "records": [WireRecord], "compression", "acks", "timeout_ms"}``
  ``{"op": "consume", "bootstrap", "topic", "group_id": str|null, "count", "timeout_ms",
  "from_beginning", "group_protocol"}``
  ``{"op": "member", "bootstrap", "topic", "group_id", "group_protocol", "timeout_ms"}``
  Optional ``"config": {name: value}`` passes client-specific settings through.
* stdout: one event object per line. ``{"event": "produced", "partition", "offset"}``,
  ``{"event": "record", **WireRecord}``, ``{"event": "done"}``, ``{"event": "error",
  "error", "message"}``; a member adds ``ready``, ``assignment`` (its whole current
  assignment as ``partitions``), ``commit_failed`` and ``closed``.
* A member reads further commands (``{"op": "stop"}``); EOF means stop. A member
  commits before it reports records, so every reported record is committed.
* ``{"op": "producer", "bootstrap", "topic", "compression", "acks", "timeout_ms", "config"}``
  starts a long-lived producer: it says ``ready``, then takes ``{"op": "send", "records":
  [WireRecord + "seq"]}`` lines, sends them without waiting, and reports each record as
  ``{"event": "produced", "seq", "partition", "offset"}`` or ``{"event": "produce_failed",
  "seq", "message"}`` (``seq`` is null where the client cannot tell which record was
  acknowledged: kcat). ``{"op": "stop"}`` or EOF flushes, closes and reports ``closed``.

* ``{"op": "txn_producer", "bootstrap", "topic", "transactional_id", "timeout_ms", "config"}``
  starts a transactional producer: it initializes (InitProducerId), says ``ready``, then takes
  one step at a time: ``{"op": "begin"}``, ``{"op": "send", "records": [WireRecord + "seq"]}``
  (sent and flushed: each record reported as ``produced``), ``{"op": "commit"}``,
  ``{"op": "abort"}``; each step ends with ``{"event": "txn", "step"}`` or ``{"event":
  "txn_failed", "step", "error", "message"}``. ``stop`` or EOF closes it (``closed``).

* ``{"op": "share_consumer", "bootstrap", "group_id", "ack_mode", "config"}`` starts a share
  consumer driven step by step (``kwire.conformance.clients.share``, docs/driver-protocol.md).
* ``{"op": "describe"}`` answers ``describe`` (ops, ``features``, ``lacks``: see ``Hello``).

WireRecord: ``{"key": hex|null, "value": hex|null, "headers": [[name, hex|null], ...],
"partition": int|null, "offset": int}``; hex keeps binary data intact.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from kwire.conformance.clients._proc import Event, JsonLineProcess, run_json_command
from kwire.errors import ConformanceError

__all__ = [
    "ALL_CODECS",
    "FEATURES",
    "Ack",
    "Hello",
    "ClientAdapter",
    "GroupMember",
    "GroupProtocol",
    "Produced",
    "ProduceResult",
    "ProducerSession",
    "Record",
    "Security",
    "TxnProducerSession",
]

ALL_CODECS: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")
GroupProtocol = Literal["classic", "consumer"]
Header = tuple[str, bytes | None]

# Seconds added to a child's own timeout before the parent kills it: JVM start-up
# plus a clean shutdown.
_KILL_MARGIN_S = 15.0


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def _unhex(s: str | None) -> bytes | None:
    return None if s is None else bytes.fromhex(s)


@dataclass(slots=True, frozen=True)
class Record:
    """One Kafka record as a test sees it; partition/offset are set on consumed ones."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    partition: int | None = None
    offset: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """The WireRecord form (hex bytes)."""
        return {
            "key": _hex(self.key),
            "value": _hex(self.value),
            "headers": [[k, _hex(v)] for k, v in self.headers],
            "partition": self.partition,
        }

    @classmethod
    def from_wire(cls, ev: Mapping[str, Any]) -> Record:
        """Parse a ``record`` event."""
        return cls(
            key=_unhex(ev.get("key")),
            value=_unhex(ev.get("value")),
            headers=tuple((str(k), _unhex(v)) for k, v in ev.get("headers") or ()),
            partition=ev.get("partition"),
            offset=ev.get("offset"),
        )

    def content(self) -> tuple[bytes | None, bytes | None, tuple[Header, ...]]:
        """What a round trip must preserve: key, value, headers in order."""
        return (self.key, self.value, self.headers)


@dataclass(slots=True, frozen=True)
class Security:
    """How a scenario wants the client to connect: the listener's protocol, the CA that signed the
    broker's certificate, and for SASL the mechanism and credentials (OAUTHBEARER: ``username`` is
    the ``sub`` of an unsecured JWS the client makes itself, as Kafka's unsecured login does)."""

    protocol: str  # SSL | SASL_SSL | SASL_PLAINTEXT
    ca_file: str
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None


def librdkafka_security(sec: Security) -> dict[str, Any]:
    """librdkafka's names (confluent-kafka, kcat)."""
    conf: dict[str, Any] = {"security.protocol": sec.protocol}
    if "SSL" in sec.protocol:
        conf["ssl.ca.location"] = sec.ca_file
    if sec.mechanism == "OAUTHBEARER":
        conf.update({"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
                     "sasl.oauthbearer.config": f"principal={sec.username} lifeSeconds=3600"})
    elif sec.mechanism is not None:
        conf.update({"sasl.mechanism": sec.mechanism, "sasl.username": sec.username, "sasl.password": sec.password})
    return conf


@dataclass(slots=True, frozen=True)
class Produced:
    """Where the broker put one produced record; None where the client does not say (kcat)."""

    partition: int | None
    offset: int | None


@dataclass(slots=True)
class ProduceResult:
    """Outcome of one produce call, in the order of the records given."""

    client: str
    produced: list[Produced]
    elapsed_s: float


# Capabilities beyond the ops that a driver announces in its ``describe`` answer ("features") or
# declines with a reason ("lacks": {capability: reason}); docs/driver-protocol.md.
FEATURES: dict[str, str] = {
    "share_consumer": "a share consumer (KIP-932)",
    "share_implicit": "implicit acknowledgement (share.acknowledgement.mode=implicit)",
    "share_renew": "RENEW acknowledgements (KIP-1222)",
    "share_commit_async": "commitAsync with results through a callback",
    "share_lock_timeout": "the acquisition lock timeout",
    "consume_positions": "consumer positions after a consume",
}
# How long a driver may take to answer ``describe`` (a JVM compiles the source driver first).
_DESCRIBE_TIMEOUT_S = 90.0


@dataclass(slots=True, frozen=True)
class Hello:
    """What a driver said about itself in its ``describe`` answer."""

    name: str = ""
    version: str = "?"
    ops: frozenset[str] = frozenset()
    features: frozenset[str] = frozenset()
    lacks: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_event(cls, ev: Mapping[str, Any], default_ops: frozenset[str] = frozenset()) -> Hello:
        ops = frozenset(str(o) for o in ev.get("ops", default_ops))
        return cls(str(ev.get("name") or ""), str(ev.get("version", "?")), ops,
                   frozenset(str(f) for f in ev.get("features") or ()),
                   {str(k): str(v) for k, v in (ev.get("lacks") or {}).items()})


# describe answers of the built-in share programs, by adapter class (one JVM start per run).
_HELLOS: dict[type, Hello] = {}


S = TypeVar("S", bound="_Session")


@dataclass(slots=True)
class _Session:
    """A long-lived client program speaking JSON lines: its events applied as they come."""

    client: str
    proc: JsonLineProcess
    ready: bool = False
    closed: bool = False
    KIND: ClassVar[str] = "session"

    def _apply_own(self, kind: object, ev: Event) -> bool:
        """Apply an event only this kind of session has; False if it is a common one."""
        return False

    def _apply(self, ev: Event) -> None:
        kind = ev.get("event")
        if self._apply_own(kind, ev):
            return
        if kind == "ready":
            self.ready = True
        elif kind == "closed":
            self.closed = True
        elif kind == "error":
            raise ConformanceError(f"{self.client} {self.KIND}: {ev.get('error')}: {ev.get('message')}")

    def pump(self, deadline: float) -> bool:
        """Apply the next event before ``deadline``; False on timeout."""
        ev = self.proc.next_event(deadline)
        if ev is None:
            return False
        self._apply(ev)
        return True

    def pump_nowait(self) -> None:
        """Apply every event already received; raises if the program exited or reported an error."""
        while self.pump(time.monotonic()):
            pass

    def _unclosed_detail(self) -> str:
        """What a "did not close" error adds (a producer: how much was acknowledged)."""
        return ""

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the program to stop (a member leaves its group, a producer flushes) and wait until
        it has closed, applying the events it reports on the way."""
        deadline = time.monotonic() + timeout_s
        with contextlib.suppress(ConformanceError):
            self.proc.send({"op": "stop"})
        self.proc.close_stdin()
        while not self.closed:
            if not self.pump(deadline):
                self.proc.close(grace_s=0)
                raise ConformanceError(f"{self.client} {self.KIND} did not close in {timeout_s}s"
                                       f"{self._unclosed_detail()}")

    def kill(self) -> None:
        """End the process without a clean stop (cleanup path)."""
        self.proc.close(grace_s=2.0)


@dataclass(slots=True)
class GroupMember(_Session):
    """A long-running consumer-group member process; see the module docstring."""

    assignment: frozenset[int] = frozenset()
    records: list[Record] = field(default_factory=list)
    KIND: ClassVar[str] = "member"

    def _apply_own(self, kind: object, ev: Event) -> bool:
        if kind == "assignment":
            self.assignment = frozenset(int(p) for p in ev.get("partitions") or ())
        elif kind == "record":
            self.records.append(Record.from_wire(ev))
        else:
            return False
        return True



@dataclass(slots=True, frozen=True)
class Ack:
    """One acknowledgement of a producer session; ``seq`` is None where the client cannot say (kcat)."""

    seq: int | None
    partition: int | None
    offset: int | None


def _numbered(records: Sequence[Record], first_seq: int) -> list[dict[str, Any]]:
    """Records as the driver protocol carries them, with sequence numbers from ``first_seq``."""
    wire = []
    for seq, r in enumerate(records, first_seq):
        w = r.to_wire()
        w["seq"] = seq
        wire.append(w)
    return wire


@dataclass(slots=True)
class ProducerSession(_Session):
    """A long-lived producer process (``op: producer``); see the module docstring."""

    acks: list[Ack] = field(default_factory=list)
    failures: list[tuple[int | None, str]] = field(default_factory=list)
    sent: int = 0
    KIND: ClassVar[str] = "producer"

    def _apply_own(self, kind: object, ev: Event) -> bool:
        if kind == "produced":
            self.acks.append(Ack(ev.get("seq"), ev.get("partition"), ev.get("offset")))
        elif kind == "produce_failed":
            self.failures.append((ev.get("seq"), str(ev.get("message"))))
        else:
            return False
        return True

    def send(self, records: Sequence[Record]) -> None:
        """Hand records to the producer; they get sequence numbers ``sent``, ``sent + 1``, …"""
        wire = _numbered(records, self.sent)
        self.sent += len(wire)
        self.proc.send({"op": "send", "records": wire})

    def wait_acked(self, count: int, timeout_s: float, what: str) -> None:
        """Wait until ``count`` records were acknowledged; raise on timeout or a failed record."""
        deadline = time.monotonic() + timeout_s
        while len(self.acks) < count:
            if self.failures:
                seq, msg = self.failures[0]
                raise ConformanceError(f"{self.client}: record {seq} failed ({what}): {msg}")
            if not self.pump(deadline):
                raise ConformanceError(
                    f"{self.client}: {len(self.acks)} of {count} records acknowledged after "
                    f"{timeout_s:.0f}s ({what}; {self.proc.diagnostics()})"
                )

    def _unclosed_detail(self) -> str:
        return f" ({len(self.acks)} of {self.sent} acknowledged; {self.proc.diagnostics()})"

    def stop(self, timeout_s: float = 60.0) -> None:
        """Flush and close the producer, collecting every acknowledgement it reports."""
        _Session.stop(self, timeout_s)


@dataclass(slots=True)
class TxnProducerSession(_Session):
    """A transactional producer process (``op: txn_producer``), driven one step at a time."""

    acks: list[Ack] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # completed steps, in order
    failed: tuple[str, str] | None = None  # (step, message) of the last failed step
    sent: int = 0
    KIND: ClassVar[str] = "transactional producer"

    def _apply_own(self, kind: object, ev: Event) -> bool:
        if kind == "produced":
            self.acks.append(Ack(ev.get("seq"), ev.get("partition"), ev.get("offset")))
        elif kind == "txn":
            self.steps.append(str(ev.get("step")))
        elif kind == "txn_failed":
            self.failed = (str(ev.get("step")), f"{ev.get('error')}: {ev.get('message')}")
        else:
            return False
        return True

    def _step(self, command: dict[str, Any], timeout_s: float) -> None:
        done = len(self.steps)
        self.failed = None
        self.proc.send(command)
        deadline = time.monotonic() + timeout_s
        while len(self.steps) == done:
            if self.failed is not None:
                raise ConformanceError(f"{self.client}: transaction step {self.failed[0]} failed: {self.failed[1]}")
            if not self.pump(deadline):
                raise ConformanceError(f"{self.client}: transaction step {command['op']} did not finish in "
                                       f"{timeout_s:.0f}s ({self.proc.diagnostics()})")

    def begin(self, timeout_s: float = 30.0) -> None:
        self._step({"op": "begin"}, timeout_s)

    def send(self, records: Sequence[Record], timeout_s: float = 30.0) -> list[Ack]:
        """Send records in the open transaction and wait until each is acknowledged."""
        wire = _numbered(records, self.sent)
        self.sent += len(wire)
        before = len(self.acks)
        self._step({"op": "send", "records": wire}, timeout_s)
        return self.acks[before:]

    def send_offsets(self, group: str, offsets: Mapping[tuple[str, int], int], timeout_s: float = 30.0) -> None:
        """sendOffsetsToTransaction: ``offsets`` ((topic, partition) -> next offset) for ``group``
        ride in the open transaction (TX-23)."""
        self._step({"op": "send_offsets", "group": group, "offsets": [
            {"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(offsets.items())]}, timeout_s)

    def commit(self, timeout_s: float = 30.0) -> None:
        self._step({"op": "commit"}, timeout_s)

    def abort(self, timeout_s: float = 30.0) -> None:
        self._step({"op": "abort"}, timeout_s)


class ClientAdapter(ABC):
    """One real Kafka client. Subclasses say how to launch its JSON-lines program."""

    name: ClassVar[str]
    supported_codecs: ClassVar[tuple[str, ...]] = ALL_CODECS
    supports_kip848: ClassVar[bool] = False
    # kcat takes headers on its command line: text only, no null values.
    binary_headers: ClassVar[bool] = True
    # Whether consume(group_id=None) reads without joining any group.
    groupless_consume: ClassVar[bool] = True
    # Producer settings for the failover scenario: ride out a dead broker (retries,
    # timeouts) and, where ``failover_idempotent``, turn idempotence on, which promises
    # each acknowledged record exactly once and in order per partition.
    failover_config: ClassVar[Mapping[str, Any]] = {}
    failover_idempotent: ClassVar[bool] = False
    # Why the failover scenario reads nothing while the brokers change (None: a groupless
    # consumer reads the whole stream during the faults; the read-back after them runs always).
    failover_no_live_read: ClassVar[str | None] = None
    # Consumer settings for the failover scenario's reads.
    failover_consumer_config: ClassVar[Mapping[str, Any]] = {}
    # Driver operations the client's program understands (the built-in drivers: all of them).
    supported_ops: ClassVar[frozenset[str]] = frozenset({"produce", "consume", "member", "producer", "txn_producer"})
    # Why the client has no transactional producer this harness can drive step by step (None: it has).
    no_transactions: ClassVar[str | None] = None
    # A client whose only transactions are one per produce run, committed at exit (kcat's
    # -X transactional.id): scenarios that need no more than that use ``produce`` with it.
    txn_commit_at_exit: ClassVar[bool] = False
    # Consumer settings that make the client read committed records only (KIP-98 read_committed).
    read_committed_config: ClassVar[Mapping[str, Any]] = {"isolation.level": "read_committed"}
    # scenario -> a defect of the client library itself that makes it fail that scenario, with the
    # evidence (frames recorded at the broker, the client's source, the Kafka rule it breaks). The
    # scenario still runs: a failure's reason names the defect (run_scenario), and the pytest cell is
    # xfail(strict=True), so a fixed client turns it into an XPASS failure and the entry must go.
    # Only defects the client shows on every run (a strict xfail would flake on a race). Defects of
    # a broker stand-in belong to that target (rdkafka_mock.KNOWN_DEFECTS), not here.
    known_defects: ClassVar[Mapping[str, str]] = {}

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        """The client's own settings for ``sec`` (merged into each command's ``config``), or why
        the client cannot connect that way (the scenario skips with it)."""
        return f"the {self.name} adapter has no TLS/SASL settings"

    # Why the built-in client has no share consumer (None: ``share_argv`` names its program).
    no_share_consumer: ClassVar[str | None] = None
    # ``FEATURES`` the built-in driver program has beyond what its share driver's describe says.
    features: ClassVar[frozenset[str]] = frozenset()

    def share_argv(self) -> list[str] | None:
        """The program that answers ``share_consumer`` (None: the client has none)."""
        return None if self.no_share_consumer is not None else self.argv()

    def share_env(self) -> dict[str, str] | None:
        """Extra environment of the share program."""
        return self.env()

    def hello(self) -> Hello:
        """What the client's share driver says about itself (``describe``), asked once per run."""
        cached = _HELLOS.get(type(self))
        if cached is not None:
            return cached
        argv = self.share_argv() if self.unavailable_reason() is None else None
        if argv is None:
            hello = Hello(self.name, ops=self.supported_ops,
                          lacks={"share_consumer": self.no_share_consumer or f"{self.name} has no share consumer"})
        else:
            try:
                events = run_json_command(argv, {"op": "describe"}, _DESCRIBE_TIMEOUT_S, env=self.share_env(),
                                          label=f"{self.name} describe")
                ev = next((e for e in events if e.get("event") == "describe"), {})
                hello = Hello.from_event(ev, self.supported_ops)
            except ConformanceError as exc:
                hello = Hello(self.name, ops=self.supported_ops,
                              lacks={"share_consumer": f"the share driver did not describe itself: {exc}"})
        _HELLOS[type(self)] = hello
        return hello

    def lacks(self, capability: str) -> str | None:
        """Why the client cannot do ``capability`` (an op or a ``FEATURES`` name); None when it can."""
        reason = self.unavailable_reason()
        if reason is not None:
            return f"not installed: {reason}"
        if capability != "share_consumer" and capability.startswith("share_"):
            base = self.lacks("share_consumer")
            if base is not None:
                return base
        hello = self.hello()
        if capability in hello.lacks:
            return hello.lacks[capability]
        if capability == "share_consumer":
            return None if "share_consumer" in hello.ops else "the driver does not announce op share_consumer"
        if capability in FEATURES:
            have = hello.features | self.features
            return None if capability in have else f"the driver does not announce {capability}"
        return None if capability in self.supported_ops else f"the driver lacks {capability}"

    def available(self) -> bool:
        """Whether the client is installed here."""
        return self.unavailable_reason() is None

    @abstractmethod
    def unavailable_reason(self) -> str | None:
        """Why the client cannot run (None when it can), e.g. 'run tools/install_clients.sh java'."""

    @abstractmethod
    def argv(self) -> list[str]:
        """The command line of the client's JSON-lines program."""

    def env(self) -> dict[str, str] | None:
        """Extra environment for the program."""
        return None

    def _run(self, command: Mapping[str, Any], timeout_s: float) -> list[Event]:
        reason = self.unavailable_reason()
        if reason is not None:
            raise ConformanceError(f"{self.name} unavailable: {reason}")
        cmd = dict(command)
        cmd["timeout_ms"] = int(timeout_s * 1000)
        return run_json_command(self.argv(), cmd, timeout_s + _KILL_MARGIN_S, env=self.env(), label=self.name)

    def produce(
        self,
        bootstrap: str,
        topic: str,
        records: Sequence[Record],
        *,
        compression: str = "none",
        acks: int = -1,
        timeout_s: float = 30.0,
        config: Mapping[str, Any] | None = None,
    ) -> ProduceResult:
        """Produce ``records`` in order and wait for every acknowledgement."""
        if compression not in self.supported_codecs:
            raise ConformanceError(f"{self.name} does not support compression {compression!r}")
        start = time.monotonic()
        events = self._run(
            {
                "op": "produce",
                "bootstrap": bootstrap,
                "topic": topic,
                "records": [r.to_wire() for r in records],
                "compression": compression,
                "acks": acks,
                "config": dict(config or {}),
            },
            timeout_s,
        )
        produced = [
            Produced(e.get("partition"), e.get("offset")) for e in events if e.get("event") == "produced"
        ]
        if len(produced) != len(records):
            raise ConformanceError(f"{self.name}: {len(produced)} acks for {len(records)} records")
        return ProduceResult(self.name, produced, time.monotonic() - start)

    def consume(
        self,
        bootstrap: str,
        topic: str,
        *,
        group_id: str | None,
        count: int,
        timeout_s: float = 30.0,
        from_beginning: bool = True,
        group_protocol: GroupProtocol = "classic",
        config: Mapping[str, Any] | None = None,
    ) -> list[Record]:
        """Read until ``count`` records arrived or ``timeout_s`` passed; fewer is not an error.

        With a group the consumer subscribes and commits; without one it reads every
        partition directly.
        """
        events = self._run(
            {
                "op": "consume",
                "bootstrap": bootstrap,
                "topic": topic,
                "group_id": group_id,
                "count": count,
                "from_beginning": from_beginning,
                "group_protocol": group_protocol,
                "config": dict(config or {}),
            },
            timeout_s,
        )
        return [Record.from_wire(e) for e in events if e.get("event") == "record"]

    def consume_committed(
        self,
        bootstrap: str,
        topic: str,
        *,
        count: int,
        timeout_s: float = 30.0,
    ) -> tuple[list[Record], dict[int, int] | None]:
        """A groupless read_committed read (KIP-98): the records and, where the driver announces
        ``consume_positions``, each partition's position afterwards (None otherwise).

        The command carries ``isolation_level`` for drivers that take it, and the adapter's
        ``read_committed_config`` for the built-in ones."""
        command: dict[str, Any] = {
            "op": "consume", "bootstrap": bootstrap, "topic": topic, "group_id": None, "count": count,
            "from_beginning": True, "group_protocol": "classic", "isolation_level": "read_committed",
            "config": dict(self.read_committed_config),
        }
        want_positions = self.lacks("consume_positions") is None
        if want_positions:
            command["positions"] = True
        events = self._run(command, timeout_s)
        records = [Record.from_wire(e) for e in events if e.get("event") == "record"]
        got = next((e for e in events if e.get("event") == "positions"), None)
        if not want_positions or got is None:
            return records, None
        return records, {int(p): int(o) for p, o in (got.get("positions") or {}).items()}

    def start_member(
        self,
        bootstrap: str,
        topic: str,
        group_id: str,
        *,
        group_protocol: GroupProtocol = "classic",
        lifetime_s: float = 120.0,
        ready_timeout_s: float = 30.0,
        config: Mapping[str, Any] | None = None,
    ) -> GroupMember:
        """Start a group member; returns once it reports ``ready`` (subscribed)."""
        return self._start_session(GroupMember, {
            "op": "member", "bootstrap": bootstrap, "topic": topic, "group_id": group_id,
            "group_protocol": group_protocol, "timeout_ms": int(lifetime_s * 1000), "config": dict(config or {}),
        }, ready_timeout_s)

    def start_producer(
        self,
        bootstrap: str,
        topic: str,
        *,
        compression: str = "none",
        acks: int = -1,
        lifetime_s: float = 120.0,
        ready_timeout_s: float = 30.0,
        config: Mapping[str, Any] | None = None,
    ) -> ProducerSession:
        """Start a long-lived producer; returns once it reports ``ready``."""
        return self._start_session(ProducerSession, {
            "op": "producer", "bootstrap": bootstrap, "topic": topic, "compression": compression, "acks": acks,
            "timeout_ms": int(lifetime_s * 1000), "config": dict(config or {}),
        }, ready_timeout_s)

    def start_txn_producer(
        self,
        bootstrap: str,
        topic: str,
        transactional_id: str,
        *,
        lifetime_s: float = 120.0,
        ready_timeout_s: float = 60.0,
        config: Mapping[str, Any] | None = None,
    ) -> TxnProducerSession:
        """Start a transactional producer; returns once it has its producer id (``ready``)."""
        return self._start_session(TxnProducerSession, {
            "op": "txn_producer", "bootstrap": bootstrap, "topic": topic, "transactional_id": transactional_id,
            "timeout_ms": int(lifetime_s * 1000), "config": dict(config or {}),
        }, ready_timeout_s)

    def _start_session(self, cls: type[S], request: dict[str, Any], ready_timeout_s: float) -> S:
        reason = self.unavailable_reason()
        if reason is not None:
            raise ConformanceError(f"{self.name} unavailable: {reason}")
        proc = JsonLineProcess(self.argv(), env=self.env(), label=f"{self.name} {cls.KIND}").start()
        session = cls(self.name, proc)
        try:
            proc.send(request)
            # Some clients report events (a member's assignment) before ready; pumping keeps them.
            deadline = time.monotonic() + ready_timeout_s
            while not session.ready:
                if not session.pump(deadline):
                    raise ConformanceError(
                        f"{self.name} {cls.KIND} not ready in {ready_timeout_s}s ({proc.diagnostics()})"
                    )
        except BaseException:
            proc.close(grace_s=0)
            raise
        return session

    def installed_version(self) -> str:
        """The installed client's exact version; each adapter that can tell overrides this."""
        return "?"

    def client_version(self) -> str:
        """The client's exact version for reports ("?" where it cannot be told)."""
        if self.unavailable_reason() is not None:
            return "not installed"
        try:
            return self.installed_version()
        except Exception:  # noqa: BLE001 - a version is decoration; never fail a report for it
            return "?"

    def describe(self) -> str:
        """A one-line summary for reports."""
        return f"{self.name} (codecs {','.join(self.supported_codecs)}; kip848={self.supports_kip848})"


def check_codecs(codecs: Iterable[str]) -> tuple[str, ...]:
    """Validate codec names against ``ALL_CODECS``."""
    out = tuple(codecs)
    for c in out:
        if c not in ALL_CODECS:
            raise ConformanceError(f"unknown compression codec {c!r}")
    return out

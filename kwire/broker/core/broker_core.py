"""The broker's sans-I/O core: every request of every connection passes through ``handle``.

Theory of operation
-------------------
* One object owns all state (cluster, logs, groups, offsets, configs); trio runs on one
  thread and no core call awaits, so no handler takes a lock (kfake's single owner, for free).
* ``handle(conn, payload)`` decodes one request frame and returns an ``Outcome``: bytes to
  send, nothing (acks=0), "deferred" (the answer comes later through ``take_outbox``), or
  "close". A handler defers with ``ctx.defer()``, which hands back a ``Reply`` to send on.
* Time is ``clock.now_ms()`` only. Whatever expires later is a deadline in ``deadlines``;
  the edge sleeps until ``next_deadline_ms()`` and then calls ``fire_due()``. With a manual
  clock, ``advance(ms)`` steps the clock through each deadline in between instead, so every
  callback sees its own due time (periodic and chained timers fire as often as they would).
* Long polls park under keys naming what they wait for (a partition ``(topic, index)``; any
  hashable value, e.g. a share partition). ``wake(key)`` only notes the key; the wake-ups run
  after the current request or timer callback has returned (``run_wakeups``), never inside
  it. A woken poll is asked ``ready()`` (cheap, no side effects) and only when it is, or at
  its deadline, ``complete(final)`` builds the answer, once.
* Every deferred reply not yet sent counts in ``unanswered_requests()``.
"""

from __future__ import annotations

import functools
import itertools
import logging
import struct
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kwire.broker.config import BrokerConfig, SaslConfig
from kwire.broker.core.acl import AUTHORIZER_SETTINGS
from kwire.broker.core.acl_rules import check_request
from kwire.broker.core.cluster import BrokerNode, Cluster, Partition, Rng, SeededRng, Topic
from kwire.broker.core.configs import ConfigStore, ResourceType
from kwire.broker.core.connection_quotas import ConnectionQuotas
from kwire.broker.core.deadlines import Deadline, Deadlines
from kwire.broker.core.dispatch import EncodedBody, HandlerSpec
from kwire.broker.core.faults import FaultAction, Faults
from kwire.broker.core.listeners import Listener, listener_setting, parse_listeners
from kwire.broker.core.log import LogConfig
from kwire.broker.core.quotas import CLIENT_QUOTAS_SETTING
from kwire.broker.core.sasl import SUPPORTED_MECHANISMS, SaslAuthenticationError, SaslExchange, evaluate_token
from kwire.clock import Clock, JumpClock, ManualClock
from kwire.errors import (
    ConfigError,
    DecodeError,
    KafkaError,
    KwireError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.framing import RequestFrame, encode_response, peek_request_header
from kwire.protocol.registry import (
    ApiKey,
    api_info,
    request_header_version,
    response_header_version,
    schema_class,
)
from kwire.protocol.splice import FramePieces, SpliceBuffer, as_bytes

if TYPE_CHECKING:
    from kwire.broker.core.subsystems import Subsystems

__all__ = ["BrokerCore", "ConnInfo", "RequestContext", "Reply", "Outcome", "Exchange", "LongPoll", "Parked"]

log = logging.getLogger("kwire.broker")

_MIN_REAUTH_INTERVAL_MS = 1000  # KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS


@dataclass(slots=True)
class ConnInfo:
    """What the core knows about one client connection."""

    conn_id: int
    broker_id: int
    peer: str = ""
    client_software_name: str | None = None
    client_software_version: str | None = None
    # SASL: None = not required; otherwise the handshake state machine's position.
    sasl_mechanism: str | None = None
    authenticated: bool = False
    principal: str = "User:ANONYMOUS"
    sasl_state: SaslExchange | None = None
    # The listener the connection came in on (its advertised addresses are the ones answered).
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    # KIP-368: when the SASL session ends (broker clock); None = never (SEC-12)
    session_expires_ms: int | None = None
    # during a re-authentication: the mechanism and principal it must keep (SEC-13)
    reauth_of: tuple[str, str] | None = None
    last_reauth_ms: int | None = None
    # KIP-219: a throttled connection reads no request before this broker time (quotas).
    muted_until_ms: int = 0
    close_reason: str = ""  # why the core closes it (a failed login...): the broker log's line says it
    received_ms: int | None = None  # when the request being handled arrived (a muted one waits)


@dataclass(slots=True)
class Outcome:
    """What to do with one request: send ``data``, send nothing, wait, or close."""

    kind: str  # "send" | "none" | "deferred" | "close"
    data: bytes | FramePieces = b""
    reason: str = ""


SEND_NOTHING = Outcome("none")
DEFERRED = Outcome("deferred")


@dataclass(slots=True)
class Exchange:
    """One recorded request/response pair."""

    at_ms: int
    conn_id: int
    broker_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: Any  # None: the broker could not decode it or does not serve it (see ``closed``)
    request_bytes: bytes
    response: Any = None
    response_bytes: bytes | None = None
    closed: str | None = None
    response_at_ms: int | None = None  # broker time the answer was made
    # Wire time in µs (monotonic, from the I/O edge's ``wire_clock_us``; None without one): when the
    # request was taken and its answer made, so a capture shows real latency, not broker-clock ms.
    at_us: int | None = None
    response_at_us: int | None = None
    received_at_ms: int | None = None  # broker time the request's bytes arrived (before any mute)


class Reply:
    """A deferred answer: whoever completes the request calls ``send`` once."""

    __slots__ = ("core", "conn_id", "api_key", "api_version", "correlation_id", "done", "exchange", "ctx")

    def __init__(self, core: BrokerCore, ctx: RequestContext) -> None:
        self.core = core
        self.conn_id = ctx.conn.conn_id
        self.api_key = ctx.api_key
        self.api_version = ctx.api_version
        self.correlation_id = ctx.correlation_id
        self.exchange = ctx.exchange
        self.ctx = ctx
        self.done = False

    def send(self, response: Any) -> None:
        if self.done:
            return
        self.core.throttle(self.ctx, response)
        self.done = True
        self.core._unanswered.pop(self, None)
        try:
            data = _encode_answer(response, self.api_key, self.api_version, self.correlation_id)
        except KwireError:
            log.exception("encoding a deferred api key %d v%d response failed", self.api_key, self.api_version)
            self.core.outbox.append((self.conn_id, None))
            return
        if self.ctx.decided_ns is not None:
            self.core.record_network_time(self.ctx)
        if self.exchange is not None:
            self.exchange.response = response
            self.exchange.response_bytes = as_bytes(data)
            self.core.answered(self.exchange)
        self.core.outbox.append((self.conn_id, data))

    def close(self, reason: str) -> None:
        if self.done:
            return
        self.done = True
        self.core._unanswered.pop(self, None)
        if self.exchange is not None:
            self.exchange.closed = reason
        self.ctx.conn.close_reason = reason
        self.core.outbox.append((self.conn_id, None))


@dataclass(slots=True)
class RequestContext:
    core: BrokerCore
    conn: ConnInfo
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: Any
    exchange: Exchange | None = None
    deferred: Reply | None = None
    request_size: int = 0  # the request's bytes (producer_byte_rate counts them)
    # Set by a handler whose answer is a pure function of this key (with the API key and
    # version): the core encodes it once and reuses the bytes (ApiVersions).
    cache_key: Hashable | None = None
    # request_percentage (QUO-7), from BrokerCore.request_timer: when the core took the request
    # (None: not timed), its handler's first pass when it deferred, when the throttle was decided
    started_ns: int | None = None
    handler_ns: int | None = None
    decided_ns: int | None = None

    @property
    def broker_id(self) -> int:
        return self.conn.broker_id

    @property
    def now_ms(self) -> int:
        return self.core.clock.now_ms()

    def defer(self) -> Reply:
        if self.deferred is None:
            self.deferred = Reply(self.core, self)
        return self.deferred


class LongPoll(Protocol):
    """A parked request's answer, in two steps (ShareFetch acquires records while building one)."""

    def ready(self) -> bool:
        """Whether the answer should go now; cheap, and without side effects."""
        ...

    def complete(self, final: bool) -> Any:
        """Build the response (called once: when ready, or with ``final`` at the deadline)."""
        ...


@dataclass(slots=True, eq=False)
class Parked:
    """A long poll waiting under ``keys`` until ready or its deadline (hashed by identity)."""

    reply: Reply
    keys: tuple[Hashable, ...]
    poll: LongPoll
    seq: int
    deadline: Deadline | None = None


@dataclass(slots=True)
class BrokerStats:
    requests: int = 0
    closed_connections: int = 0
    per_api: dict[int, int] = field(default_factory=dict)
    reauthentications: int = 0  # KIP-368 re-authentications begun
    expired_sessions: int = 0  # connections closed for a SASL session expired without one


def _decode_request(payload: bytes | bytearray, key: int | None = None, version: int = 0) -> RequestFrame:
    """Decode a request as a Kafka broker parses it: bytes after the body are ignored.

    The Java request parser never checks for leftovers, and librdkafka 2.x relies on that: its
    Metadata v13 request (all topics) carries a 4-byte array-count placeholder of which the
    broker reads only the first byte as the compact null, leaving 3 bytes behind.
    ``key`` and ``version``: the header's, when the caller peeked them already.
    """
    if key is None:
        key, version, _ = peek_request_header(payload)
    codec = _CODECS.get((key, version))
    if codec is None:
        codec = _codec(key, version)
    request_class, hv, _ = codec
    header, pos = _REQUEST_HEADER.decode_from(payload, 0, hv)
    body, _ = request_class.decode_from(memoryview(payload)[pos:], 0, version)
    return RequestFrame(key, version, header.correlation_id, header.client_id, header, body, hv)


_CORRELATION_ID = struct.Struct(">i")
_HEADER_V1 = struct.Struct(">iB")
_MAX_CACHED_ANSWERS = 256
_MAX_CACHED_LOG_CONFIGS = 4096


@functools.lru_cache(maxsize=4096)
def _key_hash(key: str) -> int:
    """The hash ``coordinator_for`` places a group or transactional id with (a pure function of
    the key, so kept for the ids in use: it runs on every coordinator request)."""
    h = 0
    for ch in key.encode():
        h = (h * 31 + ch) & 0x7FFFFFFF
    return h

# (api key, version) -> (request class, request header version, response header version): the
# registry's lookups build an ApiInfo per call; these never change while the process runs.
_CODECS: dict[tuple[int, int], tuple[Any, int, int]] = {}
_REQUEST_HEADER = schema_class("RequestHeader")


def _codec(key: int, version: int) -> tuple[Any, int, int]:
    info = api_info(key)
    info.check_version(version)
    codec = (info.request_class, request_header_version(key, version), response_header_version(key, version))
    _CODECS[(key, version)] = codec
    return codec


def _encode_answer(response: Any, api_key: int, version: int, correlation_id: int) -> bytes | FramePieces:
    """``encode_response_frame`` with the header version looked up once per (key, version)."""
    codec = _CODECS.get((api_key, version))
    hv = codec[2] if codec is not None else response_header_version(api_key, version)
    # ResponseHeader v0 is the correlation id; v1 adds the tagged fields (none): one 0 byte.
    header = _HEADER_V1.pack(correlation_id, 0) if hv else _CORRELATION_ID.pack(correlation_id)
    if type(response) is EncodedBody:
        return header + response.body
    out = SpliceBuffer(header)
    response.encode_into(out, version)
    if out.splices:
        return FramePieces(out)
    return bytes(out)


def _no_time() -> int:
    return 0


class BrokerCore:
    """All broker state and request handling, with no I/O."""

    def __init__(self, config: BrokerConfig, clock: Clock, *, handlers: Mapping[int, HandlerSpec],
                 rng: Rng | None = None) -> None:
        # The API surface comes from outside (``kwire.broker.handlers.load_handlers()``): the core
        # dispatches to it and never imports the handler modules (tests/test_import_walls.py).
        self.handlers = handlers
        self.config = config
        self.clock = clock
        self.rng: Rng = rng if rng is not None else SeededRng(config.seed)
        nodes = [BrokerNode(config.first_node_id + i, config.advertised_host or config.host,
                            config.port + i if config.port else 0)
                 for i in range(config.brokers)]
        self.cluster = Cluster(nodes, self.rng, config.cluster_id)
        self.configs = ConfigStore(static_broker=dict(config.settings))
        for k, v in config.settings.items():
            if k == CLIENT_QUOTAS_SETTING:
                continue  # kwire's own: the client quotas to start with (ClientQuotas reads it)
            # listener.name.<l>.<key>: kept as Kafka keeps a listener-scoped key (SEC-1); the
            # authorizer's own settings are not KafkaConfig keys: kept as written (StandardAuthorizer)
            self.configs.set(ResourceType.BROKER, "", k, v, static=True,
                             custom=k.startswith("listener.name.") or k in AUTHORIZER_SETTINGS)
        self.listeners = parse_listeners(config.settings, default_port=config.port, sasl=config.sasl is not None,
                                         advertised_host=config.advertised_host)
        if config.sasl is None and any(li.protocol.sasl for li in self.listeners):
            config.sasl = SaslConfig()  # a SASL listener with the default users
        for li in self.listeners:
            if li.protocol.sasl:
                unknown = [m for m in self.sasl_mechanisms(li.name) if m not in SUPPORTED_MECHANISMS]
                if unknown:
                    raise ConfigError(f"sasl.enabled.mechanisms of listener {li.name}: kwire does not serve "
                                      f"{', '.join(unknown)} (it serves {', '.join(SUPPORTED_MECHANISMS)})")
        for i, node in enumerate(nodes):
            node.host = self.advertised_host(self.listeners[0])
            node.port = self.listen_port(self.listeners[0], i)
        self.configs.format_cluster()  # the cluster-level defaults a new Kafka cluster has
        self.configs.check_broker_constraints()  # Kafka's broker does not start with these broken
        if "socket.request.max.bytes" in config.settings:
            config.max_request_bytes = self.configs.get_int(ResourceType.BROKER, "", "socket.request.max.bytes")
        self.deadlines = Deadlines()
        self.faults = Faults()
        self.outbox: list[tuple[int, bytes | FramePieces | None]] = []
        self.connections: dict[int, ConnInfo] = {}
        self._conn_ids = itertools.count(1)
        # Long polls: all of them in park order, and by the keys they wait on.
        self._parked: dict[Parked, None] = {}
        self._waiters: dict[Hashable, dict[Parked, None]] = {}
        self._park_seq = itertools.count()
        # Keys woken during the current request or timer; run by run_wakeups afterwards.
        self._woken: dict[Hashable, None] = {}
        self._wake_all = False
        # Deferred replies not sent yet (long polls, group joins/syncs, latency faults...).
        self._unanswered: dict[Reply, None] = {}
        self.stats = BrokerStats()
        self.recording: list[Exchange] | None = None
        # Called with each recorded exchange once answered (kwire broker -v prints a line).
        self.on_answer: Callable[[Exchange], None] | None = None
        # The I/O edge's monotonic µs clock for recorded exchanges (the core keeps no wall time).
        self.wire_clock_us: Callable[[], int] | None = None
        # What request_percentage quotas measure (QUO-7): a nanosecond counter read when a request
        # is taken, when its handler's first pass ends, when its throttle is decided and after its
        # answer is encoded. The I/O edge gives time.perf_counter_ns; tests inject a deterministic
        # one; without one (a core driven by hand) every request costs 0.
        self.request_timer: Callable[[], int] = _no_time
        # The edge's host name lookup (max.connections.per.ip.overrides names); None: names kept as written
        self.resolve_host: Callable[[str], str] | None = None
        # SocketServer's ConnectionQuotas, one per broker (see ``connection_quotas``)
        self._connection_quotas: dict[int, ConnectionQuotas] = {}
        # Called after each handler and each fired deadline, before any answer leaves: the data
        # dir makes what changed durable there (a KafkaError fails the request with its code).
        self.before_answer: list[Callable[[], None]] = []
        # api key -> max version advertised (simulating an older broker); None = all implemented
        self.version_caps: dict[int, int] = {}
        # Encoded answers of requests marked cacheable (RequestContext.cache_key), without their
        # correlation id.
        self._answers: dict[tuple[int, int, Hashable], tuple[bytes, Any]] = {}
        self._log_configs: dict[Hashable, LogConfig] = {}  # see log_config
        self._listeners_changed: list[Callable[[], None]] = []
        self.subsystems: Subsystems
        self._init_subsystems()

    def _init_subsystems(self) -> None:
        """Create the coordinators that hold their own state (groups, offsets, transactions...) the
        config asks for; the data dir comes last, so that restoring it reaches every other hook."""
        from kwire.broker.core.acl import Authorizer
        from kwire.broker.core.fetch_sessions import FetchSessionCache
        from kwire.broker.core.group_table import GroupTable
        from kwire.broker.core.log_cleaner import LogCleaner
        from kwire.broker.core.offsets import OffsetStore
        from kwire.broker.core.producer_ids import ProducerIdManager
        from kwire.broker.core.quotas import ClientQuotas
        from kwire.broker.core.retention import LogRetention
        from kwire.broker.core.scram_credentials import ScramCredentialStore
        from kwire.broker.core.share_coordinator import ShareCoordinator
        from kwire.broker.core.subsystems import Subsystems
        from kwire.broker.core.txn_coordinator import LogMarkerWriter, coordinator_for_core

        subs = Subsystems(ProducerIdManager(), FetchSessionCache(), OffsetStore(), GroupTable(self),
                          LogRetention(self), ScramCredentialStore(self.config.sasl, self.rng))
        self.subsystems = subs
        subs.cleaner = LogCleaner(self)
        subs.acl = Authorizer(self)
        subs.quotas = ClientQuotas(self)
        subs.transactions = coordinator_for_core(self, LogMarkerWriter(self))
        subs.share_groups = ShareCoordinator(self, subs.groups)
        subs.share_sessions = subs.share_groups.sessions
        if self.config.sasl is not None:
            from kwire.broker.core.sasl import SaslAuthority

            subs.sasl = SaslAuthority(self.config.sasl, self.rng, subs.scram_credentials.get)
        if self.config.data_dir is not None:
            from kwire.broker.core.storage import Storage

            storage = Storage(self, self.config.data_dir)
            subs.storage = storage
            storage.restore()

    # --- connections ------------------------------------------------------------------------
    def connect(self, broker_id: int, peer: str = "", listener: str | None = None) -> ConnInfo:
        """A new connection on ``listener`` (default: the first); SASL listeners require SASL."""
        li = self.listener(listener)
        conn = ConnInfo(next(self._conn_ids), broker_id, peer, listener=li.name,
                        security_protocol=li.protocol.value)
        if li.protocol.sasl:
            conn.sasl_mechanism = ""
        self.connections[conn.conn_id] = conn
        return conn

    def connection_quotas(self, broker_id: int) -> ConnectionQuotas:
        """Broker ``broker_id``'s connection counts and rate sensors (each Kafka broker has its own
        SocketServer): the trio edge asks it about every connection it accepts."""
        cq = self._connection_quotas.get(broker_id)
        if cq is None:
            cq = self._connection_quotas[broker_id] = ConnectionQuotas(self)
        return cq

    def listener(self, name: str | None = None) -> Listener:
        """The listener called ``name`` (None: the first one)."""
        if name is None:
            return self.listeners[0]
        for li in self.listeners:
            if li.name == name:
                return li
        raise KeyError(f"no listener {name!r}")

    def listen_port(self, listener: Listener, index: int) -> int:
        """Broker ``index`` (0-based) listens on the listener's port + index * number of
        listeners (one listener: consecutive ports); 0 = any free port."""
        return listener.port + index * len(self.listeners) if listener.port else 0

    def advertised_host(self, listener: Listener) -> str:
        """advertised.listeners' host, else --advertised-host, else the listener's own host
        (unless a wildcard), else the broker's bind host."""
        if listener.advertised_host:
            return listener.advertised_host
        if listener.host and listener.host not in ("0.0.0.0", "::"):
            return listener.host
        return self.config.host

    def listener_setting(self, listener: str, key: str, mechanism: str | None = None) -> str | None:
        """A broker setting as one listener sees it (``listener.name.<l>.`` prefixes first)."""
        def get(k: str) -> str | None:
            if k.startswith("listener.name."):
                return self.configs.overrides.get((ResourceType.BROKER, ""), {}).get(k)
            return self.configs.get(ResourceType.BROKER, "", k)

        return listener_setting(get, listener, key, mechanism)

    def sasl_mechanisms(self, listener: str) -> list[str]:
        """The listener's enabled SASL mechanisms: ``listener.name.<l>.sasl.enabled.mechanisms``, else
        ``sasl.enabled.mechanisms`` when set, else ``BrokerConfig.sasl``'s (SEC-7)."""
        over = self.configs.overrides.get((ResourceType.BROKER, ""), {})
        raw = over.get(f"listener.name.{listener.lower()}.sasl.enabled.mechanisms", over.get("sasl.enabled.mechanisms"))
        if raw is not None:
            return [m.strip() for m in raw.split(",") if m.strip()]
        return list(self.config.sasl.mechanisms) if self.config.sasl is not None else []

    def disconnect(self, conn_id: int) -> None:
        conn = self.connections.pop(conn_id, None)
        if conn is None:
            return
        self.stats.closed_connections += 1
        for p in [p for p in self._parked if p.reply.conn_id == conn_id]:
            self._unpark(p)
        for r in [r for r in self._unanswered if r.conn_id == conn_id]:
            del self._unanswered[r]  # nobody is left to answer
        for sub in self.subsystems.installed():
            sub.on_disconnect(conn_id)

    # --- requests ---------------------------------------------------------------------------
    def handle(self, conn: ConnInfo, payload: bytes | bytearray) -> Outcome:
        """Handle one request frame (size prefix removed); then run the wake-ups it caused."""
        try:
            return self._handle(conn, payload)
        finally:
            if self._woken or self._wake_all:
                self.run_wakeups()

    def _handle(self, conn: ConnInfo, payload: bytes | bytearray) -> Outcome:
        self.stats.requests += 1
        quotas = self.subsystems.quotas
        started_ns = self.request_timer() if quotas is not None and quotas.request_enabled else None
        if conn.sasl_state is not None and not conn.authenticated and conn.sasl_state.raw_tokens:
            # After a v0 SaslHandshake the next frames are bare SASL tokens, not requests.
            return self._raw_sasl_token(conn, conn.sasl_state, payload)
        try:
            api_key, api_version, corr = peek_request_header(payload)
        except DecodeError as exc:
            return self._close(conn, f"unreadable request header: {exc}", self._record_raw(conn, payload))
        self.stats.per_api[api_key] = self.stats.per_api.get(api_key, 0) + 1
        spec = self.handlers.get(api_key)
        if spec is None:
            return self._close(conn, f"unknown or unsupported api key {api_key}",
                               self._record_raw(conn, payload, api_key, api_version, corr))
        cap = self.version_caps.get(api_key)  # advertised_supports, inline: on every request's path
        if not spec.min_version <= api_version <= (spec.max_version if cap is None or cap > spec.max_version
                                                    else cap):
            if api_key == ApiKey.API_VERSIONS:
                data = self._api_versions_unsupported(corr)
                ex = self._record_raw(conn, payload, api_key, api_version, corr)
                if ex is not None:
                    ex.response_bytes = data
                return Outcome("send", data)
            return self._close(conn, f"{spec.name} v{api_version} is not supported (range "
                                     f"{spec.min_version}-{self.max_version(api_key)})",
                               self._record_raw(conn, payload, api_key, api_version, corr))
        try:
            frame = _decode_request(payload, api_key, api_version)
        except (DecodeError, UnsupportedVersionError, UnknownApiKeyError) as exc:
            # A real broker cannot parse the request and closes the connection.
            return self._close(conn, f"malformed {spec.name} v{api_version} request: {exc}",
                               self._record_raw(conn, payload, api_key, api_version, corr))
        exchange = None
        if self.recording is not None:
            exchange = Exchange(self.clock.now_ms(), conn.conn_id, conn.broker_id, api_key, api_version, corr,
                                frame.client_id, frame.body, bytes(payload))
            exchange.at_us = self.wire_clock_us() if self.wire_clock_us is not None else None
            exchange.received_at_ms = conn.received_ms if conn.received_ms is not None else exchange.at_ms
            self.recording.append(exchange)
        if conn.authenticated and conn.sasl_mechanism:
            # KIP-368 (SocketServer.Processor.processCompletedReceives): a SaslHandshake on an
            # authenticated connection with a session lifetime begins re-authentication; any other
            # request after the session expired closes the connection (SEC-12, SEC-13).
            now = self.clock.now_ms()
            if api_key == ApiKey.SASL_HANDSHAKE and self._begin_reauthentication(conn, now):
                pass
            elif conn.session_expires_ms is not None and now > conn.session_expires_ms:
                self.stats.expired_sessions += 1
                return self._close(conn, f"SASL session of {conn.principal} expired at {conn.session_expires_ms} "
                                         f"without re-authentication (KIP-368)", exchange)
        ctx = RequestContext(self, conn, api_key, api_version, corr, frame.client_id, frame.header, exchange,
                             request_size=len(payload))
        if conn.sasl_mechanism is not None and not conn.authenticated:
            if conn.sasl_state is not None and api_key != ApiKey.SASL_AUTHENTICATE:
                # SaslServerAuthenticator.handleSaslToken after a v1 handshake: IllegalSaslStateException,
                # its error answer and the close delayed (SEC-14)
                resp = spec.error_response(ctx, frame.body, ErrorCode.ILLEGAL_SASL_STATE)
                self.fail_authentication(ctx.conn, f"unexpected {spec.name} during SASL authentication",
                                         ctx.defer(), resp)
                return self._deferred(ctx.defer())
            if api_key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
                # handleKafkaRequest: InvalidRequestException, closed at once
                return self._close(conn, f"{spec.name} before SASL authentication completed", exchange)
        if started_ns is not None and quotas is not None and not quotas.request_exempt(
                ctx, conn.sasl_mechanism is not None and not conn.authenticated):
            ctx.started_ns = started_ns
        node = self.cluster.nodes.get(conn.broker_id)
        if node is not None and not node.up:
            return self._close(conn, f"broker {conn.broker_id} is down", exchange)
        acl = self.subsystems.acl
        denied = check_request(acl, ctx, frame.body) if acl is not None else None
        if denied is not None:  # the group, transactional id or cluster check of acl_rules.REQUEST_CHECKS
            if api_key == ApiKey.PRODUCE and frame.body.acks == 0:  # no answer for acks=0: close (KafkaApis)
                return self._close(conn, "acks=0 produce not authorized", exchange)
            return self._error_answer(ctx, spec, frame.body, denied)
        rule = self.faults.match(api_key, conn.broker_id, frame.body) if self.faults.rules else None
        if rule is not None:
            outcome = self._apply_fault(rule, spec, ctx, frame.body)
            if outcome is not None:
                return outcome
        return self._dispatch(spec, ctx, frame.body)

    def _dispatch(self, spec: HandlerSpec, ctx: RequestContext, body: Any) -> Outcome:
        """Run the handler. A ``KafkaError`` escaping it is the whole request's answer: the
        handler's error response with that code (the one place where the core's errors become
        response codes; per-resource errors are caught by the handlers themselves)."""
        try:
            response = spec.handle(ctx, body)
            if ctx.started_ns is not None and ctx.deferred is not None and ctx.handler_ns is None:
                # the first pass is what Kafka's request thread time counts for a deferred answer
                ctx.handler_ns = self.request_timer() - ctx.started_ns
            for fn in self.before_answer:
                fn()
        except KafkaError as exc:
            return self._error_answer(ctx, spec, body, self._persist_after_error(exc))
        except Exception as exc:  # noqa: BLE001 - a handler bug must cost one request, not the broker
            log.exception("handler for %s v%d failed", spec.name, ctx.api_version)
            return self._internal_error(ctx, spec, body, f"{spec.name} handler error: {exc}")
        return self._respond(ctx, response)

    def _persist_after_error(self, exc: KafkaError) -> KafkaError:
        """A handler that failed may have changed state first: persist it; a persistence
        failure is then the request's answer."""
        try:
            for fn in self.before_answer:
                fn()
        except KafkaError as failed:
            return failed
        return exc

    def _error_answer(self, ctx: RequestContext, spec: HandlerSpec, body: Any, exc: KafkaError) -> Outcome:
        """``spec.error_response(ctx, body, exc.code)``; close when the API has no error field."""
        if ctx.deferred is not None and ctx.deferred.done:
            return self._deferred(ctx.deferred)  # the handler answered (or closed) through its Reply
        try:
            resp = spec.error_response(ctx, body, exc.code)
        except Exception:  # noqa: BLE001 - a broken error response costs the connection, not the broker
            log.exception("error response for %s failed", spec.name)
            resp = None
        if resp is None:
            return self._close(ctx.conn, f"{spec.name}: {exc} (the response has no error code)", ctx.exchange)
        if ctx.deferred is not None:
            ctx.deferred.send(resp)
            return self._deferred(ctx.deferred)
        return self._respond(ctx, resp)

    def _begin_reauthentication(self, conn: ConnInfo, now: int) -> bool:
        """KafkaChannel.maybeBeginServerReauthentication: only with a session expiry, and at most
        once a second; otherwise the handshake is answered as on any authenticated connection."""
        if conn.session_expires_ms is None:
            return False
        if conn.last_reauth_ms is not None and now - conn.last_reauth_ms < _MIN_REAUTH_INTERVAL_MS:
            return False
        conn.last_reauth_ms = now
        self.stats.reauthentications += 1
        conn.reauth_of = (conn.sasl_mechanism or "", conn.principal)
        conn.authenticated = False
        conn.sasl_state = None
        return True

    def sasl_completion(self, conn: ConnInfo) -> dict[str, int]:
        """What ``evaluate_token`` needs to end an exchange: the broker clock and the listener's
        ``connections.max.reauth.ms`` for the mechanism (``listener.name.<l>.<mech>.`` first)."""
        mech = conn.sasl_mechanism or None
        raw = self.listener_setting(conn.listener, "connections.max.reauth.ms", mech)
        return {"now_ms": self.clock.now_ms(), "max_reauth_ms": int(raw or 0)}

    def _raw_sasl_token(self, conn: ConnInfo, ex: SaslExchange, payload: bytes | bytearray) -> Outcome:
        """A bare SASL token after a v0 handshake: answer with the bare server token, or close."""
        if ex.failed:
            return Outcome("close", reason="SASL token after a failed exchange")
        try:
            out = evaluate_token(conn, ex, bytes(payload), **self.sasl_completion(conn))
        except SaslAuthenticationError as exc:
            # no answer to delay (a v0 exchange has no error frame): the close waits (SEC-14)
            self.fail_authentication(conn, f"SASL authentication failed: {exc.message}")
            return DEFERRED
        return Outcome("send", out)

    def fail_authentication(self, conn: ConnInfo, reason: str, reply: Reply | None = None,
                            response: Any = None) -> None:
        """A failed SASL authentication (SEC-14): ``response`` (if any) is sent and the connection
        closed ``connection.failed.authentication.delay.ms`` later on the broker clock; it reads
        nothing meanwhile (its request is in progress). Selector.maybeDelayCloseOnAuthenticationFailure,
        KafkaChannel.completeCloseOnAuthenticationFailure, SaslServerAuthenticator.sendAuthenticationFailureResponse."""
        log.info("connection %d on broker %d: %s", conn.conn_id, conn.broker_id, reason)
        delay = self.configs.get_int(ResourceType.BROKER, "", "connection.failed.authentication.delay.ms")
        conn_id = conn.conn_id

        def finish() -> None:
            if reply is not None:
                if response is not None:
                    reply.send(response)
                if reply.exchange is not None:
                    reply.exchange.closed = reason
                reply.done = True
                self._unanswered.pop(reply, None)
            conn.close_reason = reason
            self.outbox.append((conn_id, None))

        if delay > 0:
            self.deadlines.at(self.clock.now_ms() + delay, finish)
        else:
            finish()

    def _api_versions_unsupported(self, correlation_id: int) -> bytes:
        """KIP-511 fallback for an ApiVersions version the broker does not know: the v0 layout
        (int16 error, int32 count, 6-byte entries) with header v0, which every client reads,
        naming only ApiVersions' own range."""
        from kwire.protocol.messages.api_versions import ApiVersionsResponse

        spec = self.handlers[ApiKey.API_VERSIONS]
        body = ApiVersionsResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=spec.min_version,
                                                     max_version=self.max_version(ApiKey.API_VERSIONS))],
        )
        return encode_response(body, 0, correlation_id=correlation_id, size_prefix=False)

    def _record_raw(self, conn: ConnInfo, payload: bytes | bytearray, api_key: int = -1, api_version: int = -1,
                    corr: int = -1) -> Exchange | None:
        """Record a request the broker could not decode or does not serve (``request`` is None)."""
        if self.recording is None:
            return None
        ex = Exchange(self.clock.now_ms(), conn.conn_id, conn.broker_id, api_key, api_version, corr, None, None,
                      bytes(payload))
        ex.at_us = self.wire_clock_us() if self.wire_clock_us is not None else None
        self.recording.append(ex)
        return ex

    def _internal_error(self, ctx: RequestContext, spec: HandlerSpec, request: Any, reason: str) -> Outcome:
        """What a broker does when processing fails unexpectedly: UNKNOWN_SERVER_ERROR, or close."""
        try:
            resp = spec.error_response(ctx, request, ErrorCode.UNKNOWN_SERVER_ERROR)
            if resp is not None:
                data = encode_response(resp, ctx.api_version, correlation_id=ctx.correlation_id, size_prefix=False)
                return Outcome("send", data)
        except Exception:  # noqa: BLE001 - fall back to closing the connection
            log.exception("error response for %s failed", spec.name)
        return self._close(ctx.conn, reason, ctx.exchange)

    def _respond(self, ctx: RequestContext, response: Any) -> Outcome:
        if response is None:
            if ctx.deferred is None:
                self.throttle(ctx, None)  # an acks=0 produce still counts against its quota
                return SEND_NOTHING
            return self._deferred(ctx.deferred)
        self.throttle(ctx, response)
        try:
            data = self._encode(ctx, response)
        except KwireError as exc:
            log.exception("encoding the %s v%d response failed", api_info(ctx.api_key).name, ctx.api_version)
            return self._close(ctx.conn, f"response could not be encoded: {exc}", ctx.exchange)
        if ctx.decided_ns is not None:
            self.record_network_time(ctx)
        if ctx.exchange is not None:
            ctx.exchange.response = response
            ctx.exchange.response_bytes = as_bytes(data)
            self.answered(ctx.exchange)
        return Outcome("send", data)

    def _encode(self, ctx: RequestContext, response: Any) -> bytes | FramePieces:
        """The response frame (no size prefix); answers the handler marked as a pure function
        of ``ctx.cache_key`` are encoded once, only the correlation id written per request."""
        key = ctx.cache_key
        throttle_ms: int = getattr(response, "throttle_time_ms", 0)
        if key is None or throttle_ms:
            return _encode_answer(response, ctx.api_key, ctx.api_version, ctx.correlation_id)
        full = (ctx.api_key, ctx.api_version, key)
        cached = self._answers.get(full)
        if cached is None:
            data = _encode_answer(response, ctx.api_key, ctx.api_version, 0)
            if isinstance(data, FramePieces):
                return _encode_answer(response, ctx.api_key, ctx.api_version, ctx.correlation_id)
            if len(self._answers) >= _MAX_CACHED_ANSWERS:
                self._answers.clear()
            cached = self._answers[full] = (data[4:], response)  # the correlation id leads every header
        return _CORRELATION_ID.pack(ctx.correlation_id) + cached[0]

    def cached_response(self, ctx: RequestContext, key: Hashable) -> Any:
        """Mark the request's answer as a pure function of ``key`` (see ``_encode``) and return
        the response object answered before under it, or None. The shared object is handed out
        only when nothing may change or keep it (no recording, no client quotas)."""
        ctx.cache_key = key
        cached = self._answers.get((ctx.api_key, ctx.api_version, key))
        if cached is None or self.recording is not None:
            return None
        quotas = self.subsystems.quotas
        if quotas is not None and quotas.entities:
            return None
        return cached[1]

    def throttle(self, ctx: RequestContext, response: Any) -> None:
        """Quotas (KIP-219, QUO-5): record what the request and its response cost, set the
        answer's ThrottleTimeMs and mute the connection that long. The answer goes at once
        whatever the version (RequestHandlerHelper.throttle: Kafka no longer holds answers)."""
        quotas = self.subsystems.quotas
        if quotas is None or not quotas.entities:
            return
        request_ns = None
        if ctx.started_ns is not None and ctx.decided_ns is None:
            # Request.requestThreadTimeNanos: up to now, or the first pass of a deferred answer
            ctx.decided_ns = self.request_timer()
            request_ns = ctx.handler_ns if ctx.handler_ns is not None else ctx.decided_ns - ctx.started_ns
        ms = quotas.throttle_response(ctx, response, request_ns)
        if ms > 0:
            ctx.conn.muted_until_ms = max(ctx.conn.muted_until_ms, self.clock.now_ms() + ms)

    def record_network_time(self, ctx: RequestContext) -> None:
        """The time after the throttle decision (encoding the answer) counts without a quota
        check, as Kafka's network-thread time does (Request.updateRequestMetrics, QUO-7)."""
        quotas = self.subsystems.quotas
        decided = ctx.decided_ns
        ctx.started_ns = ctx.decided_ns = None  # counted once
        if quotas is not None and decided is not None and quotas.request_enabled:
            quotas.record_request_time(ctx, self.request_timer() - decided, check=False)

    def answered(self, exchange: Exchange) -> None:
        """A recorded request got its answer: stamp the time and tell ``on_answer`` (``kwire broker -v``)."""
        exchange.response_at_ms = self.clock.now_ms()
        exchange.response_at_us = self.wire_clock_us() if self.wire_clock_us is not None else None
        if self.on_answer is not None:
            self.on_answer(exchange)

    def _deferred(self, reply: Reply) -> Outcome:
        """The request is answered later: count it until its reply goes."""
        if not reply.done:
            self._unanswered[reply] = None
        return DEFERRED

    def _close(self, conn: ConnInfo, reason: str, exchange: Exchange | None = None) -> Outcome:
        log.info("closing connection %d on broker %d: %s", conn.conn_id, conn.broker_id, reason)
        if exchange is not None:
            exchange.closed = reason
        return Outcome("close", reason=reason)

    def _apply_fault(self, rule: Any, spec: HandlerSpec, ctx: RequestContext, body: Any) -> Outcome | None:
        action = rule.action
        if action is FaultAction.CLOSE:
            return self._close(ctx.conn, f"fault injection closed the connection ({spec.name})", ctx.exchange)
        if action is FaultAction.SWALLOW:
            return self._deferred(ctx.defer())  # never sent
        if action is FaultAction.ERROR:
            resp = spec.error_response(ctx, body, rule.error_code)
            if resp is None:
                return self._close(ctx.conn, f"fault injection: {spec.name} has no error response", ctx.exchange)
            return self._respond(ctx, resp)
        if action is FaultAction.LATENCY:
            try:
                response = spec.handle(ctx, body)
            except KafkaError as exc:
                response = spec.error_response(ctx, body, exc.code)
                if response is None:
                    return self._close(ctx.conn, f"{spec.name}: {exc} (the response has no error code)",
                                       ctx.exchange)
            if response is None:
                # Deferred: already waiting on its own (latency adds nothing sensible); else acks=0.
                return SEND_NOTHING if ctx.deferred is None else self._deferred(ctx.deferred)
            reply = ctx.defer()
            self.deadlines.at(self.clock.now_ms() + rule.delay_ms, lambda: reply.send(response))
            return self._deferred(reply)
        if action is FaultAction.HOOK:
            try:
                resp = rule.hook(body, ctx)
            except KafkaError as exc:
                return self._error_answer(ctx, spec, body, exc)
            except Exception as exc:  # noqa: BLE001 - a test's hook failing is reported like a handler bug
                log.exception("fault hook failed")
                return self._internal_error(ctx, spec, body, f"fault hook error: {exc}")
            if resp is None:
                return None
            return self._respond(ctx, resp)
        return None

    # --- versions ---------------------------------------------------------------------------
    def max_version(self, api_key: int) -> int:
        spec = self.handlers[api_key]
        cap = self.version_caps.get(api_key)
        return spec.max_version if cap is None else min(cap, spec.max_version)

    def advertised_supports(self, api_key: int, version: int) -> bool:
        spec = self.handlers.get(api_key)
        if spec is None:
            return False
        return spec.min_version <= version <= self.max_version(api_key)

    # --- time -------------------------------------------------------------------------------
    def next_deadline_ms(self) -> int | None:
        return self.deadlines.next_ms()

    def fire_due(self) -> int:
        """Fire every deadline due at the clock's current time (the clock does not move)."""
        return self.deadlines.fire_due(self.clock.now_ms(), after=self._after_timer)

    def advance_to(self, target_ms: int) -> int:
        """Step a manual clock to ``target_ms`` through each deadline due on the way.

        Each callback runs with ``now_ms()`` at its own due time and its wake-ups run right
        after it; deadlines it adds fire in the same call if due by ``target_ms``. Returns
        how many callbacks ran.
        """
        clock = self.clock
        if isinstance(clock, JumpClock):
            target_ms = max(target_ms, clock.now_ms())  # real time may have passed it already
        elif not isinstance(clock, ManualClock):
            raise KwireError("stepping the clock needs a ManualClock or a JumpClock")
        return self.deadlines.run_until(target_ms, clock, after=self._after_timer)

    def advance(self, ms: int) -> int:
        """``advance_to(now + ms)``; returns the new time."""
        if ms < 0:
            raise ValueError("time does not go backwards")
        self.advance_to(self.clock.now_ms() + ms)
        return self.clock.now_ms()

    def take_outbox(self) -> list[tuple[int, bytes | FramePieces | None]]:
        out, self.outbox = self.outbox, []
        return out

    def unanswered_requests(self) -> int:
        """Requests whose answer is deferred and not sent yet (long polls, joins, latency faults)."""
        return len(self._unanswered)

    def unanswered_api_keys(self) -> list[int]:
        """The api key of each unanswered request."""
        return [r.api_key for r in self._unanswered]

    # --- long polls -------------------------------------------------------------------------
    def park(self, reply: Reply, keys: Iterable[Hashable], wait_ms: int, poll: LongPoll) -> Parked:
        """Hold ``reply`` until a wake-up on one of ``keys`` finds ``poll`` ready, or ``wait_ms``."""
        p = Parked(reply, tuple(dict.fromkeys(keys)), poll, next(self._park_seq))
        p.deadline = self.deadlines.at(self.clock.now_ms() + max(0, wait_ms), lambda: self._finish(p, True))
        self._parked[p] = None
        for key in p.keys:
            self._waiters.setdefault(key, {})[p] = None
        return p

    def parked(self, key: Hashable | None = None) -> list[Parked]:
        """The long polls waiting (on ``key``, or all), in the order they parked."""
        if key is None:
            return list(self._parked)
        return list(self._waiters.get(key, ()))

    def _unpark(self, p: Parked) -> bool:
        if p not in self._parked:
            return False
        del self._parked[p]
        for key in p.keys:
            waiting = self._waiters.get(key)
            if waiting is not None:
                waiting.pop(p, None)
                if not waiting:
                    del self._waiters[key]
        if p.deadline is not None:
            p.deadline.cancel()
        return True

    def _finish(self, p: Parked, final: bool) -> None:
        """Answer a parked poll, once; a failing ``complete`` costs that request only."""
        if not self._unpark(p):
            return
        try:
            response = p.poll.complete(final)
        except Exception as exc:  # noqa: BLE001 - a handler bug must cost one request, not the broker
            log.exception("completing a parked api key %d request failed", p.reply.api_key)
            p.reply.close(f"parked request failed: {exc}")
            return
        p.reply.send(response)

    def wake(self, key: Hashable) -> None:
        """Something a long poll may wait on changed (data on a partition, a released lock...).

        The polls waiting on ``key`` are looked at after the current request or timer.
        """
        if key in self._waiters:
            self._woken[key] = None

    def wake_all(self) -> None:
        """Look at every long poll (leaders moved, a broker went down)."""
        if self._parked:
            self._wake_all = True

    def _after_timer(self) -> None:
        self.persist()
        self.run_wakeups()

    def persist(self) -> None:
        """Run the ``before_answer`` hooks outside a request (a timer fired, the control API
        changed state): what changed is made durable now. A failure is logged (nobody to answer);
        the next request or timer tries again."""
        for fn in self.before_answer:
            try:
                fn()
            except KafkaError as exc:
                log.error("persisting outside a request failed: %s", exc)

    def run_wakeups(self) -> None:
        """Answer the woken long polls that are ready, in the order they parked.

        Answering one may wake others (a share acknowledgement releasing records): repeat
        until nothing is woken.
        """
        while self._woken or self._wake_all:
            if self._wake_all:
                candidates = list(self._parked)
            else:
                found: dict[Parked, None] = {}
                for key in self._woken:
                    found.update(self._waiters.get(key, {}))
                candidates = sorted(found, key=lambda p: p.seq)
            self._woken = {}
            self._wake_all = False
            for p in candidates:
                if p not in self._parked:
                    continue
                try:
                    ready = p.poll.ready()
                except Exception as exc:  # noqa: BLE001 - as in _finish
                    log.exception("checking a parked api key %d request failed", p.reply.api_key)
                    self._unpark(p)
                    p.reply.close(f"parked request failed: {exc}")
                    continue
                if ready:
                    self._finish(p, False)

    # --- topics (shared by CreateTopics, Metadata auto-create, Produce, the control API) ----
    def create_topic(self, name: str, num_partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, *, internal: bool = False,
                     topic_id: uuid.UUID | None = None, assignments: list[list[int]] | None = None) -> Topic:
        if num_partitions is None or num_partitions == -1:
            num_partitions = self.configs.get_int(ResourceType.BROKER, "", "num.partitions")
        if replication_factor is None or replication_factor == -1:
            replication_factor = min(self.configs.get_int(ResourceType.BROKER, "", "default.replication.factor"),
                                     len(self.cluster.live_nodes()))
        defs = self.configs.definitions(ResourceType.TOPIC)
        for k, v in (configs or {}).items():
            d = defs.get(k)
            if d is None:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"unknown topic config {k!r}")
            try:
                d.validate(v)
            except KwireError as exc:
                raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        topic = self.cluster.create_topic(name, num_partitions, replication_factor, internal=internal,
                                          topic_id=topic_id, assignments=assignments)
        for k, v in (configs or {}).items():
            self.configs.set(ResourceType.TOPIC, name, k, v)
        for p in topic.partitions:
            self._attach_partition(p)
        for sub in self.subsystems.installed():
            sub.on_topic_created(topic)
        return topic

    def _attach_partition(self, p: Any) -> None:
        p.log.on_append.append(lambda batch, key=(p.topic, p.index): self.wake(key))
        for sub in self.subsystems.installed():
            sub.on_partition_created(p)

    def create_partitions(self, name: str, total: int, assignments: list[list[int]] | None = None) -> Topic:
        before = len(self.cluster.topics[name].partitions) if name in self.cluster.topics else 0
        topic = self.cluster.create_partitions(name, total, assignments)
        for p in topic.partitions[before:]:
            self._attach_partition(p)
        return topic

    def delete_topic(self, name: str) -> Topic:
        topic = self.cluster.delete_topic(name)
        self.configs.drop(ResourceType.TOPIC, name)
        for sub in self.subsystems.installed():
            sub.on_topic_deleted(topic)
        return topic

    def metadata_changed(self) -> None:
        """Configs, log start offsets or leader epochs changed outside the topic hooks (persistence)."""
        for sub in self.subsystems.installed():
            sub.on_metadata_changed()

    def log_compacted(self, partition: Partition) -> None:
        """The log cleaner rewrote ``partition``'s log: the data dir, if any, rewrites its files."""
        storage = self.subsystems.storage
        if storage is not None:
            storage.on_log_compacted(partition)

    def close(self) -> None:
        """The broker stops: subsystems holding resources (open segment files) release them."""
        for sub in self.subsystems.installed():
            sub.on_close()

    def log_config(self, topic: str) -> LogConfig:
        """The settings an append to ``topic`` needs, from the config store.

        On every append's path: resolved once per (topic, its overrides, the broker's), the
        overrides' current items being the key (they are changed in place and replaced).
        """
        key = self.configs.overrides_key(ResourceType.TOPIC, topic)
        cached = self._log_configs.get(key)
        if cached is None:
            if len(self._log_configs) >= _MAX_CACHED_LOG_CONFIGS:
                self._log_configs.clear()
            cached = self._log_configs[key] = self._resolve_log_config(topic)
        return cached

    def _resolve_log_config(self, topic: str) -> LogConfig:
        c = self.configs
        return LogConfig(
            segment_bytes=c.get_int(ResourceType.TOPIC, topic, "segment.bytes"),
            segment_ms=c.get_int(ResourceType.TOPIC, topic, "segment.ms"),
            max_message_bytes=c.get_int(ResourceType.TOPIC, topic, "max.message.bytes"),
            log_append_time=c.get(ResourceType.TOPIC, topic, "message.timestamp.type") == "LogAppendTime",
            compacted="compact" in (c.get(ResourceType.TOPIC, topic, "cleanup.policy") or ""),
        )

    def auto_create_enabled(self) -> bool:
        return self.configs.get_bool(ResourceType.BROKER, "", "auto.create.topics.enable")

    def maybe_auto_create(self, name: str) -> Topic | None:
        """Create a topic on first use if auto.create.topics.enable (Metadata, Produce)."""
        if not self.auto_create_enabled():
            return None
        try:
            return self.create_topic(name)
        except KafkaError:
            return None

    # --- coordinators -----------------------------------------------------------------------
    def coordinator_for(self, key: str) -> BrokerNode | None:
        """The node coordinating a group or transactional id (hash over live nodes, stable)."""
        live = self.cluster.live_nodes()
        if not live:
            return None
        h = _key_hash(key)
        partitions = self.configs.get_int(ResourceType.BROKER, "", "offsets.topic.num.partitions")
        # Java's Utils.abs(hashCode) % partitions, then that partition's leader (round-robin here).
        return live[(h % partitions) % len(live)]

    def is_coordinator(self, broker_id: int, key: str) -> bool:
        node = self.coordinator_for(key)
        return node is not None and node.node_id == broker_id

    def error_code_name(self, code: int) -> str:
        try:
            return ErrorCode(code).name
        except ValueError:
            return str(code)

    def info(self, api_key: int) -> Any:
        return api_info(api_key)

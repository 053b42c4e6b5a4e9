"""The trio edge: listeners, one task per connection, and the deadline task.

Everything here is I/O; every decision is the core's. After anything that may have completed
deferred requests (a request, a deadline, a control call), ``flush`` routes the core's outbox
to the connections and wakes their writers.
"""

from __future__ import annotations

import contextlib
import logging
import math
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import trio

from kwire.broker.config import BrokerConfig
from kwire.broker.connection import Connection
from kwire.broker.core.broker_core import BrokerCore
from kwire.broker.core.listeners import Listener, PrincipalMapper, SecurityProtocol
from kwire.broker.handlers import load_handlers
from kwire.broker.tls import ThrowawayCA, peer_distinguished_name, server_context
from kwire.clock import Clock, ManualClock, SystemClock
from kwire.errors import ConfigError

__all__ = ["BrokerServer"]

log = logging.getLogger("kwire.broker")

_RECV_BYTES = 256 * 1024  # one receive buffer for the whole server (see _serve_conn)
_TLS_READ = 16 * 1024 + 256  # one TLS record: what a handshake reads at a time
_EAGER_READS = 8
_IOV_MAX = 512  # buffers per sendmsg: below every platform's IOV_MAX (1024 on Linux)
_HAS_SENDMSG = hasattr(socket.socket, "sendmsg")


class _Conn:
    __slots__ = ("conn", "stream", "raw", "wake", "broker_id", "cancel", "sending", "last_active", "ip")

    def __init__(self, conn: Connection, stream: trio.SocketStream, broker_id: int) -> None:
        self.conn = conn
        self.stream = stream
        # A plain socket object on the same (non-blocking) descriptor: reads and writes that can
        # complete now do so without a trip through trio's scheduler; only waits go through trio.
        # Detached, never closed, here: the stream owns the descriptor.
        self.raw = socket.socket(fileno=stream.socket.fileno())
        self.wake = trio.Event()
        self.broker_id = broker_id
        self.cancel = trio.CancelScope()
        self.sending = False  # the writer task is part-way through a send
        self.last_active = trio.current_time()  # wall time of the last read or write (idle expiry)
        self.ip = ""


class _TlsConn:
    """A connection on an SSL or SASL_SSL listener: TLS through an ``ssl.SSLObject`` over memory
    BIOs, driven here like the plaintext path (non-blocking reads of the raw socket; only waits
    go through trio), so a burst of records is decrypted without a scheduler trip per record."""

    __slots__ = ("conn", "stream", "raw", "tls", "incoming", "outgoing", "leftover", "wake", "broker_id", "cancel",
                 "sending", "last_active", "ip")

    def __init__(self, stream: trio.SocketStream, tls: ssl.SSLObject, incoming: ssl.MemoryBIO,
                 outgoing: ssl.MemoryBIO, broker_id: int) -> None:
        self.conn: Connection | None = None  # once the handshake is done
        self.stream = stream
        self.raw = socket.socket(fileno=stream.socket.fileno())  # detached, never closed, here
        self.tls = tls
        self.incoming = incoming
        self.outgoing = outgoing
        self.leftover = b""  # encrypted bytes the socket did not take at once (sent before the BIO's)
        self.wake = trio.Event()
        self.broker_id = broker_id
        self.cancel = trio.CancelScope()
        self.sending = False
        self.last_active = trio.current_time()
        self.ip = ""

    async def send_outgoing(self) -> None:
        """Send what the TLS engine has written (records, alerts), waiting while the socket is full."""
        view = memoryview(self.leftover + self.outgoing.read() if self.leftover else self.outgoing.read())
        self.leftover = b""
        while view:
            try:
                n = self.raw.send(view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.raw)
                continue
            view = view[n:]
            self.last_active = trio.current_time()

    def send_outgoing_nowait(self) -> None:
        """Best effort, never waiting: a closing alert on the way out."""
        with contextlib.suppress(OSError):
            self.raw.send(self.outgoing.read())

    def answer_nowait(self, conn: Connection) -> bool:
        """Encrypt the queued answers and send what the socket takes now (the plaintext path's
        eager write); False when something is left for the writer task."""
        for piece in conn.pieces_to_send():
            self.tls.write(piece)
        data = self.outgoing.read()
        try:
            n = self.raw.send(data) if data else 0
        except BlockingIOError:
            n = 0
        self.leftover = data[n:]
        return not self.leftover


def _write_nowait(sock: socket.socket, views: list[memoryview]) -> int:
    """Send from the front of ``views`` until all went or the socket is full.

    Returns how many views went out whole; the next one may have been cut to its unsent rest.
    Stored record batches reach the kernel as they are (one ``sendmsg``, no join).
    """
    i = 0
    while i < len(views):
        try:
            if _HAS_SENDMSG:
                sent = sock.sendmsg(views[i : i + _IOV_MAX])
            else:  # Windows: no vectored send on sockets
                sent = sock.send(b"".join(views[i : i + _IOV_MAX]))
        except BlockingIOError:
            break
        while sent:
            n = len(views[i])
            if sent >= n:
                sent -= n
                i += 1
            else:
                views[i] = views[i][sent:]
                sent = 0
        while i < len(views) and not len(views[i]):
            i += 1
    return i


def _monotonic_us() -> int:
    return time.monotonic_ns() // 1000


def _tls_cause(exc: BaseException) -> str:
    """The SSL error under trio's BrokenResourceError, in words (the broker log's reason)."""
    cause = exc.__cause__ or exc.__context__ or exc
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"the client certificate failed verification: {cause.verify_message} ({cause.reason})"
    if isinstance(cause, ssl.SSLError):
        return f"{cause.reason or cause.strerror or cause} ({type(cause).__name__})"
    return str(cause) or type(cause).__name__


class BrokerServer:
    """Serves a BrokerCore over TCP, one listener per broker node."""

    def __init__(self, config: BrokerConfig, clock: Clock | None = None, core: BrokerCore | None = None,
                 on_line: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.clock = clock if clock is not None else SystemClock()
        self.core = core if core is not None else BrokerCore(config, self.clock, handlers=load_handlers())
        self.core.wire_clock_us = _monotonic_us  # recorded exchanges carry real µs (captures show latency)
        self.core.request_timer = time.perf_counter_ns  # request_percentage quotas time the core (QUO-7)
        self.core.resolve_host = socket.gethostbyname  # max.connections.per.ip.overrides host names
        self.on_line = on_line
        # Called after every batch of work (requests handled, deadlines fired, responses routed),
        # so a controller in another thread can wait for a condition without sleeping.
        self.on_progress: Callable[[], None] | None = None
        self._conns: dict[int, _Conn | _TlsConn] = {}
        self._listeners: dict[int, list[trio.SocketListener]] = {}
        # (node, listener name) -> the port bound first: a broker brought back listens there again
        self._bound: dict[tuple[int, str], int] = {}
        self._tls: dict[str, ssl.SSLContext] = {}  # listener name -> server context (SSL, SASL_SSL)
        # listener name -> ssl.principal.mapping.rules (listener.name.<l>. prefix first, as Kafka's
        # ChannelBuilders reads the listener's configs)
        self._mappers = {li.name: PrincipalMapper(self.core.listener_setting(li.name, "ssl.principal.mapping.rules"))
                         for li in self.core.listeners if li.protocol.tls}
        # The throwaway CA made when a TLS listener has no keystore of its own (kwire broker --tls).
        self.tls_ca: ThrowawayCA | None = None
        self._listener_scopes: dict[int, trio.CancelScope] = {}
        self._deadline_wake = trio.Event()
        self._sleeping_until: int | None = None  # the deadline the deadline task sleeps towards
        self._nursery: trio.Nursery | None = None
        self.ready = trio.Event()
        # Every connection reads into this one buffer: its bytes are consumed (copied into the
        # connection's frame buffer) before the task yields, so a connection costs no buffer of
        # its own while it waits (10,000 idle connections used to pin 2.5 GB).
        self._rview = memoryview(bytearray(_RECV_BYTES))
        # TLS connections decrypt into this one (consumed before the task yields, like _rview).
        self._plain = memoryview(bytearray(_RECV_BYTES))
        self._acceptors: dict[tuple[int, str], trio.Lock] = {}
        self._slot_freed = trio.Event()
        self._slot_waiters = 0  # acceptors waiting for a slot: a config change may have made one

    # --- lifecycle --------------------------------------------------------------------------
    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        self._make_tls_contexts()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for node in sorted(self.core.cluster.nodes.values(), key=lambda n: n.node_id):
                await self._start_listener(node.node_id)
            nursery.start_soon(self._deadline_task)
            self.ready.set()
            task_status.started(self.bootstrap())
            await trio.sleep_forever()

    def bootstrap(self, listener: str | None = None) -> str:
        """host:port of every live broker on ``listener`` (default: the first listener)."""
        name = listener or self.core.listeners[0].name
        return ",".join("{}:{}".format(*n.address(name)) for n in sorted(self.core.cluster.nodes.values(),
                                                                       key=lambda n: n.node_id) if n.up)

    def bootstraps(self) -> dict[str, str]:
        """Every listener's bootstrap list, by listener name (the ready file's ``listeners``)."""
        return {li.name: self.bootstrap(li.name) for li in self.core.listeners}

    def _tls_get(self, listener: str, sasl_ssl: bool = False) -> Callable[[str], str | None]:
        ca = self.tls_ca

        def get(key: str) -> str | None:
            if sasl_ssl and key == "ssl.client.auth":
                # SASL_SSL listeners take only the listener-prefixed ssl.client.auth (KIP-684,
                # ChannelBuilders.create: sslClientAuthOverride=none); the broker-wide one is for SSL
                # listeners. A listener.name.<l>. key is looked up as it is, without that fallback.
                return self.core.listener_setting(listener, f"listener.name.{listener.lower()}.{key}") or "none"
            v = self.core.listener_setting(listener, key)
            if v is None and ca is not None and key == "ssl.keystore.location":
                return str(ca.keystore)
            if ca is not None and key == "ssl.keystore.type" and self.core.listener_setting(
                    listener, "ssl.keystore.location") is None:
                return "PEM"
            return v

        return get

    def _make_tls_contexts(self) -> None:
        """A server context per TLS listener; one without a keystore gets the throwaway CA's
        broker certificate (made once, its CA file logged so clients can trust it)."""
        tls = [li for li in self.core.listeners if li.protocol.tls]
        if not tls:
            return
        if self.tls_ca is None and any(self.core.listener_setting(li.name, "ssl.keystore.location") is None
                                       and self.core.listener_setting(li.name, "ssl.keystore.key") is None
                                       for li in tls):
            hosts = ("localhost", "127.0.0.1", "::1", self.config.host,
                     *(self.core.advertised_host(li) for li in tls))
            self.tls_ca = ThrowawayCA.create(hosts=tuple(h for h in hosts if h and h not in ("0.0.0.0", "::")))
            log.info("TLS: throwaway CA %s (clients trust it: ssl.ca.location, ssl.truststore.location with "
                     "ssl.truststore.type=PEM)", self.tls_ca.ca_file)
        for li in tls:
            sasl_ssl = li.protocol is SecurityProtocol.SASL_SSL
            if sasl_ssl and (self.core.listener_setting(li.name, "ssl.client.auth") or "none").lower() != "none" \
                    and self._tls_get(li.name, sasl_ssl=True)("ssl.client.auth") == "none":
                log.warning("Broker configuration 'ssl.client.auth' is applied only to SSL listeners; listener %s "
                            "(SASL_SSL) takes listener.name.%s.ssl.client.auth", li.name, li.name.lower())
            self._tls[li.name] = server_context(self._tls_get(li.name, sasl_ssl), li.name)

    async def _start_listener(self, node_id: int) -> None:
        """Bind every listener of one broker (SEC-1, SEC-3)."""
        assert self._nursery is not None
        node = self.core.cluster.nodes[node_id]
        index = sorted(self.core.cluster.nodes).index(node_id)
        scope = trio.CancelScope()
        self._listener_scopes[node_id] = scope
        bound: list[trio.SocketListener] = []
        self._listeners[node_id] = bound
        groups: list[tuple[Listener, list[trio.SocketListener]]] = []
        for li in self.core.listeners:
            port = self._bound.get((node_id, li.name), self.core.listen_port(li, index))
            listeners = await trio.open_tcp_listeners(port, host=li.host or self.config.host)
            port = listeners[0].socket.getsockname()[1]
            self._bound[(node_id, li.name)] = port
            bound.extend(listeners)
            adv_port = li.advertised_port + index * len(self.core.listeners) if li.advertised_port else port
            node.endpoints[li.name] = (self.core.advertised_host(li), adv_port)

            groups.append((li, listeners))
        node.host, node.port = node.endpoints[self.core.listeners[0].name]

        async def run() -> None:
            with scope:
                async with trio.open_nursery() as n:
                    for li, listeners in groups:
                        n.start_soon(self._serve_listener, node_id, li, listeners)

        self._nursery.start_soon(run)

    async def _serve_listener(self, node_id: int, li: Listener, listeners: list[trio.SocketListener]) -> None:
        await trio.serve_listeners(lambda s: self._serve_conn(s, node_id, li), listeners)  # type: ignore[arg-type]

    def _line(self, text: str) -> None:
        if self.config.log_connections:
            if self.on_line is not None:
                self.on_line(text)
            else:
                log.info("%s", text)

    # --- connections ------------------------------------------------------------------------
    def _limit(self, key: str) -> int:
        from kwire.broker.core.configs import ResourceType

        return self.core.configs.get_int(ResourceType.BROKER, "", key)

    async def _serve_conn(self, stream: trio.SocketStream, broker_id: int, listener: Listener | None = None) -> None:
        try:
            host, port = stream.socket.getpeername()[:2]
            peer = f"{host}:{port}"
        except OSError:
            host, peer = "?", "?"
        li = listener or self.core.listeners[0]
        cq = self.core.connection_quotas(broker_id)
        # SocketServer's Acceptor (one per listener and broker, so one connection at a time passes
        # here): over the broker's or listener's connection creation rate, or at max.connections,
        # it accepts nothing more until the throttle time (broker clock) has passed and a slot is free.
        async with self._acceptor(broker_id, li.name):
            until = cq.acceptor_throttle_until(li.name)
            while True:
                if until > self.clock.now_ms():
                    await self._until(until)
                elif cq.slot_available(li.name):
                    break
                else:
                    self._slot_waiters += 1
                    if self.on_progress is not None:
                        self.on_progress()  # a controller may wait for this (Broker.wait_until)
                    try:
                        await self._slot_freed.wait()
                    finally:
                        self._slot_waiters -= 1
            admission = cq.admit(li.name, host)
        if admission.kind != "serve":
            self._line(f"broker {broker_id}: connection from {peer} on listener {li.name} closed ({admission.reason})")
            if admission.kind == "throttle":
                await self._until(admission.close_at_ms)  # DelayedCloseSocket: open, unread, then closed
            with trio.CancelScope(shield=True), contextlib.suppress(Exception):
                await stream.aclose()
            return
        held = [True]  # released once, as soon as the connection is gone from the core

        def release() -> None:
            if held[0]:
                held[0] = False
                cq.release(li.name, host)
                self._slot_freed.set()
                self._slot_freed = trio.Event()

        try:
            if li.protocol.tls:
                await self._serve_tls(stream, broker_id, host, peer, li)
            else:
                await self._serve_accepted(stream, broker_id, host, peer, release, li.name)
        finally:
            release()

    def _acceptor(self, broker_id: int, listener: str) -> trio.Lock:
        """The lock standing for Kafka's acceptor thread of one listener of one broker (fair: FIFO)."""
        lock = self._acceptors.get((broker_id, listener))
        if lock is None:
            lock = self._acceptors[(broker_id, listener)] = trio.Lock()
        return lock

    async def _until(self, at_ms: int) -> None:
        """Sleep until ``at_ms`` on the broker clock (a manual clock: until the test advances it)."""
        woken = trio.Event()
        deadline = self.core.deadlines.at(at_ms, woken.set)
        self.flush()  # the deadline task learns of the earlier deadline
        try:
            await woken.wait()
        finally:
            deadline.cancel()

    async def _serve_accepted(self, stream: trio.SocketStream, broker_id: int, host: str, peer: str,
                              release: Callable[[], None], listener: str | None = None) -> None:
        conn = Connection(self.core, broker_id, peer, listener)
        try:
            c = _Conn(conn, stream, broker_id)
        except OSError as exc:  # the descriptor is already unusable: nothing to serve
            conn.connection_lost()
            self._line(f"broker {broker_id}: connection {conn.conn_id} from {peer} unusable ({exc})")
            with trio.CancelScope(shield=True), contextlib.suppress(Exception):
                await stream.aclose()
            return
        c.ip = host
        self._conns[conn.conn_id] = c
        self._line(f"broker {broker_id}: connection {conn.conn_id} from {peer}")
        idle_s = self._limit("connections.max.idle.ms") / 1000
        rview = self._rview
        try:
            with c.cancel:
                async with trio.open_nursery() as n:
                    n.start_soon(self._writer, c)
                    eager = 0
                    while not conn.closed:
                        # The rest of a large request goes straight into its frame buffer.
                        into = conn.receive_buffer()
                        try:
                            got = c.raw.recv_into(into if into is not None else rview)
                        except BlockingIOError:
                            eager = 0
                            with trio.move_on_at(c.last_active + idle_s) as idle:
                                await trio.lowlevel.wait_readable(c.raw)
                            if idle.cancelled_caught:
                                if conn.busy or conn.queued_bytes or c.sending:
                                    c.last_active = trio.current_time()  # a request in progress is not idle
                                else:
                                    conn.close(f"idle for more than connections.max.idle.ms ({int(idle_s * 1000)})")
                                    break
                            continue
                        except OSError:
                            got = 0
                        finally:
                            if into is not None:
                                into.release()
                        if not got:
                            conn.connection_lost()
                            break
                        c.last_active = trio.current_time()
                        try:
                            if into is not None:
                                conn.received_into(got)
                            else:
                                conn.receive_data(rview[:got])
                            self.flush()
                        except Exception as exc:  # noqa: BLE001 - contain a bug to this connection
                            log.exception("connection %d failed", conn.conn_id)
                            conn.close(f"internal error: {exc}")
                        if conn.queued_bytes and not c.sending:
                            # Answer now if the socket takes it; what it does not take, the writer sends.
                            views = [memoryview(p) for p in conn.pieces_to_send()]
                            try:
                                sent = _write_nowait(c.raw, views)
                            except OSError:
                                conn.connection_lost()
                                break
                            if sent < len(views):
                                conn.requeue(views[sent:])
                        if conn.queued_bytes or conn.closed:
                            c.wake.set()
                        eager += 1
                        if eager >= _EAGER_READS:
                            # Reads that never block still let every other task run now and then
                            # (only here: the shared receive buffer has been consumed).
                            eager = 0
                            await trio.lowlevel.checkpoint()
                    c.wake.set()
                    n.cancel_scope.cancel()
        finally:
            if not conn.closed:
                conn.connection_lost()
            self._conns.pop(conn.conn_id, None)
            release()
            self._slot_freed.set()
            self._slot_freed = trio.Event()
            # A disconnect changes core state too (what it held goes, waiters may wake): route
            # what it completed and report progress (``Broker.wait_until``).
            self.flush()
            reason = conn.close_reason or "closed"
            self._line(f"broker {broker_id}: connection {conn.conn_id} closed ({reason})")
            c.raw.detach()
            # Closing a dead socket may fail in many ways; none of them matter here.
            with trio.CancelScope(shield=True), contextlib.suppress(Exception):
                await stream.aclose()

    async def _serve_tls(self, stream: trio.SocketStream, broker_id: int, host: str, peer: str,
                         li: Listener) -> None:
        """An SSL/SASL_SSL connection: the handshake first, closed when idle for connections.max.idle.ms
        (the timer restarts with every read and write, as Kafka's Selector idle expiry does: it has
        no handshake timeout of its own), then requests through the TLS engine. A failed or stalled
        handshake closes the connection with the reason (SEC-4, SEC-5)."""
        idle_s = self._limit("connections.max.idle.ms") / 1000
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        try:
            c = _TlsConn(stream, self._tls[li.name].wrap_bio(incoming, outgoing, server_side=True), incoming,
                         outgoing, broker_id)
        except OSError as exc:
            self._line(f"broker {broker_id}: connection from {peer} on listener {li.name} unusable ({exc})")
            with trio.CancelScope(shield=True), contextlib.suppress(Exception):
                await stream.aclose()
            return
        c.ip = host
        conn: Connection | None = None
        try:
            reason = await self._tls_handshake(c, idle_s)
            principal = "User:ANONYMOUS"
            if not reason:
                der = c.tls.getpeercert(binary_form=True)
                if der:
                    dn = peer_distinguished_name(der)
                    try:
                        principal = f"User:{self._mappers[li.name].name(dn)}"  # DefaultKafkaPrincipalBuilder (SEC-6)
                    except ConfigError as exc:
                        reason = f"TLS client certificate {dn!r}: {exc}"
            if reason:
                self._line(f"broker {broker_id}: connection from {peer} on listener {li.name} closed ({reason})")
                c.send_outgoing_nowait()
                return
            conn = c.conn = Connection(self.core, broker_id, peer, li.name)
            conn.info.principal = principal
            self._conns[conn.conn_id] = c
            self._line(f"broker {broker_id}: connection {conn.conn_id} from {peer} on listener {li.name} "
                       f"({c.tls.version()}, {principal})")
            await self._tls_requests(c, conn, idle_s)
        finally:
            if conn is not None:
                if not conn.closed:
                    conn.connection_lost()
                self._conns.pop(conn.conn_id, None)
                self._slot_freed.set()
                self._slot_freed = trio.Event()
                self.flush()
                self._line(f"broker {broker_id}: connection {conn.conn_id} closed ({conn.close_reason or 'closed'})")
                with contextlib.suppress(ssl.SSLError):
                    c.tls.unwrap()  # close_notify, best effort
                c.send_outgoing_nowait()
            c.raw.detach()
            with trio.CancelScope(shield=True), contextlib.suppress(Exception):
                await stream.aclose()

    async def _tls_handshake(self, c: _TlsConn, idle_s: float) -> str:
        """Drive the server handshake; '' when done, else why it failed (idle for ``idle_s`` since
        the last byte either way included: Selector.maybeCloseOldestConnection)."""
        c.last_active = trio.current_time()
        while True:
            try:
                c.tls.do_handshake()
                await c.send_outgoing()
                return ""
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError as exc:
                return f"TLS handshake failed: {_tls_cause(exc)}"
            except OSError as exc:
                return f"TLS handshake failed: {exc}"
            try:
                await c.send_outgoing()
                got = c.raw.recv(_TLS_READ)
            except BlockingIOError:
                with trio.move_on_at(c.last_active + idle_s) as idle:
                    await trio.lowlevel.wait_readable(c.raw)
                if idle.cancelled_caught:
                    return (f"TLS handshake idle for more than connections.max.idle.ms ({int(idle_s * 1000)} ms)")
                continue
            except OSError as exc:
                return f"TLS handshake failed: {exc}"
            if not got:
                return "TLS handshake failed: the client closed the connection"
            c.last_active = trio.current_time()
            c.incoming.write(got)

    async def _tls_requests(self, c: _TlsConn, conn: Connection, idle_s: float) -> None:
        """Decrypt what arrives, record by record, into the connection; the writer encrypts answers."""
        rview = self._rview
        with c.cancel:
            async with trio.open_nursery() as n:
                n.start_soon(self._tls_writer, c, conn)
                eager = 0
                # The handshake's last read may have brought the first requests along.
                got = -1
                while not conn.closed:
                    if got == -1:
                        got = 0
                        self._tls_decrypt(c, conn)
                        continue
                    try:
                        got = c.raw.recv_into(rview)
                    except BlockingIOError:
                        eager = 0
                        with trio.move_on_at(c.last_active + idle_s) as idle:
                            await trio.lowlevel.wait_readable(c.raw)
                        if idle.cancelled_caught:
                            if conn.busy or conn.queued_bytes or c.sending:
                                c.last_active = trio.current_time()
                            else:
                                conn.close(f"idle for more than connections.max.idle.ms ({int(idle_s * 1000)})")
                                break
                        continue
                    except OSError:
                        got = 0
                    if not got:
                        conn.connection_lost()
                        break
                    c.last_active = trio.current_time()
                    c.incoming.write(rview[:got])
                    self._tls_decrypt(c, conn)
                    eager += 1
                    if eager >= _EAGER_READS:
                        eager = 0
                        await trio.lowlevel.checkpoint()
                c.wake.set()
                n.cancel_scope.cancel()

    def _tls_decrypt(self, c: _TlsConn, conn: Connection) -> None:
        """Every whole TLS record in the incoming BIO into the connection; then route answers."""
        plain = self._plain
        try:
            while not conn.closed:
                try:
                    k = int(c.tls.read(len(plain), plain))  # with a buffer: the count (typeshed says bytes)
                except ssl.SSLWantReadError:
                    break
                if not k:  # close_notify
                    conn.connection_lost()
                    break
                conn.receive_data(plain[:k])
            self.flush()
        except ssl.SSLError as exc:
            conn.close(f"TLS error: {_tls_cause(exc)}")
        except Exception as exc:  # noqa: BLE001 - contain a bug to this connection
            log.exception("connection %d failed", conn.conn_id)
            conn.close(f"internal error: {exc}")
        try:
            if conn.queued_bytes and not c.sending and not c.leftover and c.answer_nowait(conn):
                c.last_active = trio.current_time()
        except (OSError, ssl.SSLError):
            conn.connection_lost()
        if conn.queued_bytes or conn.closed or c.outgoing.pending or c.leftover:
            c.wake.set()

    async def _tls_writer(self, c: _TlsConn, conn: Connection) -> None:
        """Everything a TLS connection sends goes out here, in order: answers encrypted into records."""
        while True:
            await c.wake.wait()
            c.wake = trio.Event()
            c.sending = True
            try:
                for piece in conn.pieces_to_send():
                    c.tls.write(piece)
                await c.send_outgoing()
            except (OSError, ssl.SSLError):
                conn.connection_lost()
                c.cancel.cancel()
                return
            finally:
                c.sending = False
            if conn.closed:
                c.cancel.cancel()
                return

    async def _writer(self, c: _Conn) -> None:
        """Sends what the reader could not send at once, and answers completed elsewhere."""
        conn = c.conn
        while True:
            await c.wake.wait()
            c.wake = trio.Event()
            views = [memoryview(p) for p in conn.pieces_to_send()]
            c.sending = True
            try:
                while views:
                    del views[: _write_nowait(c.raw, views)]
                    c.last_active = trio.current_time()
                    if views:
                        await trio.lowlevel.wait_writable(c.raw)
            except OSError:
                conn.connection_lost()
                c.cancel.cancel()
                return
            finally:
                c.sending = False
            if conn.closed:
                c.cancel.cancel()
                return

    def flush(self) -> None:
        """Deliver completed deferred responses and re-arm the deadline task."""
        # Wake-ups noted outside a request or timer (control calls: produce, leader moves).
        self.core.run_wakeups()
        for conn_id, data in self.core.take_outbox():
            c = self._conns.get(conn_id)
            if c is None or c.conn is None:
                continue
            c.conn.complete(data)
            c.wake.set()
        # Completing a response may let a connection dispatch queued requests: route again.
        if self.core.outbox:
            self.flush()
        if self._slot_waiters:
            # max.connections may have been raised (ConnectionQuotas.updateBrokerMaxConnections notifies)
            self._slot_freed.set()
            self._slot_freed = trio.Event()
        # Wake the deadline task only when it would sleep past the next deadline (one task
        # switch saved per request in the common case).
        nxt = self.core.next_deadline_ms()
        if nxt is not None and (self._sleeping_until is None or nxt < self._sleeping_until
                                or nxt <= self.clock.now_ms()):
            self._deadline_wake.set()
        if self.on_progress is not None:
            self.on_progress()

    # --- time -------------------------------------------------------------------------------
    async def _deadline_task(self) -> None:
        manual = isinstance(self.clock, ManualClock)
        while True:
            self._deadline_wake = trio.Event()
            nxt = self.core.next_deadline_ms()
            if nxt is not None and nxt <= self.clock.now_ms():
                self.core.fire_due()
                self.flush()
                continue
            self._sleeping_until = nxt
            if nxt is None or manual:
                # A manual clock moves only through the control API, which wakes us.
                await self._deadline_wake.wait()
            else:
                delay = (nxt - self.clock.now_ms()) / 1000
                with trio.move_on_after(max(0.0, min(delay, math.inf))):
                    await self._deadline_wake.wait()

    def poke(self) -> None:
        """Re-examine deadlines and outbox now (after a control call changed state)."""
        self.flush()

    # --- control ----------------------------------------------------------------------------
    def close_connections(self, broker_id: int | None = None) -> int:
        n = 0
        for c in list(self._conns.values()):
            if (broker_id is None or c.broker_id == broker_id) and c.conn is not None:
                c.conn.close("closed by the control API")
                c.cancel.cancel()
                n += 1
        return n

    async def stop_broker(self, node_id: int) -> None:
        """Take one broker down: stop listening and drop its connections."""
        scope = self._listener_scopes.pop(node_id, None)
        if scope is not None:
            scope.cancel()
        for lst in self._listeners.pop(node_id, []):
            await lst.aclose()
        self.core.cluster.set_node_up(node_id, False)
        self.core.metadata_changed()
        self.close_connections(node_id)
        self.core.wake_all()
        self.flush()

    async def start_broker(self, node_id: int) -> None:
        if node_id not in self._listeners:
            await self._start_listener(node_id)
        self.core.cluster.set_node_up(node_id, True)
        self.core.metadata_changed()
        self.flush()

"""SSL and SASL_SSL listeners over real sockets: advertised endpoints, mTLS principals, bad input.

Upstream: SocketServer (listeners, Processor), SslTransportLayer (handshake), SslFactory /
DefaultSslEngineFactory (ssl.client.auth, PEM stores), DefaultKafkaPrincipalBuilder and
SslPrincipalMapper (the mTLS principal), Selector (idle expiry of channels still in their handshake)
at d79bd502.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.broker.tls import ThrowawayCA, client_context
from kwire.control import Broker, BrokerConfig
from kwire.protocol import decode_response, encode_request
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.messages.metadata import MetadataRequest

LISTENERS = "PLAINTEXT://:0,SSL://:0"
API_VERSIONS = ApiVersionsRequest(client_software_name="kwire-test", client_software_version="1")


class Lines:
    """The broker's connection log, waited on without sleeping."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, text: str) -> None:
        with self._cond:
            self.lines.append(text)
            self._cond.notify_all()

    def wait_for(self, needle: str, timeout: float = 20.0) -> str:
        with self._cond:
            ok = self._cond.wait_for(lambda: any(needle in t for t in self.lines), timeout)
        assert ok, f"no log line with {needle!r} in {self.lines}"
        return next(t for t in self.lines if needle in t)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayCA:
    return ThrowawayCA.create(tmp_path_factory.mktemp("tls"))


def tls_settings(ca: ThrowawayCA, **extra: str) -> dict[str, str]:
    return {"listeners": LISTENERS, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(ca.keystore),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.ca_file), **extra}


@pytest.fixture
def started(ca: ThrowawayCA, request: pytest.FixtureRequest) -> Iterator[tuple[Broker, Lines]]:
    extra: dict[str, str] = getattr(request, "param", {})
    lines = Lines()
    with Broker(BrokerConfig(brokers=2, settings=tls_settings(ca, **extra)), on_line=lines) as b:
        yield b, lines


def _addr(servers: str) -> tuple[str, int]:
    host, port = servers.split(",")[0].rsplit(":", 1)
    return host, int(port)


def exchange(sock: Any, body: Any, version: int) -> Any:
    sock.sendall(encode_request(body, version, correlation_id=7, client_id="kwire-test"))
    size = int.from_bytes(_read(sock, 4), "big")
    return decode_response(_read(sock, size), body.API_KEY, version).body


def _read(sock: Any, n: int) -> bytes:
    out = b""
    while len(out) < n:
        got = sock.recv(n - len(out))
        if not got:
            raise ConnectionError("closed by the broker")
        out += got
    return out


def tls_connect(servers: str, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    host, port = _addr(servers)
    raw = socket.create_connection((host, port), timeout=20)
    return ctx.wrap_socket(raw, server_hostname="localhost")


@pytest.mark.rule("SEC-2")
@pytest.mark.rule("SEC-3")
def test_each_listener_advertises_its_own_endpoints(started: tuple[Broker, Lines], ca: ThrowawayCA) -> None:
    """Metadata over the SSL listener lists every broker's SSL endpoint; over PLAINTEXT the plain ones."""
    b, _ = started
    listeners = b.listeners
    assert set(listeners) == {"PLAINTEXT", "SSL"}
    with tls_connect(listeners["SSL"], client_context(ca.ca_file)) as s:
        meta = exchange(s, MetadataRequest(topics=None), 12)
    assert ",".join(f"{x.host}:{x.port}" for x in meta.brokers) == listeners["SSL"]
    with socket.create_connection(_addr(listeners["PLAINTEXT"]), timeout=20) as s:
        meta = exchange(s, MetadataRequest(topics=None), 12)
    assert ",".join(f"{x.host}:{x.port}" for x in meta.brokers) == listeners["PLAINTEXT"]
    assert b.bootstrap == listeners["PLAINTEXT"]


@pytest.mark.rule("SEC-6")
@pytest.mark.parametrize("started", [{"ssl.client.auth": "required",
                                      "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*,O=acme$/$1/L,DEFAULT"}],
                         indirect=True)
def test_mtls_principal_comes_from_the_certificate_subject(started: tuple[Broker, Lines], ca: ThrowawayCA) -> None:
    """DefaultKafkaPrincipalBuilder: User:<ssl.principal.mapping.rules applied to the subject DN>."""
    b, lines = started
    cert = ca.client_keystore("Alice", organization="acme")
    with tls_connect(b.listeners["SSL"], client_context(ca.ca_file, cert)) as s:
        assert exchange(s, API_VERSIONS, 3).error_code == 0
        principals = b.call(lambda: {c.principal for c in b.core.connections.values() if c.listener == "SSL"})
    assert principals == {"User:alice"}
    lines.wait_for("User:alice")


@pytest.mark.rule("SEC-6")
def test_without_client_auth_the_principal_is_anonymous(started: tuple[Broker, Lines], ca: ThrowawayCA) -> None:
    b, _ = started
    with tls_connect(b.listeners["SSL"], client_context(ca.ca_file)) as s:
        assert exchange(s, API_VERSIONS, 3).error_code == 0
        principals = b.call(lambda: {c.principal for c in b.core.connections.values() if c.listener == "SSL"})
    assert principals == {"User:ANONYMOUS"}


def _still_serves(b: Broker, ca: ThrowawayCA, cert: Path | None = None) -> None:
    with tls_connect(b.listeners["SSL"], client_context(ca.ca_file, cert)) as s:
        assert exchange(s, API_VERSIONS, 3).error_code == 0


@pytest.mark.rule("SEC-4")
def test_a_plaintext_client_on_the_tls_port_is_closed_with_the_reason(started: tuple[Broker, Lines],
                                                                       ca: ThrowawayCA) -> None:
    b, lines = started
    with socket.create_connection(_addr(b.listeners["SSL"]), timeout=20) as s:
        s.sendall(encode_request(ApiVersionsRequest(), 3, correlation_id=1, client_id="plain"))
        assert s.recv(1024) == b""  # closed, never answered
    assert "TLS handshake failed" in lines.wait_for("on listener SSL closed")
    _still_serves(b, ca)


@pytest.mark.rule("SEC-4")
def test_a_tls_client_on_the_plaintext_port_is_closed_with_the_reason(started: tuple[Broker, Lines],
                                                                       ca: ThrowawayCA) -> None:
    b, lines = started
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        tls_connect(b.listeners["PLAINTEXT"], client_context(ca.ca_file)).close()
    assert "a TLS client on a plaintext listener" in lines.wait_for("TLS handshake record")
    _still_serves(b, ca)


@pytest.mark.rule("SEC-4")
@pytest.mark.parametrize("started", [{"ssl.client.auth": "required"}], indirect=True)
def test_a_certificate_from_another_ca_is_refused(started: tuple[Broker, Lines], ca: ThrowawayCA,
                                                  tmp_path: Path) -> None:
    b, lines = started
    stranger = ThrowawayCA.create(tmp_path).client_keystore("mallory")
    with (pytest.raises((ssl.SSLError, ConnectionError, OSError)),
          tls_connect(b.listeners["SSL"], client_context(ca.ca_file, stranger)) as s):
        exchange(s, API_VERSIONS, 3)  # TLS 1.3: the refusal arrives after the client's handshake
    assert "certificate" in lines.wait_for("TLS handshake failed").lower()
    _still_serves(b, ca, ca.client_keystore("alice"))


@pytest.mark.rule("SEC-4")
def test_a_client_that_does_not_trust_the_broker_certificate(started: tuple[Broker, Lines], ca: ThrowawayCA,
                                                             tmp_path: Path) -> None:
    """The client's alert (unknown CA) ends the handshake; the broker logs it and serves others."""
    b, lines = started
    other = ThrowawayCA.create(tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_connect(b.listeners["SSL"], client_context(other.ca_file)).close()
    assert "unknown_ca" in lines.wait_for("TLS handshake failed").lower().replace(" ", "_")
    _still_serves(b, ca)


@pytest.mark.rule("SEC-4")
@pytest.mark.parametrize("started", [{"ssl.client.auth": "required"}], indirect=True)
def test_an_expired_client_certificate_is_refused(started: tuple[Broker, Lines], ca: ThrowawayCA) -> None:
    b, lines = started
    expired = ca.client_keystore("old", not_after=datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC))
    with (pytest.raises((ssl.SSLError, ConnectionError, OSError)),
          tls_connect(b.listeners["SSL"], client_context(ca.ca_file, expired)) as s):
        exchange(s, API_VERSIONS, 3)
    assert "expired" in lines.wait_for("TLS handshake failed").lower()
    _still_serves(b, ca, ca.client_keystore("alice"))


@pytest.mark.rule("SEC-4")
@pytest.mark.rule("SEC-5")
@pytest.mark.parametrize("started", [{"connections.max.idle.ms": "300"}], indirect=True)
def test_a_stalled_handshake_is_closed_after_connections_max_idle_ms(started: tuple[Broker, Lines],
                                                                     ca: ThrowawayCA) -> None:
    """Kafka's Selector expires a channel idle in its handshake like any other (connections.max.idle.ms)."""
    b, lines = started
    with socket.create_connection(_addr(b.listeners["SSL"]), timeout=20) as stalled:
        stalled.sendall(b"\x16\x03\x01\x02\x00")  # a ClientHello record header, then nothing
        # Before its handshake completes a connection is nothing to the core (no ConnInfo, no buffers)
        assert b.call(lambda: len(b.core.connections)) == 0
        _still_serves(b, ca)  # others are served meanwhile
        assert stalled.recv(1024) == b""
    assert "idle for more than connections.max.idle.ms (300 ms)" in lines.wait_for("TLS handshake idle")


@pytest.mark.rule("SEC-5")
@pytest.mark.parametrize("started", [{"connections.max.idle.ms": "300"}], indirect=True)
def test_a_slow_handshake_that_keeps_sending_is_not_cut_off(started: tuple[Broker, Lines], ca: ThrowawayCA) -> None:
    """Selector's idle expiry restarts with every read: a handshake whose ClientHello trickles in a
    few bytes every 100 ms for well over connections.max.idle.ms completes (Kafka has no handshake
    timeout of its own)."""
    b, _ = started
    ctx = client_context(ca.ca_file)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    with socket.create_connection(_addr(b.listeners["SSL"]), timeout=20) as sock:
        chunk = max(1, len(hello) // 8)
        for i in range(0, len(hello), chunk):  # 8+ pieces, 100 ms apart: 700+ ms in all
            sock.sendall(hello[i:i + chunk])
            threading.Event().wait(0.1)  # wall time on purpose: idle expiry is an I/O concern
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
                data = sock.recv(65536)
                assert data, "closed during a handshake that never idled"
                incoming.write(data)
        sock.sendall(outgoing.read())
        tls.write(encode_request(API_VERSIONS, 3, correlation_id=7, client_id="kwire-test"))
        sock.sendall(outgoing.read())
        while True:
            try:
                head = tls.read(4)
                break
            except ssl.SSLWantReadError:
                incoming.write(sock.recv(65536))
        assert int.from_bytes(head, "big") > 0


@pytest.mark.rule("SEC-7")
def test_sasl_ssl_listener_authenticates_over_tls(ca: ThrowawayCA) -> None:
    """SASL_SSL: the SASL exchange runs inside TLS; the principal is the SASL user."""
    from kwire.broker.config import SaslConfig
    from kwire.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
    from kwire.protocol.messages.sasl_handshake import SaslHandshakeRequest

    settings = tls_settings(ca, listeners="PLAINTEXT://:0,SASL_SSL://:0")
    with Broker(BrokerConfig(settings=settings, sasl=SaslConfig(users={"alice": "pw"}), log_connections=False)) as b:
        with tls_connect(b.listeners["SASL_SSL"], client_context(ca.ca_file)) as s:
            assert exchange(s, SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
            assert exchange(s, SaslAuthenticateRequest(auth_bytes=b"\0alice\0pw"), 2).error_code == 0
            assert exchange(s, MetadataRequest(topics=None), 12).error_code == 0
            principals = b.call(lambda: {c.principal for c in b.core.connections.values()})
        assert principals == {"User:alice"}
        with socket.create_connection(_addr(b.listeners["PLAINTEXT"]), timeout=20) as s:  # no SASL there
            assert exchange(s, MetadataRequest(topics=None), 12).error_code == 0


@pytest.mark.rule("SEC-3")
def test_broker_wide_client_auth_does_not_apply_to_sasl_ssl_listeners(ca: ThrowawayCA) -> None:
    """KIP-684, ChannelBuilders.create: a SASL_SSL listener requires client certificates only with
    ``listener.name.<l>.ssl.client.auth``; the broker-wide ``ssl.client.auth=required`` binds SSL
    listeners alone (found by librdkafka's test 0097, which expects a SASL_SSL connection without a
    trusted client certificate to succeed under ssl.client.auth=required)."""
    from kwire.broker.config import SaslConfig

    settings = tls_settings(ca, listeners="SSL://:0,SASL_SSL://:0,MSASL://:0", **{
        "ssl.client.auth": "required", "listener.security.protocol.map": "SSL:SSL,SASL_SSL:SASL_SSL,MSASL:SASL_SSL",
        "listener.name.msasl.ssl.client.auth": "required"})
    with Broker(BrokerConfig(settings=settings, sasl=SaslConfig(users={"alice": "pw"}), log_connections=False)) as b:
        with tls_connect(b.listeners["SASL_SSL"], client_context(ca.ca_file)) as s:  # no client certificate
            assert exchange(s, API_VERSIONS, 3).error_code == 0
        for name in ("SSL", "MSASL"):  # broker-wide on SSL, listener-prefixed on SASL_SSL: required
            with pytest.raises((ssl.SSLError, ConnectionError, OSError)), \
                    tls_connect(b.listeners[name], client_context(ca.ca_file)) as s:
                exchange(s, API_VERSIONS, 3)
            with tls_connect(b.listeners[name], client_context(ca.ca_file, ca.client_keystore("bob"))) as s:
                assert exchange(s, API_VERSIONS, 3).error_code == 0


@pytest.mark.rule("SEC-3")
def test_a_tls_listener_without_a_keystore_gets_a_throwaway_ca() -> None:
    with Broker(BrokerConfig(settings={"listeners": "SSL://:0"}, log_connections=False)) as b:
        assert b.ca_file is not None and Path(b.ca_file).exists()
        with tls_connect(b.bootstrap, ssl.create_default_context(cafile=b.ca_file)) as s:
            assert exchange(s, API_VERSIONS, 3).error_code == 0


@pytest.mark.rule("SEC-1")
@pytest.mark.rule("SEC-3")
def test_listener_prefixed_tls_settings_apply_to_their_listener_only(ca: ThrowawayCA) -> None:
    """listener.name.<l>.ssl.client.auth: a custom listener name mapped to SSL requires client
    certificates while the SSL listener does not (ListenerName.configPrefix)."""
    settings = tls_settings(ca, listeners="SSL://:0,MTLS://:0",
                            **{"listener.security.protocol.map": "SSL:SSL,MTLS:SSL",
                               "listener.name.mtls.ssl.client.auth": "required"})
    with Broker(BrokerConfig(settings=settings, log_connections=False)) as b:
        _still_serves(b, ca)  # SSL: no client certificate needed
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)), \
                tls_connect(b.listeners["MTLS"], client_context(ca.ca_file)) as s:
            exchange(s, API_VERSIONS, 3)
        with tls_connect(b.listeners["MTLS"], client_context(ca.ca_file, ca.client_keystore("bob"))) as s:
            assert exchange(s, API_VERSIONS, 3).error_code == 0
            principals = b.call(lambda: {c.principal for c in b.core.connections.values()})
        assert any(p.startswith("User:CN=bob") for p in principals)

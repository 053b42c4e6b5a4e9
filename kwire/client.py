"""A small blocking Kafka wire client on kwire's own codec, for inspection commands and scripts.

Not a producer or consumer library: it opens sockets to the bootstrap server and to the
nodes Metadata names (TLS and SASL as ``ClientSecurity`` says: PLAINTEXT, SSL, SASL_PLAINTEXT or
SASL_SSL; SASL PLAIN or SCRAM-SHA-256/512 after ApiVersions, by SaslHandshake v1 and
SaslAuthenticate, as Kafka's SaslClientAuthenticator does), negotiates versions with ApiVersions (KIP-511: a v0 answer with
UNSUPPORTED_VERSION carries the broker's range and the client retries there), and sends one
request at a time per connection, picking for each API the highest version both sides support.
It talks to kwire or to any Kafka broker. Every read is bounded: a size prefix above
``max_response_bytes`` closes the connection with ``WireClientError``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import secrets
import socket
import ssl
import struct
from dataclasses import dataclass
from typing import Any

from kwire.errors import DecodeError, WireClientError
from kwire.protocol.framing import decode_response, encode_request
from kwire.protocol.registry import ApiKey, api_info

__all__ = ["WireClient", "ClientSecurity", "parse_bootstrap", "DEFAULT_TIMEOUT_S", "MAX_RESPONSE_BYTES",
           "SECURITY_PROTOCOLS", "SASL_MECHANISMS", "LISTENER_HINT"]

DEFAULT_TIMEOUT_S = 10.0
MAX_RESPONSE_BYTES = 256 * 1024 * 1024  # a client's bound on one answer (fetch.max.bytes-sized answers fit)
_SIZE = struct.Struct(">i")
_API_VERSIONS_TRY = 3  # the version asked first; the broker's own range comes back either way
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LISTENER_HINT = "the listener may require SASL or TLS (see --command-config)"
_SASL_HANDSHAKE_VERSION = 1  # v1: the tokens go in SaslAuthenticate requests (KIP-152), not raw frames
_SCRAM_HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@dataclass(slots=True)
class ClientSecurity:
    """Kafka's client security settings: ``security.protocol``, ``sasl.mechanism``, the SASL user
    and password, and the CA file that verifies the broker's certificate (None: the system's)."""

    protocol: str = "PLAINTEXT"
    mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None  # a PEM with the client's certificate and key (mTLS)
    key_file: str | None = None
    check_hostname: bool = True  # ssl.endpoint.identification.algorithm=https, Kafka's default

    def __post_init__(self) -> None:
        if self.protocol not in SECURITY_PROTOCOLS:
            raise WireClientError(f"security.protocol {self.protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}")
        if self.sasl:
            if self.mechanism not in SASL_MECHANISMS:
                raise WireClientError(f"sasl.mechanism {self.mechanism!r} is not supported by kwire's client "
                                      f"(one of {', '.join(SASL_MECHANISMS)})")
            if self.username is None or self.password is None:
                raise WireClientError(f"security.protocol {self.protocol} needs a SASL username and password "
                                      "(sasl.jaas.config, or --username and --password)")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    @property
    def principal(self) -> str | None:
        """The principal the broker sees, as far as the client knows (None: a client certificate's DN)."""
        if self.sasl:
            return f"User:{self.username}"
        return None if self.cert_file else "User:ANONYMOUS"

    def ssl_context(self) -> ssl.SSLContext:
        try:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            if self.cert_file:
                ctx.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise WireClientError(f"TLS set-up: {exc}") from None
        ctx.check_hostname = self.check_hostname
        return ctx


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]`` -> [(host, port)]; raises WireClientError on a bad entry."""
    out = []
    for item in bootstrap.split(","):
        item = item.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise WireClientError(f"bootstrap server {item!r} is not HOST:PORT")
        if not 1 <= int(port) <= 65535:
            raise WireClientError(f"bootstrap server {item!r}: port {port} is not 1-65535")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise WireClientError("no bootstrap server given")
    return out


@dataclass(slots=True)
class _Conn:
    sock: socket.socket
    versions: dict[int, tuple[int, int]]  # api key -> the broker's (min, max)
    where: str
    answers: int = 0  # responses read on this connection


class WireClient:
    """Blocking requests to a cluster; ``request(body)`` answers the decoded response body."""

    def __init__(self, bootstrap: str, *, client_id: str = "kwire", timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, security: ClientSecurity | None = None) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.security = security or ClientSecurity()
        self._ssl: ssl.SSLContext | None = self.security.ssl_context() if self.security.tls else None
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self._corr = itertools.count(1)
        self._conns: dict[tuple[str, int], _Conn] = {}
        self.nodes: dict[int, tuple[str, int]] = {}

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for c in self._conns.values():
            c.sock.close()
        self._conns.clear()

    # --- requests ---------------------------------------------------------------------------
    def request(self, body: Any, *, node: int | None = None, version: int | None = None) -> Any:
        """Send ``body`` to ``node`` (a node id from Metadata; None: the first bootstrap server
        that answers) at ``version`` (None: the highest both sides support)."""
        if node is None:
            conn = self._bootstrap_conn()
        else:
            if node not in self.nodes:
                self.metadata_nodes()
            if node not in self.nodes:
                raise WireClientError(f"node {node} is not in the cluster's metadata")
            conn = self._conn(self.nodes[node])
        v = self.pick_version(conn, body.API_KEY) if version is None else version
        return self._exchange(conn, body, v)

    def supported_version(self, api_key: int, node: int | None = None) -> int | None:
        """The version ``request`` would use for ``api_key``, or None when the broker lacks it."""
        conn = self._bootstrap_conn() if node is None else self._conn(self.nodes[node])
        try:
            return self.pick_version(conn, api_key)
        except WireClientError:
            return None

    def pick_version(self, conn: _Conn, api_key: int) -> int:
        info = api_info(api_key)
        theirs = conn.versions.get(api_key)
        if theirs is None:
            raise WireClientError(f"{conn.where} does not support {info.name}")
        hi = min(theirs[1], info.max_version)
        if hi < max(theirs[0], info.min_version):
            raise WireClientError(f"no {info.name} version in common with {conn.where} "
                                  f"(broker {theirs[0]}-{theirs[1]}, kwire {info.min_version}-{info.max_version})")
        return hi

    def metadata_nodes(self) -> dict[int, tuple[str, int]]:
        """Refresh the node list from a Metadata request without topics."""
        from kwire.protocol.messages.metadata import MetadataRequest

        resp = self.request(MetadataRequest(topics=[], allow_auto_topic_creation=False))
        self.nodes = {b.node_id: (b.host, b.port) for b in resp.brokers}
        return self.nodes

    # --- connections ------------------------------------------------------------------------
    def _bootstrap_conn(self) -> _Conn:
        errors = []
        for addr in self.bootstrap:
            try:
                return self._conn(addr)
            except (OSError, WireClientError) as exc:
                errors.append(f"{addr[0]}:{addr[1]}: {exc}")
        raise WireClientError("no bootstrap server answered (" + "; ".join(errors) + ")")

    def _conn(self, addr: tuple[str, int]) -> _Conn:
        conn = self._conns.get(addr)
        if conn is not None:
            return conn
        where = f"{addr[0]}:{addr[1]}"
        try:
            sock = socket.create_connection(addr, timeout=self.timeout_s)
        except OSError as exc:
            raise WireClientError(f"cannot connect to {where}: {exc.strerror or exc}") from None
        if self._ssl is not None:
            try:
                sock = self._ssl.wrap_socket(sock, server_hostname=addr[0])
            except ssl.SSLCertVerificationError as exc:
                sock.close()
                raise WireClientError(f"TLS to {where}: the broker's certificate is not trusted "
                                      f"({exc.verify_message}; ssl.ca.location / --ca-file names the CA)") from None
            except (OSError, ssl.SSLError) as exc:
                sock.close()
                raise WireClientError(f"TLS handshake with {where} failed ({exc}): is it a TLS listener?") from None
        conn = _Conn(sock, {}, where)
        try:
            conn.versions = self._negotiate(conn)
            if self.security.sasl:
                self._authenticate(conn)
        except BaseException:
            sock.close()
            raise
        self._conns[addr] = conn
        return conn

    def _negotiate(self, conn: _Conn) -> dict[int, tuple[int, int]]:
        from kwire.protocol.messages.api_versions import ApiVersionsRequest

        req = ApiVersionsRequest(client_software_name="kwire", client_software_version="1")
        resp = self._exchange(conn, req, _API_VERSIONS_TRY)
        if resp.error_code == 35:  # UNSUPPORTED_VERSION: retry at the highest the broker named
            mine = next((k for k in resp.api_keys if k.api_key == ApiKey.API_VERSIONS), None)
            retry = min(mine.max_version, _API_VERSIONS_TRY) if mine is not None else 0
            resp = self._exchange(conn, req, retry)
        if resp.error_code:
            raise WireClientError(f"{conn.where} refused ApiVersions with error code {resp.error_code}")
        return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}

    def _authenticate(self, conn: _Conn) -> None:
        """SaslHandshake v1 then SaslAuthenticate rounds, as Kafka's SaslClientAuthenticator."""
        from kwire.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
        from kwire.protocol.messages.sasl_handshake import SaslHandshakeRequest

        sec = self.security
        if ApiKey.SASL_HANDSHAKE not in conn.versions or ApiKey.SASL_AUTHENTICATE not in conn.versions:
            raise WireClientError(f"{conn.where} does not serve SaslHandshake v1 and SaslAuthenticate")
        hs = self._exchange(conn, SaslHandshakeRequest(mechanism=sec.mechanism), _SASL_HANDSHAKE_VERSION)
        if hs.error_code:
            offered = ", ".join(hs.mechanisms) or "none"
            raise WireClientError(f"{conn.where} does not enable SASL mechanism {sec.mechanism} "
                                  f"(it offers: {offered})")
        version = self.pick_version(conn, ApiKey.SASL_AUTHENTICATE)
        assert sec.username is not None and sec.password is not None  # ClientSecurity checked it
        steps = (_PlainClient(sec.username, sec.password) if sec.mechanism == "PLAIN"
                 else _ScramClient(sec.mechanism, sec.username, sec.password))
        token: bytes | None = steps.first()
        while token is not None:
            resp = self._exchange(conn, SaslAuthenticateRequest(auth_bytes=token), version)
            if resp.error_code:
                raise WireClientError(f"SASL {sec.mechanism} authentication as {sec.username!r} to {conn.where} "
                                      f"failed: {resp.error_message or resp.error_code}")
            token = steps.next(resp.auth_bytes)

    def _exchange(self, conn: _Conn, body: Any, version: int) -> Any:
        corr = next(self._corr)
        data = encode_request(body, version, correlation_id=corr, client_id=self.client_id)
        try:
            conn.sock.sendall(data)
            (size,) = _SIZE.unpack(self._read(conn, 4))
            if size < 0 or size > self.max_response_bytes:
                raise WireClientError(f"{conn.where} sent a frame of {size} bytes (limit {self.max_response_bytes})")
            payload = self._read(conn, size)
        except OSError as exc:
            self._drop(conn)
            raise WireClientError(f"{conn.where}: {exc.strerror or exc}") from None
        except WireClientError as exc:
            self._drop(conn)
            if "closed the connection" in str(exc) and conn.answers <= 1 and self.security.protocol != "SASL_SSL":
                # A TLS listener closes on plaintext bytes; a SASL listener answers ApiVersions,
                # then closes on any other request before SaslHandshake.
                raise WireClientError(f"{exc} before answering {api_info(body.API_KEY).name}: {LISTENER_HINT}") from None
            raise
        conn.answers += 1
        try:
            frame = decode_response(payload, body.API_KEY, version)
        except DecodeError as exc:
            self._drop(conn)
            raise WireClientError(f"{conn.where} answered {api_info(body.API_KEY).name} v{version} with bytes that "
                                  f"do not decode: {exc}") from None
        if frame.correlation_id != corr:
            self._drop(conn)
            raise WireClientError(f"{conn.where} answered correlation id {frame.correlation_id}, expected {corr}")
        return frame.body

    def _read(self, conn: _Conn, n: int) -> bytes:
        # In chunks as they arrive: a size prefix alone never makes the client allocate it.
        parts = []
        got = 0
        while got < n:
            chunk = conn.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise WireClientError(f"{conn.where} closed the connection")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def _drop(self, conn: _Conn) -> None:
        conn.sock.close()
        for addr, c in list(self._conns.items()):
            if c is conn:
                del self._conns[addr]


class _PlainClient:
    """RFC 4616: one token, authzid empty."""

    def __init__(self, username: str, password: str) -> None:
        self._token = f"\0{username}\0{password}".encode()

    def first(self) -> bytes:
        return self._token

    def next(self, server_token: bytes) -> bytes | None:
        return None


class _ScramClient:
    """RFC 5802 / 7677 client: client-first, then client-final with the proof; the server's
    signature in server-final is checked (a broker that does not know the password cannot forge it)."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self._hash = _SCRAM_HASH[mechanism]
        self._password = password
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._nonce = secrets.token_urlsafe(24)
        self._first_bare = f"n={name},r={self._nonce}"
        self._auth_message = b""
        self._salted = b""
        self._done = False

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self._hash).digest()

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def next(self, server_token: bytes) -> bytes | None:
        text = server_token.decode("utf-8", "replace")
        attrs = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        if "e" in attrs:
            raise WireClientError(f"SCRAM: the broker refused: {attrs['e']}")
        if self._done:
            return None
        if not self._auth_message:
            nonce, salt, iterations = attrs.get("r", ""), attrs.get("s", ""), attrs.get("i", "")
            if not nonce.startswith(self._nonce) or not salt or not iterations.isdigit():
                raise WireClientError(f"SCRAM: unexpected server-first message {text!r}")
            self._salted = hashlib.pbkdf2_hmac(self._hash, self._password.encode(), base64.b64decode(salt),
                                               int(iterations))
            final_bare = f"c=biws,r={nonce}"
            self._auth_message = f"{self._first_bare},{text},{final_bare}".encode()
            client_key = self._hmac(self._salted, b"Client Key")
            stored_key = hashlib.new(self._hash, client_key).digest()
            signature = self._hmac(stored_key, self._auth_message)
            proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
            return f"{final_bare},p={base64.b64encode(proof).decode()}".encode()
        expected = self._hmac(self._hmac(self._salted, b"Server Key"), self._auth_message)
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), expected):
            raise WireClientError("SCRAM: the broker's signature does not match (not the broker that knows the "
                                  "password)")
        self._done = True
        return None

"""A small blocking Kafka wire client on kwire's own codec, for inspection commands and scripts.

Not a producer or consumer library: it opens plain sockets to the bootstrap server and to the
nodes Metadata names, negotiates versions with ApiVersions (KIP-511: a v0 answer with
UNSUPPORTED_VERSION carries the broker's range and the client retries there), and sends one
request at a time per connection, picking for each API the highest version both sides support.
It talks to kwire or to any Kafka broker. Every read is bounded: a size prefix above
``max_response_bytes`` closes the connection with ``WireClientError``.
"""

from __future__ import annotations

import itertools
import socket
import struct
from dataclasses import dataclass
from typing import Any

from kwire.errors import DecodeError, WireClientError
from kwire.protocol.framing import decode_response, encode_request
from kwire.protocol.registry import ApiKey, api_info

__all__ = ["WireClient", "parse_bootstrap", "DEFAULT_TIMEOUT_S", "MAX_RESPONSE_BYTES"]

DEFAULT_TIMEOUT_S = 10.0
MAX_RESPONSE_BYTES = 256 * 1024 * 1024  # a client's bound on one answer (fetch.max.bytes-sized answers fit)
_SIZE = struct.Struct(">i")
_API_VERSIONS_TRY = 3  # the version asked first; the broker's own range comes back either way


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


class WireClient:
    """Blocking requests to a cluster; ``request(body)`` answers the decoded response body."""

    def __init__(self, bootstrap: str, *, client_id: str = "kwire", timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
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
        conn = _Conn(sock, {}, where)
        try:
            conn.versions = self._negotiate(conn)
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
        except WireClientError:
            self._drop(conn)
            raise
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

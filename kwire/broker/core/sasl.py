"""SASL server mechanisms, sans-I/O: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677).

Theory of operation
-------------------
* ``SaslAuthority`` is the broker's view of ``BrokerConfig.sasl``: the enabled mechanisms and
  the users. It hands out one fresh ``SaslServer`` per connection and handshake; SCRAM
  credentials (salt, StoredKey, ServerKey) are derived once per user and mechanism, with the
  salt drawn from the core's injected RNG, as Kafka stores them once per user.
* A ``SaslServer`` takes client tokens in order (``evaluate``) and returns the server's next
  token; ``complete`` says when the client is authenticated and ``username`` who it is. Any
  failure raises ``SaslAuthenticationError`` with the message the client is shown and moves
  the server to FAILED for good (a failed exchange is never resumed).
* SCRAM is a table (``_SCRAM_MOVES``): client-first → server-first, client-final →
  server-final. Nonces come from the injected RNG, so a seeded core repeats them.
* Messages follow Kafka's PlainSaslServer and ScramSaslServer: the server's own reason is
  kept in ``reason`` for logs, and the client sees Kafka's text (Kafka hides why SCRAM failed).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, ClassVar, Protocol

from kwire.broker.config import SaslConfig
from kwire.broker.core.cluster import Rng
from kwire.broker.core.subsystems import Subsystem
from kwire.errors import KafkaProtocolError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import ConnInfo

__all__ = [
    "evaluate_token",
    "SaslAuthenticationError",
    "SaslServer",
    "PlainServer",
    "ScramServer",
    "ScramState",
    "ScramCredential",
    "SaslAuthority",
    "SaslExchange",
    "SCRAM_MECHANISMS",
    "MIN_SCRAM_ITERATIONS",
    "scram_credential",
    "salted_password",
    "client_proof",
    "server_signature",
]

# ScramMechanism.minIterations(): 4096 for both SHA-256 and SHA-512.
MIN_SCRAM_ITERATIONS = 4096
# Kafka's mechanism names -> hashlib names (ScramMechanism).
SCRAM_MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_NONCE_BITS = 130  # ScramFormatter.secureRandomString(): BigInteger(130, random).toString(36)
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


class SaslAuthenticationError(KafkaProtocolError):
    """The exchange failed; ``message`` is what the client is told, ``reason`` the detail."""

    error_code: ClassVar[int] = ErrorCode.SASL_AUTHENTICATION_FAILED

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


class SaslServer(Protocol):
    """One connection's side of one SASL exchange."""

    mechanism: str

    @property
    def complete(self) -> bool: ...

    @property
    def username(self) -> str | None: ...

    def evaluate(self, token: bytes) -> bytes: ...


def _generic_failure(mechanism: str, reason: str) -> SaslAuthenticationError:
    # SaslServerAuthenticator turns a plain SaslException into this text, hiding the cause.
    return SaslAuthenticationError(
        f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}",
        reason,
    )


# --- PLAIN --------------------------------------------------------------------------------------


class PlainServer:
    """RFC 4616: one token ``authzid NUL authcid NUL passwd``, answered with an empty token."""

    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self._complete = False
        self._failed = False
        self._username: str | None = None

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def username(self) -> str | None:
        return self._username

    def evaluate(self, token: bytes) -> bytes:
        if self._complete or self._failed:
            raise _generic_failure(self.mechanism, "PLAIN takes exactly one client token")
        try:
            return self._evaluate(token)
        except SaslAuthenticationError:
            self._failed = True
            raise

    def _evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise _generic_failure(self.mechanism, "SASL/PLAIN response is not UTF-8") from None
        parts = text.split("\0")
        if len(parts) != 3:
            raise _generic_failure(self.mechanism,
                                   f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, user, password = parts
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password",
                                          f"unknown user {user!r}" if expected is None else f"wrong password for {user!r}")
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        self._username = user
        self._complete = True
        return b""


# --- SCRAM --------------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ScramCredential:
    """What a broker stores per SCRAM user: never the password itself (RFC 5802 §3)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword := Hi(Normalize(password), salt, i) — PBKDF2 with HMAC (RFC 5802 §2.2)."""
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


def scram_credential(mechanism: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
    """The stored credential for ``password`` (ScramFormatter.generateCredential)."""
    h = SCRAM_MECHANISMS[mechanism]
    sp = salted_password(h, password, salt, iterations)
    client_key = _hmac(h, sp, b"Client Key")
    return ScramCredential(salt, hashlib.new(h, client_key).digest(), _hmac(h, sp, b"Server Key"), iterations)


def client_proof(mechanism: str, password: str, salt: bytes, iterations: int, auth_message: bytes) -> bytes:
    """ClientProof := ClientKey XOR HMAC(StoredKey, AuthMessage) — the client's side, for tests."""
    h = SCRAM_MECHANISMS[mechanism]
    client_key = _hmac(h, salted_password(h, password, salt, iterations), b"Client Key")
    signature = _hmac(h, hashlib.new(h, client_key).digest(), auth_message)
    return bytes(a ^ b for a, b in zip(client_key, signature, strict=True))


def server_signature(mechanism: str, server_key: bytes, auth_message: bytes) -> bytes:
    """ServerSignature := HMAC(ServerKey, AuthMessage)."""
    return _hmac(SCRAM_MECHANISMS[mechanism], server_key, auth_message)


class ScramState(Enum):
    RECEIVE_CLIENT_FIRST = "receive-client-first"
    RECEIVE_CLIENT_FINAL = "receive-client-final"
    COMPLETE = "complete"
    FAILED = "failed"


# Each row: the state a client token arrives in -> the state after the server answered.
_SCRAM_MOVES: dict[ScramState, ScramState] = {
    ScramState.RECEIVE_CLIENT_FIRST: ScramState.RECEIVE_CLIENT_FINAL,  # RFC 5802 §5: server-first sent
    ScramState.RECEIVE_CLIENT_FINAL: ScramState.COMPLETE,  # RFC 5802 §5: server-final sent
}

# gs2-header "n" or "y" (no channel binding used), optional authzid; then the bare message.
# "p=" (channel binding required) is refused: there is no TLS channel to bind to.
_CLIENT_FIRST = re.compile(r"^(?P<gs2>(?P<cbind>[ny]),(?:a=(?P<authzid>[^,]*))?,)"
                           r"(?P<bare>n=(?P<saslname>[^,]*),r=(?P<nonce>[^,]+)(?P<extensions>(?:,[^,]*)*))$")
_CLIENT_FINAL = re.compile(r"^(?P<without_proof>c=(?P<channel>[^,]*),r=(?P<nonce>[^,]*)(?:,[^,]*)*?),"
                           r"p=(?P<proof>[A-Za-z0-9+/=]+)$")


def _saslname_to_username(name: str) -> str:
    """RFC 5802 §5.1: '=2C' is ',' and '=3D' is '='; any other '=' is malformed."""
    if re.search(r"=(?!2C|3D)", name):
        raise ValueError("invalid '=' escape in the username")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """RFC 5802 server: two client messages in, server-first and server-final out."""

    def __init__(self, mechanism: str, credential_for: Callable[[str], ScramCredential | None],
                 nonce: Callable[[], str]) -> None:
        if mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"{mechanism} is not a SCRAM mechanism")
        self.mechanism = mechanism
        self._hash = SCRAM_MECHANISMS[mechanism]
        self._credential_for = credential_for
        self._new_nonce = nonce
        self.state = ScramState.RECEIVE_CLIENT_FIRST
        self._username: str | None = None
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    @property
    def complete(self) -> bool:
        return self.state is ScramState.COMPLETE

    @property
    def username(self) -> str | None:
        return self._username if self.complete else None

    def evaluate(self, token: bytes) -> bytes:
        nxt = _SCRAM_MOVES.get(self.state)
        if nxt is None:
            raise _generic_failure(self.mechanism, f"unexpected client message in state {self.state.value}")
        step = self._client_first if self.state is ScramState.RECEIVE_CLIENT_FIRST else self._client_final
        try:
            try:
                text = token.decode("utf-8")
            except UnicodeDecodeError:
                raise _generic_failure(self.mechanism, "SCRAM message is not UTF-8") from None
            out = step(text)
        except SaslAuthenticationError:
            self.state = ScramState.FAILED
            raise
        self.state = nxt
        return out.encode("utf-8")

    def _client_first(self, text: str) -> str:
        m = _CLIENT_FIRST.match(text)
        if m is None:
            raise _generic_failure(self.mechanism, f"Invalid SCRAM client first message format: {text!r}")
        try:
            username = _saslname_to_username(m["saslname"])
        except ValueError as exc:
            raise _generic_failure(self.mechanism, str(exc)) from None
        extensions = dict(e.partition("=")[::2] for e in m["extensions"].split(",")[1:])
        if extensions.get("tokenauth", "false").lower() == "true":
            raise _generic_failure(self.mechanism, "delegation tokens (tokenauth) are not supported")
        authzid = m["authzid"]
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        credential = self._credential_for(username)
        if credential is None:
            raise _generic_failure(self.mechanism, f"Authentication failed: Invalid user credentials ({username!r} "
                                                   "is not a SCRAM user)")
        self._username = username
        self._credential = credential
        self._gs2_header = m["gs2"]
        self._client_first_bare = m["bare"]
        self._nonce = m["nonce"] + self._new_nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first

    def _client_final(self, text: str) -> str:
        m = _CLIENT_FINAL.match(text)
        if m is None:
            raise _generic_failure(self.mechanism, f"Invalid SCRAM client final message format: {text!r}")
        if m["nonce"] != self._nonce:
            raise _generic_failure(self.mechanism, "Invalid client nonce in the final client message.")
        try:
            channel = base64.b64decode(m["channel"], validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            channel = None
        if channel != self._gs2_header:
            raise _generic_failure(self.mechanism, "channel binding does not repeat the client's gs2 header")
        try:
            proof = base64.b64decode(m["proof"], validate=True)
        except ValueError:
            raise _generic_failure(self.mechanism, "client proof is not base64") from None
        cred = self._credential
        assert cred is not None  # set by the client-first step (the table guarantees the order)
        auth_message = f"{self._client_first_bare},{self._server_first},{m['without_proof']}".encode()
        signature = _hmac(self._hash, cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslAuthenticationError("Authentication failed: Invalid user credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), cred.stored_key):
            raise SaslAuthenticationError("Authentication failed: Invalid user credentials",
                                          f"wrong password for {self._username!r}")
        return "v=" + base64.b64encode(_hmac(self._hash, cred.server_key, auth_message)).decode()


# --- the broker's SASL settings ---------------------------------------------------------------


class SaslAuthority(Subsystem):
    """Enabled mechanisms and users; makes one server per exchange.

    SCRAM credentials come from the cluster's credential store (``ScramCredentialStore``:
    the configured users' derived ones, or what AlterUserScramCredentials stored).
    """

    def __init__(self, config: SaslConfig, rng: Rng, credentials: Callable[[str, str], ScramCredential | None]) -> None:
        self.config = config
        self.rng = rng
        self._credentials = credentials

    @property
    def mechanisms(self) -> list[str]:
        return list(self.config.mechanisms)

    def enabled(self, mechanism: str) -> bool:
        return mechanism in self.config.mechanisms

    def nonce(self) -> str:
        n = self.rng.getrandbits(_NONCE_BITS)
        out = []
        while n:
            n, d = divmod(n, 36)
            out.append(_DIGITS[d])
        return "".join(reversed(out)) or "0"

    def credential(self, mechanism: str, username: str) -> ScramCredential | None:
        """The user's stored SCRAM credential for ``mechanism``, or None."""
        return self._credentials(mechanism, username)

    def server(self, mechanism: str) -> SaslServer:
        """A new server for one exchange; the mechanism must be enabled."""
        if mechanism == "PLAIN":
            return PlainServer(self.config.users)
        return ScramServer(mechanism, lambda user: self.credential(mechanism, user), self.nonce)


@dataclass(slots=True)
class SaslExchange:
    """A connection's SASL exchange after the handshake (kept in ``ConnInfo.sasl_state``).

    ``raw_tokens``: a v0 handshake, after which tokens travel as bare size-prefixed frames
    instead of SaslAuthenticate requests (KIP-152 kept that flow for old clients).
    """

    server: SaslServer
    raw_tokens: bool = False
    failed: bool = False


log = logging.getLogger("kwire.broker")


def evaluate_token(conn: ConnInfo, ex: SaslExchange, token: bytes) -> bytes:
    """Feed one client token (SaslAuthenticate's, or a bare v0 frame); on completion the
    connection is authenticated as the mechanism's user. A failure marks the exchange failed."""
    try:
        out = ex.server.evaluate(token)
    except SaslAuthenticationError as exc:
        ex.failed = True
        log.info("connection %d: SASL %s authentication failed: %s", conn.conn_id, ex.server.mechanism, exc.reason)
        raise
    if ex.server.complete:
        conn.authenticated = True
        conn.principal = f"User:{ex.server.username}"
    return out

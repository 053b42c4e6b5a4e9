"""SASL server mechanisms, sans-I/O: PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and
OAUTHBEARER (RFC 7628) with Kafka's unsecured JWS validation.

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
* OAUTHBEARER is Kafka's OAuthBearerSaslServer with OAuthBearerUnsecuredValidatorCallbackHandler:
  an unsigned JWS (``alg`` none), the principal from ``sub``, ``exp`` required, ``iat``
  optional, both checked against the broker clock with the allowable clock skew, an optional
  required scope. A token that fails is answered with ``{"status":"invalid_token"}`` as a
  server token; the client's ``%x01`` after it gets SASL_AUTHENTICATION_FAILED with that text
  (SEC-8..10). The token's ``exp`` bounds the KIP-368 session (``lifetime_ms``).
* Messages follow Kafka's PlainSaslServer and ScramSaslServer: the server's own reason is
  kept in ``reason`` for logs, and the client sees Kafka's text (Kafka hides why SCRAM failed).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Protocol

from kwire.broker.config import SaslConfig
from kwire.broker.core.cluster import Rng
from kwire.broker.core.context import Subsystem
from kwire.errors import KafkaProtocolError
from kwire.protocol.error_codes import ErrorCode

__all__ = [
    "evaluate_token",
    "SaslAuthenticationError",
    "SaslServer",
    "PlainServer",
    "ScramServer",
    "OAuthBearerServer",
    "unsecured_jws",
    "ScramState",
    "ScramCredential",
    "SaslAuthority",
    "SaslExchange",
    "SCRAM_MECHANISMS",
    "SUPPORTED_MECHANISMS",
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
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
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


# --- OAUTHBEARER ---------------------------------------------------------------------------------

# OAuthBearerClientInitialResponse at d79bd502: gs2 header, then \x01-separated key=value pairs
_SEP = "\x01"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*"
_OAUTH_INITIAL = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01", re.DOTALL)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_OAUTH_OPTIONS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class _IllegalToken(Exception):
    """OAuthBearerIllegalTokenException: the token fails validation (``scope`` set for a scope failure)."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope


def _b64url_json(part: str) -> dict[str, object]:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise _IllegalToken("malformed Base64 URL encoded value") from None
    try:
        out = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _IllegalToken("malformed JSON") from None
    if not isinstance(out, dict):
        raise _IllegalToken("malformed JSON")
    return out


def unsecured_jws(claims: dict[str, object], header: dict[str, object] | None = None) -> str:
    """An unsecured JWS (``alg`` none) carrying ``claims``, as a test's client would make one."""
    def enc(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{enc(header if header is not None else {'alg': 'none'})}.{enc(claims)}."


def _number(claims: dict[str, object], name: str) -> float | None:
    v = claims.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _IllegalToken(f"The '{name}' claim was not of type Number: {v}")
    return float(v)


@dataclass(slots=True, frozen=True)
class UnsecuredValidatorOptions:
    """OAuthBearerUnsecuredValidatorCallbackHandler's JAAS options (unsecuredValidator*)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    @classmethod
    def from_jaas(cls, jaas: str | None) -> UnsecuredValidatorOptions:
        """The options of a ``sasl.jaas.config`` value (``OAuthBearerLoginModule required k="v" ...;``)."""
        opts = dict(_OAUTH_OPTIONS.findall(jaas or ""))
        skew = opts.get("unsecuredValidatorAllowableClockSkewMs", "").strip()
        try:
            skew_ms = int(skew) if skew else 0
        except ValueError:
            raise KafkaProtocolError(f"unsecuredValidatorAllowableClockSkewMs: {skew!r} is not a number") from None
        if skew_ms < 0:
            raise KafkaProtocolError(f"Allowable clock skew millis must not be negative: {skew}")
        return cls(opts.get("unsecuredValidatorPrincipalClaimName", "").strip() or "sub",
                   opts.get("unsecuredValidatorScopeClaimName", "").strip() or "scope",
                   tuple(opts.get("unsecuredValidatorRequiredScope", "").split()), skew_ms)


@dataclass(slots=True, frozen=True)
class ValidToken:
    principal: str
    lifetime_ms: int  # exp, in ms since the epoch
    scope: frozenset[str]


def validate_unsecured_jws(token: str, options: UnsecuredValidatorOptions, now_ms: int) -> ValidToken:
    """OAuthBearerUnsecuredJws + OAuthBearerValidationUtils at d79bd502; raises ``_IllegalToken``."""
    if ".." in token:
        raise _IllegalToken("Malformed compact serialization contains '..'")
    splits = token.split(".")
    if token.endswith("."):
        splits = token[:-1].split(".") + [""]
    if len(splits) != 3:
        raise _IllegalToken(f"Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
                            f"values: {len(splits)}")
    header = _b64url_json(splits[0])
    claims = _b64url_json(splits[1])
    if header.get("alg") != "none":
        raise _IllegalToken("Unsecured JWS must have 'none' for an algorithm")
    if splits[2]:
        raise _IllegalToken("Unsecured JWS must not contain a digital signature")
    sc = claims.get(options.scope_claim)
    if isinstance(sc, str):
        scope = frozenset([sc.strip()]) if sc.strip() else frozenset()
    elif isinstance(sc, list):
        scope = frozenset(str(x).strip() for x in sc if str(x).strip())
    elif sc is None:
        scope = frozenset()
    else:
        raise _IllegalToken(f"The '{options.scope_claim}' claim was not of type List: {sc}")
    exp = _number(claims, "exp")
    if exp is None:
        raise _IllegalToken("No expiration time in JWT")
    principal = claims.get(options.principal_claim)
    if principal is None or (isinstance(principal, str) and not principal.strip()):
        raise _IllegalToken(f"No principal name in JWT claim: {options.principal_claim}")
    if not isinstance(principal, str):
        raise _IllegalToken(f"The {options.principal_claim} claim had the incorrect type: {type(principal).__name__}")
    skew = options.allowable_clock_skew_ms
    iat = _number(claims, "iat")
    if iat is not None and 1000 * iat > now_ms + skew:
        raise _IllegalToken(f"The Issued At value ({iat:f} seconds) was after the indicated time ({now_ms} ms) plus "
                            f"allowable clock skew ({skew} ms)")
    if now_ms - skew >= 1000 * exp:
        raise _IllegalToken(f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was on or "
                            f"after the Expiration Time value ({exp:f} seconds)")
    if iat is not None and exp <= iat:
        raise _IllegalToken(f"The Expiration Time time ({exp:f} seconds) was not after the Issued At time "
                            f"({iat:f} seconds)")
    for need in options.required_scope:
        if need not in scope:
            raise _IllegalToken(f"The provided scope ({sorted(scope)}) was missing a required scope ({need}).  All "
                                f"required scope elements: {list(options.required_scope)}",
                                "[" + ", ".join(options.required_scope) + "]")
    return ValidToken(principal, int(exp * 1000), scope)


class OAuthBearerServer:
    """OAuthBearerSaslServer with the unsecured validator: one client token; a failed token is
    answered with the RFC 7628 error JSON, and the client's %x01 then fails the exchange."""

    mechanism = "OAUTHBEARER"

    def __init__(self, options: UnsecuredValidatorOptions, now_ms: Callable[[], int]) -> None:
        self._options = options
        self._now_ms = now_ms
        self._complete = False
        self._username: str | None = None
        self._error: str | None = None
        self.lifetime_ms: int | None = None

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def username(self) -> str | None:
        return self._username

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslAuthenticationError(self._error, f"the client gave up after {self._error}")
        self._error = None
        if self._complete:
            raise _generic_failure(self.mechanism, "OAUTHBEARER takes one client token")
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise _generic_failure(self.mechanism, "Invalid OAUTHBEARER client first message") from None
        m = _OAUTH_INITIAL.fullmatch(text)
        if m is None:
            raise _generic_failure(self.mechanism, "Invalid OAUTHBEARER client first message")
        props = dict(kv.partition("=")[::2] for kv in m["kvpairs"].split(_SEP) if kv)
        auth = props.pop("auth", None)
        if auth is None:
            raise _generic_failure(self.mechanism, "Invalid OAUTHBEARER client first message: 'auth' not specified")
        am = _AUTH.fullmatch(auth)
        if am is None:
            raise _generic_failure(self.mechanism, "Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if am["scheme"].lower() != "bearer":
            raise _generic_failure(self.mechanism, f"Invalid scheme in OAUTHBEARER client first message: {am['scheme']}")
        try:
            valid = validate_unsecured_jws(am["token"], self._options, self._now_ms())
        except _IllegalToken as exc:
            # OAuthBearerSaslServer.jsonErrorResponse: the status, and the scope for a scope failure
            status = "insufficient_scope" if exc.scope is not None else "invalid_token"
            self._error = f'{{"status":"{status}"' + (f', "scope":"{exc.scope}"' if exc.scope else "") + "}"
            log.info("OAUTHBEARER token refused: %s", exc)
            return self._error.encode("utf-8")
        authzid = m["authzid"] or ""
        if authzid and authzid != valid.principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different from "
                f"the token's principal name ({valid.principal})")
        self._username = valid.principal
        self.lifetime_ms = valid.lifetime_ms
        self._complete = True
        return b""


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

    def server(self, mechanism: str, *, now_ms: Callable[[], int] | None = None,
               jaas: str | None = None) -> SaslServer:
        """A new server for one exchange; the mechanism must be enabled. ``now_ms`` is the broker
        clock and ``jaas`` the listener's sasl.jaas.config (OAUTHBEARER's validator options)."""
        if mechanism == "PLAIN":
            return PlainServer(self.config.users)
        if mechanism == "OAUTHBEARER":
            return OAuthBearerServer(UnsecuredValidatorOptions.from_jaas(jaas), now_ms or (lambda: 0))
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
    session_lifetime_ms: int = 0  # KIP-368, once complete
    # a re-authentication that asked for another mechanism: its SaslAuthenticate fails with this
    bad_mechanism: str | None = None


log = logging.getLogger("kwire.broker")


class SaslConn(Protocol):
    """The connection state an exchange reads and completes (``broker_core.ConnInfo`` has it):
    named here so that SASL sits below the core, not beside it."""

    conn_id: int
    authenticated: bool
    principal: str
    session_expires_ms: int | None
    reauth_of: tuple[str, str] | None


def evaluate_token(conn: SaslConn, ex: SaslExchange, token: bytes, *, now_ms: int = 0, max_reauth_ms: int = 0) -> bytes:
    """Feed one client token (SaslAuthenticate's, or a bare v0 frame); on completion the
    connection is authenticated as the mechanism's user. A failure marks the exchange failed.

    On completion ``ex.session_lifetime_ms`` is KIP-368's session lifetime
    (SaslServerAuthenticator.ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs: the
    smaller of ``max_reauth_ms`` when positive and the credential's remaining lifetime, 0 when
    neither applies) and the connection's session expires that long after ``now_ms`` (SEC-11).
    A re-authentication must keep the principal (SEC-13)."""
    try:
        out = ex.server.evaluate(token)
        if ex.server.complete and conn.reauth_of is not None and conn.reauth_of[1] != f"User:{ex.server.username}":
            before = conn.reauth_of[1].replace(":", ".", 1)
            raise SaslAuthenticationError(f"Cannot change principals during re-authentication from {before}: "
                                          f"User.{ex.server.username}")
    except SaslAuthenticationError as exc:
        ex.failed = True
        log.info("connection %d: SASL %s %s failed: %s", conn.conn_id, ex.server.mechanism,
                 "re-authentication" if conn.reauth_of else "authentication", exc.reason)
        raise
    if ex.server.complete:
        conn.authenticated = True
        conn.principal = f"User:{ex.server.username}"
        conn.reauth_of = None
        credential_ms: int | None = getattr(ex.server, "lifetime_ms", None)
        lifetime = 0
        if credential_ms is not None or max_reauth_ms > 0:
            if credential_ms is None:
                lifetime = max(0, max_reauth_ms)
            elif max_reauth_ms <= 0:
                lifetime = max(0, credential_ms - now_ms)
            else:
                lifetime = max(0, min(credential_ms - now_ms, max_reauth_ms))
            conn.session_expires_ms = now_ms + lifetime
        else:
            conn.session_expires_ms = None
        ex.session_lifetime_ms = lifetime
    return out

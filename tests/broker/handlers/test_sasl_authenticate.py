"""SaslAuthenticate through the core: PLAIN and SCRAM exchanges, failures, states, the v0 bare-token flow."""

from __future__ import annotations

import base64
import re

import pytest

from kwire.broker.config import SaslConfig
from kwire.broker.core.sasl import client_proof, server_signature
from kwire.protocol import encode_request
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kwire.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.broker.helpers import ConnectionClosed, CoreClient, make_core

USERS = {"alice": "wonderland", "bob": "builder"}


def client(mechanism: str) -> CoreClient:
    core, _ = make_core(sasl=SaslConfig(users=USERS))
    c = CoreClient(core)
    assert c.send(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
    return c


def auth(c: CoreClient, token: bytes, version: int = 2) -> object:
    return c.send(SaslAuthenticateRequest(auth_bytes=token), version)


def auth_fails(c: CoreClient, token: bytes, version: int = 2) -> object:
    """The answer of a failed exchange, which comes with the close, 100 ms later (SEC-14)."""
    return c.send_auth_failure(SaslAuthenticateRequest(auth_bytes=token), version)


def metadata_works(c: CoreClient) -> bool:
    return c.send(MetadataRequest(topics=None), 12).error_code == 0


@pytest.mark.parametrize("version", [0, 1, 2])
def test_plain_success_authenticates_the_connection(version: int) -> None:
    c = client("PLAIN")
    resp = auth(c, b"\0alice\0wonderland", version)
    assert (resp.error_code, resp.auth_bytes) == (0, b"")  # type: ignore[attr-defined]
    if version >= 1:
        assert resp.session_lifetime_ms == 0  # type: ignore[attr-defined]
    assert c.conn.authenticated and c.conn.principal == "User:alice"
    assert metadata_works(c)


@pytest.mark.parametrize(("token", "message"), [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0nobody\0x", "Authentication failed: Invalid username or password"),
    (b"\0\0x", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"bob\0alice\0wonderland",
     "Authentication failed: Client requested an authorization id that is different from username"),
    (b"alice-only", "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"),
])
def test_plain_failures_are_sasl_authentication_failed_with_kafkas_message(token: bytes, message: str) -> None:
    c = client("PLAIN")
    resp = auth_fails(c, token)  # answered and closed after connection.failed.authentication.delay.ms
    assert (resp.error_code, resp.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, message)  # type: ignore[attr-defined]
    assert not c.conn.authenticated


def test_plain_authzid_equal_to_the_user_is_accepted() -> None:
    c = client("PLAIN")
    assert auth(c, b"alice\0alice\0wonderland").error_code == 0  # type: ignore[attr-defined]


def scram_exchange(c: CoreClient, mechanism: str, user: str, password: str, *,
                   tamper_nonce: bool = False, fails: bool = False) -> tuple[object, bytes]:
    first_bare = f"n={user},r=clientnonce123"
    resp = auth(c, ("n,," + first_bare).encode())
    assert resp.error_code == 0  # type: ignore[attr-defined]
    server_first = resp.auth_bytes.decode()  # type: ignore[attr-defined]
    m = re.fullmatch(r"r=(?P<r>[^,]+),s=(?P<s>[^,]+),i=(?P<i>\d+)", server_first)
    assert m is not None and m["r"].startswith("clientnonce123") and len(m["r"]) > len("clientnonce123")
    nonce = m["r"] + ("x" if tamper_nonce else "")
    without_proof = f"c=biws,r={nonce}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    proof = client_proof(mechanism, password, base64.b64decode(m["s"]), int(m["i"]), auth_message)
    final_token = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
    final = auth_fails(c, final_token) if fails else auth(c, final_token)
    return final, auth_message


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_full_exchange_with_server_final_signature(mechanism: str) -> None:
    c = client(mechanism)
    final, auth_message = scram_exchange(c, mechanism, "bob", "builder")
    assert final.error_code == 0  # type: ignore[attr-defined]
    cred = c.core.subsystems.sasl.credential(mechanism, "bob")
    expected = "v=" + base64.b64encode(server_signature(mechanism, cred.server_key, auth_message)).decode()
    assert final.auth_bytes.decode() == expected  # type: ignore[attr-defined]
    assert c.conn.authenticated and c.conn.principal == "User:bob"
    assert metadata_works(c)


def test_scram_wrong_password_fails_at_the_final_message() -> None:
    c = client("SCRAM-SHA-256")
    final, _ = scram_exchange(c, "SCRAM-SHA-256", "bob", "wrong", fails=True)
    assert (final.error_code, final.error_message) == (  # type: ignore[attr-defined]
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid user credentials")
    assert not c.conn.authenticated


def test_scram_unknown_user_fails_at_the_first_message() -> None:
    c = client("SCRAM-SHA-512")
    resp = auth_fails(c, b"n,,n=mallory,r=abc")
    assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED  # type: ignore[attr-defined]
    assert "SCRAM-SHA-512" in resp.error_message  # type: ignore[attr-defined]


def test_scram_mismatched_nonce_fails() -> None:
    c = client("SCRAM-SHA-256")
    final, _ = scram_exchange(c, "SCRAM-SHA-256", "bob", "builder", tamper_nonce=True, fails=True)
    assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED  # type: ignore[attr-defined]
    assert not c.conn.authenticated


def test_scram_replayed_client_final_on_a_new_connection_fails() -> None:
    """A captured client-final does not authenticate another connection: its server nonce differs."""
    core, _ = make_core(sasl=SaslConfig(users=USERS))
    first = CoreClient(core)
    first.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
    first_bare = "n=bob,r=fixednonce"
    server_first = auth(first, ("n,," + first_bare).encode()).auth_bytes.decode()  # type: ignore[attr-defined]
    m = re.fullmatch(r"r=(?P<r>[^,]+),s=(?P<s>[^,]+),i=(?P<i>\d+)", server_first)
    assert m is not None
    without_proof = f"c=biws,r={m['r']}"
    proof = client_proof("SCRAM-SHA-256", "builder", base64.b64decode(m["s"]), int(m["i"]),
                         f"{first_bare},{server_first},{without_proof}".encode())
    final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
    assert auth(first, final).error_code == 0  # type: ignore[attr-defined]
    second = CoreClient(core)
    second.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
    assert auth(second, ("n,," + first_bare).encode()).error_code == 0  # type: ignore[attr-defined]
    resp = auth_fails(second, final)
    assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED  # type: ignore[attr-defined]
    assert not second.conn.authenticated


def test_authenticate_before_handshake_closes_the_connection() -> None:
    core, _ = make_core(sasl=SaslConfig(users=USERS))
    c = CoreClient(core)
    assert auth(c, b"\0alice\0wonderland") is None
    with pytest.raises(ConnectionClosed):
        c.deferred()


def test_authenticate_after_success_or_without_sasl_is_illegal_sasl_state() -> None:
    c = client("PLAIN")
    auth(c, b"\0alice\0wonderland")
    assert auth(c, b"\0alice\0wonderland").error_code == ErrorCode.ILLEGAL_SASL_STATE  # type: ignore[attr-defined]
    plain = CoreClient(make_core()[0])
    assert auth(plain, b"x").error_code == ErrorCode.ILLEGAL_SASL_STATE  # type: ignore[attr-defined]


def test_v0_handshake_then_bare_plain_token_gets_an_empty_bare_answer() -> None:
    core, _ = make_core(sasl=SaslConfig(users=USERS))
    c = CoreClient(core)
    assert c.send(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
    out = core.handle(c.conn, b"\0alice\0wonderland")
    assert (out.kind, out.data) == ("send", b"")
    assert c.conn.authenticated
    assert metadata_works(c)


def test_v0_bare_scram_tokens_and_a_bad_token_closes() -> None:
    core, _ = make_core(sasl=SaslConfig(users=USERS))
    c = CoreClient(core)
    c.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 0)
    out = core.handle(c.conn, b"n,,n=alice,r=n0nce")
    assert out.kind == "send" and out.data.startswith(b"r=n0nce")
    out = core.handle(c.conn, b"c=biws,r=n0nce-wrong,p=AAAA")
    assert out.kind == "deferred" and not c.conn.authenticated  # no answer; the close waits (SEC-14)
    core.advance(99)
    assert core.take_outbox() == []
    core.advance(1)
    assert core.take_outbox() == [(c.conn.conn_id, None)]


def test_v0_flow_rejects_a_sasl_authenticate_frame() -> None:
    core, _ = make_core(sasl=SaslConfig(users=USERS))
    c = CoreClient(core)
    c.send(SaslHandshakeRequest(mechanism="PLAIN"), 0)
    # After a v0 handshake the frame is taken as a bare token: a Kafka header is not a PLAIN token.
    payload = encode_request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0wonderland"), 1, correlation_id=9,
                             size_prefix=False)
    assert core.handle(c.conn, payload).kind == "deferred"  # a failed PLAIN token: closed 100 ms later
    core.advance(100)
    assert core.take_outbox() == [(c.conn.conn_id, None)]

"""OAUTHBEARER (unsecured JWS) and KIP-368 re-authentication through the core, on the manual clock.

Upstream: OAuthBearerSaslServer, OAuthBearerUnsecuredValidatorCallbackHandler, OAuthBearerUnsecuredJws,
OAuthBearerValidationUtils, SaslServerAuthenticator.ReauthInfo, KafkaChannel.maybeBeginServerReauthentication,
SocketServer.Processor.processCompletedReceives (d79bd502).
"""

from __future__ import annotations

import pytest

from kwire.broker.config import SaslConfig
from kwire.broker.core.sasl import unsecured_jws
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kwire.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.broker.helpers import START_MS, ConnectionClosed, CoreClient, make_core

USERS = {"alice": "wonderland", "bob": "builder"}
NOW_S = START_MS // 1000


def core_with(settings: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return make_core(sasl=SaslConfig(users=USERS), settings=settings or {})


def oauth_token(claims: dict[str, object], header: dict[str, object] | None = None, authzid: str = "") -> bytes:
    jws = unsecured_jws(claims, header)
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {jws}\x01\x01".encode()


def login(c: CoreClient, mechanism: str, token: bytes, version: int = 2):  # type: ignore[no-untyped-def]
    assert c.send(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
    return c.send(SaslAuthenticateRequest(auth_bytes=token), version)


def login_fails(c: CoreClient, mechanism: str, token: bytes, version: int = 2):  # type: ignore[no-untyped-def]
    """A login whose exchange fails: answered with the close after the delay (SEC-14)."""
    assert c.send(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
    return c.send_auth_failure(SaslAuthenticateRequest(auth_bytes=token), version)


def metadata(c: CoreClient):  # type: ignore[no-untyped-def]
    return c.send(MetadataRequest(topics=None), 12)


# --- OAUTHBEARER ----------------------------------------------------------------------------


@pytest.mark.rule("SEC-8")
def test_oauthbearer_unsecured_token_logs_in_as_sub_with_its_lifetime() -> None:
    """OAuthBearerSaslServer: the principal is ``sub``; the session lifetime is the token's exp (ReauthInfo)."""
    core, _ = core_with()
    c = CoreClient(core)
    resp = login(c, "OAUTHBEARER", oauth_token({"sub": "alice", "iat": NOW_S, "exp": NOW_S + 60}))
    assert (resp.error_code, resp.auth_bytes, resp.session_lifetime_ms) == (0, b"", 60_000)
    assert c.conn.principal == "User:alice" and metadata(c).error_code == 0


@pytest.mark.rule("SEC-9")
@pytest.mark.parametrize(("claims", "header"), [
    ({"sub": "alice", "exp": NOW_S - 1}, None),  # expired
    ({"exp": NOW_S + 60}, None),  # no sub
    ({"sub": "alice"}, None),  # no exp
    ({"sub": "alice", "exp": NOW_S + 60, "iat": NOW_S + 30}, None),  # issued in the future
    ({"sub": "alice", "exp": NOW_S + 60}, {"alg": "HS256"}),  # not unsecured
    ({"sub": "alice", "exp": "soon"}, None),  # exp not a number
])
def test_bad_tokens_get_invalid_token_then_fail_with_it(claims: dict[str, object],
                                                         header: dict[str, object] | None) -> None:
    """OAuthBearerSaslServer.process: a token the validator refuses is answered (error NONE) with
    {"status":"invalid_token"}; the client's %x01 then fails the exchange with that message."""
    core, _ = core_with()
    c = CoreClient(core)
    first = login(c, "OAUTHBEARER", oauth_token(claims, header))
    assert (first.error_code, first.auth_bytes) == (0, b'{"status":"invalid_token"}')
    assert not c.conn.authenticated
    second = c.send_auth_failure(SaslAuthenticateRequest(auth_bytes=b"\x01"), 2)
    assert (second.error_code, second.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                         '{"status":"invalid_token"}')


@pytest.mark.rule("SEC-9")
def test_malformed_client_message_is_the_generic_failure() -> None:
    """OAuthBearerClientInitialResponse throws a SaslException: Kafka hides it behind the generic text."""
    core, _ = core_with()
    c = CoreClient(core)
    resp = login_fails(c, "OAUTHBEARER", b"n,,\x01auth=Basic abc\x01\x01")
    assert (resp.error_code, resp.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER")


@pytest.mark.rule("SEC-10")
def test_validator_options_scope_and_clock_skew_from_the_jaas_config() -> None:
    """unsecuredValidatorRequiredScope → insufficient_scope with the scope; the allowable clock skew
    lets a just-expired token in (OAuthBearerValidationUtils.validateExpirationTime)."""
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredValidatorRequiredScope="write" unsecuredValidatorAllowableClockSkewMs="5000";')
    core, _ = core_with({"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": jaas})
    c = CoreClient(core)
    first = login(c, "OAUTHBEARER", oauth_token({"sub": "alice", "exp": NOW_S + 60, "scope": "read"}))
    assert first.auth_bytes == b'{"status":"insufficient_scope", "scope":"[write]"}'
    c2 = CoreClient(core)
    ok = login(c2, "OAUTHBEARER", oauth_token({"sub": "bob", "exp": NOW_S - 2, "scope": ["read", "write"]}))
    assert (ok.error_code, ok.auth_bytes) == (0, b"") and c2.conn.principal == "User:bob"
    assert ok.session_lifetime_ms == 0  # already past exp: zeroIfNegative


def test_authzid_other_than_sub_is_refused() -> None:
    core, _ = core_with()
    c = CoreClient(core)
    resp = login_fails(c, "OAUTHBEARER", oauth_token({"sub": "alice", "exp": NOW_S + 60}, authzid="bob"))
    assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert resp.error_message == ("Authentication failed: Client requested an authorization id (bob) that is "
                                  "different from the token's principal name (alice)")


# --- KIP-368 ----------------------------------------------------------------------------------


@pytest.mark.rule("SEC-11")
@pytest.mark.parametrize(("settings", "exp_in_s", "want"), [
    ({}, None, 0),
    ({"connections.max.reauth.ms": "30000"}, None, 30_000),
    ({"listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "7000",
      "connections.max.reauth.ms": "30000"}, None, 7_000),
    ({"connections.max.reauth.ms": "30000"}, 10, 10_000),
    ({"connections.max.reauth.ms": "30000"}, 100, 30_000),
])
def test_session_lifetime_is_the_smaller_of_max_reauth_and_the_credential(
        settings: dict[str, str], exp_in_s: int | None, want: int) -> None:
    """ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs."""
    core, _ = core_with(settings)
    c = CoreClient(core)
    if exp_in_s is None:
        resp = login(c, "PLAIN", b"\0alice\0wonderland")
    else:
        resp = login(c, "OAUTHBEARER", oauth_token({"sub": "alice", "exp": NOW_S + exp_in_s}))
    assert (resp.error_code, resp.session_lifetime_ms) == (0, want)


@pytest.mark.rule("SEC-12")
def test_a_request_after_the_session_expired_closes_the_connection() -> None:
    """SocketServer: serverAuthenticationSessionExpired (now - expiry > 0) closes the channel at its next request."""
    core, clock = core_with({"connections.max.reauth.ms": "10000"})
    c = CoreClient(core)
    login(c, "PLAIN", b"\0alice\0wonderland")
    clock.advance(10_000)
    assert metadata(c).error_code == 0  # exactly at the expiry: not yet past it
    clock.advance(1)
    with pytest.raises(ConnectionClosed, match="expired"):
        c.send(ApiVersionsRequest(), 3)


@pytest.mark.rule("SEC-13")
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_reauthentication_keeps_the_connection_across_many_lifetimes(mechanism: str) -> None:
    """KafkaChannel.maybeBeginServerReauthentication: a SaslHandshake on an authenticated connection
    with a session lifetime starts a new exchange; each success grants a new lifetime."""
    from tests.broker.handlers.test_sasl_authenticate import scram_exchange

    core, clock = core_with({"connections.max.reauth.ms": "5000"})
    c = CoreClient(core)
    for _ in range(5):
        if mechanism == "PLAIN":
            resp = login(c, "PLAIN", b"\0alice\0wonderland")
            assert (resp.error_code, resp.session_lifetime_ms) == (0, 5000)
        else:
            assert c.send(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
            final, _ = scram_exchange(c, mechanism, "alice", USERS["alice"])
            assert (final.error_code, final.session_lifetime_ms) == (0, 5000)  # type: ignore[attr-defined]
        assert c.conn.authenticated and c.conn.session_expires_ms == clock.now_ms() + 5000
        clock.advance(4_000)
        assert metadata(c).error_code == 0
    clock.advance(1_001)
    with pytest.raises(ConnectionClosed):
        metadata(c)


@pytest.mark.rule("SEC-13")
def test_reauthentication_may_not_change_the_principal_or_the_mechanism() -> None:
    """ReauthInfo.ensurePrincipalUnchanged and saslMechanismUnchanged (REAUTH_BAD_MECHANISM: no answer)."""
    core, clock = core_with({"connections.max.reauth.ms": "5000"})
    c = CoreClient(core)
    login(c, "PLAIN", b"\0alice\0wonderland")
    clock.advance(2000)
    resp = login_fails(c, "PLAIN", b"\0bob\0builder")
    assert (resp.error_code, resp.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Cannot change principals during re-authentication from User.alice: "
                                              "User.bob")
    c2 = CoreClient(core)
    login(c2, "PLAIN", b"\0alice\0wonderland")
    clock.advance(2000)
    assert c2.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1).error_code == 0
    core.recording = []
    assert c2.send_auth_failure(SaslAuthenticateRequest(auth_bytes=b"n,,n=alice,r=abc"), 2) is None  # no answer
    assert core.recording[-1].closed == ("SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for "
                                         "re-authentication of mechanism 'PLAIN'")


@pytest.mark.rule("SEC-13")
def test_no_reauthentication_without_a_lifetime_or_within_a_second() -> None:
    """Without a session expiry, or less than a second after the last re-authentication began, the
    handshake is an ordinary request on an authenticated connection: ILLEGAL_SASL_STATE (KafkaApis)."""
    core, clock = core_with()
    c = CoreClient(core)
    login(c, "PLAIN", b"\0alice\0wonderland")
    assert c.send(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.ILLEGAL_SASL_STATE
    core2, clock2 = core_with({"connections.max.reauth.ms": "60000"})
    c2 = CoreClient(core2)
    login(c2, "PLAIN", b"\0alice\0wonderland")
    login(c2, "PLAIN", b"\0alice\0wonderland")  # the first re-authentication
    clock2.advance(999)
    assert c2.send(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.ILLEGAL_SASL_STATE
    clock2.advance(1)
    assert login(c2, "PLAIN", b"\0alice\0wonderland").error_code == 0


@pytest.mark.rule("SEC-13")
def test_other_requests_during_reauthentication_close_the_connection() -> None:
    """SaslServerAuthenticator.handleSaslToken: after the re-authentication's handshake only
    SaslAuthenticate; anything else is IllegalSaslState, answered and closed after the delay (SEC-14)."""
    core, _ = core_with({"connections.max.reauth.ms": "5000"})
    c = CoreClient(core)
    login(c, "PLAIN", b"\0alice\0wonderland")
    assert c.send(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    topic = MetadataRequest.MetadataRequestTopic(name="t")
    resp = c.send_auth_failure(MetadataRequest(topics=[topic]), 12)
    assert resp.topics[0].error_code == ErrorCode.ILLEGAL_SASL_STATE

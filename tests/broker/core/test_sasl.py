"""SASL mechanisms without a broker: RFC 7677 vectors, the SCRAM table, PLAIN, credentials from the RNG."""

from __future__ import annotations

import base64
import random

import pytest

from kwire.broker.config import SaslConfig
from kwire.broker.core.sasl import (
    MIN_SCRAM_ITERATIONS,
    PlainServer,
    SaslAuthenticationError,
    SaslAuthority,
    ScramServer,
    ScramState,
    client_proof,
    scram_credential,
    server_signature,
)
from kwire.broker.core.scram_credentials import ScramCredentialStore
from kwire.protocol.error_codes import ErrorCode

# RFC 7677 §3: SCRAM-SHA-256, user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
RFC_AUTH_MESSAGE = (b"n=user,r=rOprNGfwEbeRWgbNEkqO,"
                    + RFC_SERVER_FIRST + b",c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")


def rfc_server(password: str = "pencil") -> ScramServer:
    cred = scram_credential("SCRAM-SHA-256", password, RFC_SALT, 4096)
    return ScramServer("SCRAM-SHA-256", lambda u: cred if u == "user" else None, lambda: RFC_SERVER_NONCE)


def test_rfc7677_client_proof_and_server_signature() -> None:
    proof = client_proof("SCRAM-SHA-256", "pencil", RFC_SALT, 4096, RFC_AUTH_MESSAGE)
    assert base64.b64encode(proof) == b"dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    cred = scram_credential("SCRAM-SHA-256", "pencil", RFC_SALT, 4096)
    assert b"v=" + base64.b64encode(server_signature("SCRAM-SHA-256", cred.server_key, RFC_AUTH_MESSAGE)) == \
        RFC_SERVER_FINAL


def test_rfc7677_exchange_byte_for_byte() -> None:
    s = rfc_server()
    assert s.state is ScramState.RECEIVE_CLIENT_FIRST
    assert s.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert s.state is ScramState.RECEIVE_CLIENT_FINAL and not s.complete and s.username is None
    assert s.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert s.complete and s.username == "user"


def test_wrong_password_fails_and_the_server_stays_failed() -> None:
    s = rfc_server(password="not-pencil")
    s.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationError) as info:
        s.evaluate(RFC_CLIENT_FINAL)
    assert info.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert info.value.message == "Authentication failed: Invalid user credentials"
    assert s.state is ScramState.FAILED
    with pytest.raises(SaslAuthenticationError):
        s.evaluate(RFC_CLIENT_FINAL)


def test_unknown_user_fails_on_client_first() -> None:
    s = rfc_server()
    with pytest.raises(SaslAuthenticationError, match="SCRAM-SHA-256") as info:
        s.evaluate(b"n,,n=someone,r=abc")
    assert "someone" in info.value.reason
    assert s.state is ScramState.FAILED


@pytest.mark.parametrize("final", [
    RFC_CLIENT_FINAL.replace(b"hNlF$k0,", b"hNlF$k1,"),             # mismatched (replayed) nonce
    RFC_CLIENT_FINAL.replace(b"c=biws", b"c=eSws"),                  # channel binding "y,," not what was sent
    b"c=biws,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",        # no nonce
    b"garbage",
])
def test_bad_client_final_fails(final: bytes) -> None:
    s = rfc_server()
    s.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationError):
        s.evaluate(final)
    assert not s.complete


@pytest.mark.parametrize("first", [
    b"p=tls-unique,,n=user,r=abc",   # channel binding required: no TLS here
    b"n,,n=user",                    # no nonce
    b"n,,n=us=er,r=abc",             # bad '=' escape
    b"n,,n=user,r=abc,tokenauth=true",  # delegation tokens
    b"\xff\xfe",
])
def test_bad_client_first_fails(first: bytes) -> None:
    with pytest.raises(SaslAuthenticationError):
        rfc_server().evaluate(first)


def test_saslname_escapes_are_decoded() -> None:
    cred = scram_credential("SCRAM-SHA-256", "pw", b"salt", 4096)
    seen = []

    def lookup(user: str) -> object:
        seen.append(user)
        return cred

    ScramServer("SCRAM-SHA-256", lookup, lambda: "n").evaluate(b"n,,n=a=2Cb=3Dc,r=x")  # type: ignore[arg-type]
    assert seen == ["a,b=c"]


def test_authzid_must_be_the_user() -> None:
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        rfc_server().evaluate(b"n,a=admin,n=user,r=abc")
    assert rfc_server().evaluate(b"n,a=user,n=user,r=abc").startswith(b"r=abc")


def test_message_after_completion_is_refused() -> None:
    s = rfc_server()
    s.evaluate(RFC_CLIENT_FIRST)
    s.evaluate(RFC_CLIENT_FINAL)
    with pytest.raises(SaslAuthenticationError):
        s.evaluate(RFC_CLIENT_FIRST)


def test_plain_server() -> None:
    s = PlainServer({"u": "p"})
    assert s.evaluate(b"\0u\0p") == b"" and s.complete and s.username == "u"
    with pytest.raises(SaslAuthenticationError):
        s.evaluate(b"\0u\0p")  # one token only
    bad = PlainServer({"u": "p"})
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        bad.evaluate(b"\0u\0q")
    assert not bad.complete


def _authority(config: SaslConfig, rng: random.Random) -> SaslAuthority:
    return SaslAuthority(config, rng, ScramCredentialStore(config, rng).get)


def test_authority_nonces_and_salts_come_from_the_seeded_rng() -> None:
    a = _authority(SaslConfig(users={"u": "p"}), random.Random(7))
    b = _authority(SaslConfig(users={"u": "p"}), random.Random(7))
    na, nb = [a.nonce(), a.nonce()], [b.nonce(), b.nonce()]
    assert na == nb and na[0] != na[1] and na[0].isalnum()
    ca = a.credential("SCRAM-SHA-512", "u")
    assert ca is not None and ca == b.credential("SCRAM-SHA-512", "u")
    assert a.credential("SCRAM-SHA-512", "u") is ca  # derived once
    assert ca.iterations == MIN_SCRAM_ITERATIONS and a.credential("SCRAM-SHA-512", "nobody") is None


def test_authority_enforces_the_minimum_iterations_and_makes_servers() -> None:
    a = _authority(SaslConfig(users={"u": "p"}, scram_iterations=10), random.Random(0))
    cred = a.credential("SCRAM-SHA-256", "u")
    assert cred is not None and cred.iterations == MIN_SCRAM_ITERATIONS
    assert isinstance(a.server("PLAIN"), PlainServer)
    assert isinstance(a.server("SCRAM-SHA-256"), ScramServer)
    assert a.enabled("SCRAM-SHA-512") and not a.enabled("GSSAPI")

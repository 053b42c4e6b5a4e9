"""DescribeUserScramCredentials / AlterUserScramCredentials through the core (KIP-554).

Relied on (Apache Kafka, read through the search tools): ``ScramControlManager.alterCredentials``
(one alteration per user per request, DUPLICATE_RESOURCE otherwise; validation messages;
4096..16384 iterations; deleting a missing credential is RESOURCE_NOT_FOUND), and
``ScramImage.describe`` (all users for a null or empty list; RESOURCE_NOT_FOUND and
DUPLICATE_RESOURCE messages).
"""

from __future__ import annotations

import base64
import hashlib
import random

from kwire.broker.config import SaslConfig
from kwire.broker.core.sasl import ScramServer, client_proof, scram_credential
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.alter_user_scram_credentials import AlterUserScramCredentialsRequest as Alter
from kwire.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest as Describe,
)
from tests.broker.helpers import CoreClient, make_core

SHA256, SHA512 = 1, 2


def _upsert(name: str, mechanism: int = SHA256, iterations: int = 4096, password: bytes = b"pw",
            salt: bytes = b"salty") -> Alter.ScramCredentialUpsertion:
    h = "sha256" if mechanism == SHA256 else "sha512"
    sp = hashlib.pbkdf2_hmac(h, password, salt, iterations) if mechanism in (SHA256, SHA512) else b"x"
    return Alter.ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=salt,
                                          salted_password=sp)


def _alter(c: CoreClient, upserts: list[Alter.ScramCredentialUpsertion] = (),  # type: ignore[assignment]
           deletes: list[tuple[str, int]] = ()) -> dict[str, tuple[int, str | None]]:  # type: ignore[assignment]
    resp = c.send(Alter(upsertions=list(upserts), deletions=[
        Alter.ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletes]), 0)
    return {r.user: (r.error_code, r.error_message) for r in resp.results}


def _describe(c: CoreClient, users: list[str] | None) -> dict[str, object]:
    req = Describe(users=None if users is None else [Describe.UserName(name=u) for u in users])
    resp = c.send(req, 0)
    assert resp.error_code == ErrorCode.NONE
    return {r.user: (r.error_code, r.error_message) if r.error_code else
            [(i.mechanism, i.iterations) for i in r.credential_infos] for r in resp.results}


def _client(**kw: object) -> CoreClient:
    core, _ = make_core(**kw)
    return _logged_in(CoreClient(core))


def _logged_in(c: CoreClient) -> CoreClient:
    """A connection past SASL (these tests are about the admin APIs, not the login)."""
    c.conn.authenticated = True
    return c


def test_configured_users_are_described_for_each_enabled_scram_mechanism() -> None:
    c = _client(sasl=SaslConfig(users={"u": "p", "v": "q"}, mechanisms=("PLAIN", "SCRAM-SHA-512")))
    assert _describe(c, None) == {"u": [(SHA512, 4096)], "v": [(SHA512, 4096)]}
    assert _describe(c, []) == _describe(c, None)
    assert _describe(_client(), None) == {}


def test_upsert_then_describe_and_delete() -> None:
    c = _client()
    assert _alter(c, [_upsert("carol", SHA256, 8192), _upsert("dave", SHA512)]) == {
        "carol": (0, None), "dave": (0, None)}
    assert _describe(c, ["carol", "dave"]) == {"carol": [(SHA256, 8192)], "dave": [(SHA512, 4096)]}
    assert _alter(c, deletes=[("carol", SHA256)]) == {"carol": (0, None)}
    assert _describe(c, ["carol"]) == {"carol": (ErrorCode.RESOURCE_NOT_FOUND,
                                                 "Attempt to describe a user credential that does not exist: carol")}


def test_describe_names_a_user_twice_as_duplicate_resource() -> None:
    c = _client()
    _alter(c, [_upsert("carol")])
    assert _describe(c, ["carol", "carol"]) == {"carol": (
        ErrorCode.DUPLICATE_RESOURCE,
        "Cannot describe SCRAM credentials for the same user twice in a single request: carol")}


def test_alter_validation_errors_and_nothing_changes_for_refused_users() -> None:
    c = _client()
    got = _alter(c, [_upsert(""), _upsert("m", mechanism=7), _upsert("few", iterations=4095),
                     _upsert("many", iterations=16385), _upsert("ok", iterations=16384)],
                 deletes=[("ghost", SHA256)])
    assert got == {
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "m": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "ghost": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "ok": (0, None),
    }
    assert set(_describe(c, None)) == {"ok"}


def test_a_user_altered_twice_in_one_request_is_duplicate_and_unchanged() -> None:
    c = _client()
    _alter(c, [_upsert("carol", iterations=5000)])
    got = _alter(c, [_upsert("carol", SHA256, 6000), _upsert("carol", SHA512, 7000)])
    assert got == {"carol": (ErrorCode.DUPLICATE_RESOURCE,
                             "A user credential cannot be altered twice in the same request")}
    got = _alter(c, [_upsert("carol", SHA512)], deletes=[("carol", SHA256)])
    assert got["carol"][0] == ErrorCode.DUPLICATE_RESOURCE
    assert _describe(c, ["carol"]) == {"carol": [(SHA256, 5000)]}


def test_an_upserted_credential_authenticates_a_scram_exchange() -> None:
    """The stored keys derive from the salted password exactly as the client's proof expects."""
    core, _ = make_core(sasl=SaslConfig(users={}))
    c = _logged_in(CoreClient(core))
    assert _alter(c, [_upsert("carol", SHA256, 4096, b"secret", b"NaCl")]) == {"carol": (0, None)}
    store = core.subsystems.scram_credentials
    cred = store.get("SCRAM-SHA-256", "carol")
    assert cred == scram_credential("SCRAM-SHA-256", "secret", b"NaCl", 4096)
    server = ScramServer("SCRAM-SHA-256", lambda u: store.get("SCRAM-SHA-256", u), lambda: "srvnonce")
    first = server.evaluate(b"n,,n=carol,r=cnonce").decode()
    attrs = dict(kv.split("=", 1) for kv in first.split(","))
    bare = f"c=biws,r={attrs['r']}"
    auth = f"n=carol,r=cnonce,{first},{bare}".encode()
    proof = client_proof("SCRAM-SHA-256", "secret", base64.b64decode(attrs["s"]), int(attrs["i"]), auth)
    server.evaluate(f"{bare},p={base64.b64encode(proof).decode()}".encode())
    assert server.complete and server.username == "carol"


def test_deleting_a_configured_users_credential_removes_it_for_scram() -> None:
    core, _ = make_core(sasl=SaslConfig(users={"u": "p"}))
    c = _logged_in(CoreClient(core))
    assert _alter(c, deletes=[("u", SHA512)]) == {"u": (0, None)}
    store = core.subsystems.scram_credentials
    assert store.get("SCRAM-SHA-512", "u") is None and store.get("SCRAM-SHA-256", "u") is not None
    assert _describe(c, ["u"]) == {"u": [(SHA256, 4096)]}


def test_snapshot_round_trips_upserts_and_deletions() -> None:
    from kwire.broker.core.scram_credentials import ScramCredentialStore

    core, _ = make_core(sasl=SaslConfig(users={"u": "p"}))
    c = _logged_in(CoreClient(core))
    _alter(c, [_upsert("carol", SHA512, 9000)], deletes=[("u", SHA256)])
    rows = core.subsystems.scram_credentials.snapshot()
    fresh = ScramCredentialStore(SaslConfig(users={"u": "p"}), random.Random(1))
    fresh.restore(rows)
    assert fresh.describe() == {"carol": [(SHA512, 9000)], "u": [(SHA512, 4096)]}
    assert fresh.get("SCRAM-SHA-512", "carol") == core.subsystems.scram_credentials.get("SCRAM-SHA-512", "carol")

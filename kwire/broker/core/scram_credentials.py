"""SCRAM credentials the cluster stores, per user and mechanism (KIP-554), sans-I/O.

Theory of operation
-------------------
* Kafka keeps one credential per (user, SCRAM mechanism) in the cluster metadata: salt,
  StoredKey, ServerKey and iterations, never a password. AlterUserScramCredentials adds or
  replaces them from a client-computed salted password (the controller derives the keys,
  ScramControlManager.finishUpsertion) and deletes them; DescribeUserScramCredentials lists
  mechanisms and iterations only (ScramImage.describe). SCRAM authentication reads them.
* kwire's ``SaslConfig.users`` are the statically configured users. For every SCRAM mechanism
  the broker enables, each of them has an implicit credential, derived on first use with a salt
  from the core's RNG (as before). An explicit upsert replaces it, a delete removes it
  (remembered, so it stays removed and survives a restart with a data dir).
* ``snapshot()``/``restore()`` give the storage subsystem a JSON-able form of what was altered.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kwire.broker.core.context import Subsystem
from kwire.broker.core.sasl import MIN_SCRAM_ITERATIONS, SCRAM_MECHANISMS, ScramCredential, scram_credential
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.config import SaslConfig
    from kwire.broker.core.cluster import Rng

__all__ = ["ScramCredentialStore", "ScramMechanismType", "MAX_SCRAM_ITERATIONS", "mechanism_name", "mechanism_type",
           "credential_from_salted_password"]

# ScramControlManager.MAX_ITERATIONS; the minimum is ScramMechanism.minIterations() (4096).
MAX_SCRAM_ITERATIONS = 16384
_SALT_BYTES = 16


class ScramMechanismType:
    """org.apache.kafka.clients.admin.ScramMechanism type ids (the int8 on the wire)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2


_NAMES = {ScramMechanismType.SCRAM_SHA_256: "SCRAM-SHA-256", ScramMechanismType.SCRAM_SHA_512: "SCRAM-SHA-512"}
_TYPES = {v: k for k, v in _NAMES.items()}


def mechanism_name(type_id: int) -> str | None:
    """The mechanism name for a wire type id; None for UNKNOWN or anything else."""
    return _NAMES.get(type_id)


def mechanism_type(name: str) -> int:
    return _TYPES.get(name, ScramMechanismType.UNKNOWN)


def credential_from_salted_password(mechanism: str, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """StoredKey := H(HMAC(SaltedPassword, "Client Key")), ServerKey := HMAC(SaltedPassword, "Server Key")."""
    h = SCRAM_MECHANISMS[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", h).digest()
    return ScramCredential(bytes(salt), hashlib.new(h, client_key).digest(),
                           hmac.new(salted_password, b"Server Key", h).digest(), iterations)


@dataclass(slots=True)
class _Entry:
    credential: ScramCredential | None  # None: removed


class ScramCredentialStore(Subsystem):
    """Every SCRAM credential of the cluster: explicit ones (altered) over the configured users."""

    def __init__(self, sasl: SaslConfig | None, rng: Rng) -> None:
        self._rng = rng
        self._users: dict[str, str] = dict(sasl.users) if sasl is not None else {}
        self._mechanisms = [m for m in (sasl.mechanisms if sasl is not None else ()) if m in SCRAM_MECHANISMS]
        self._iterations = max(MIN_SCRAM_ITERATIONS, sasl.scram_iterations) if sasl is not None else MIN_SCRAM_ITERATIONS
        self._derived: dict[tuple[str, str], ScramCredential] = {}
        self._explicit: dict[tuple[str, str], _Entry] = {}  # (mechanism, user) -> entry

    # --- reading ----------------------------------------------------------------------------
    def get(self, mechanism: str, user: str) -> ScramCredential | None:
        """The credential SCRAM authentication checks against, or None."""
        key = (mechanism, user)
        entry = self._explicit.get(key)
        if entry is not None:
            return entry.credential
        if mechanism not in self._mechanisms or user not in self._users:
            return None
        cred = self._derived.get(key)
        if cred is None:
            salt = self._rng.getrandbits(_SALT_BYTES * 8).to_bytes(_SALT_BYTES, "big")
            cred = scram_credential(mechanism, self._users[user], salt, self._iterations)
            self._derived[key] = cred
        return cred

    def describe(self) -> dict[str, list[tuple[int, int]]]:
        """user -> [(mechanism type, iterations)] for every user holding a credential, by name."""
        out: dict[str, list[tuple[int, int]]] = {}
        users = set(self._users) if self._mechanisms else set()
        users.update(u for _, u in self._explicit)
        for user in sorted(users):
            infos = []
            for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                iterations = self._peek(mech, user)
                if iterations is not None:
                    infos.append((mechanism_type(mech), iterations))
            if infos:
                out[user] = infos
        return out

    def _peek(self, mechanism: str, user: str) -> int | None:
        """The iterations of a credential, without deriving it."""
        entry = self._explicit.get((mechanism, user))
        if entry is not None:
            return entry.credential.iterations if entry.credential is not None else None
        if mechanism in self._mechanisms and user in self._users:
            return self._iterations
        return None

    def exists(self, mechanism: str, user: str) -> bool:
        return self._peek(mechanism, user) is not None

    # --- changing ---------------------------------------------------------------------------
    def upsert(self, user: str, mechanism: str, iterations: int, salt: bytes, salted_password: bytes) -> None:
        try:
            cred = credential_from_salted_password(mechanism, salt, salted_password, iterations)
        except (KeyError, TypeError, ValueError) as exc:
            raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, str(exc)) from None
        self._explicit[(mechanism, user)] = _Entry(cred)

    def delete(self, user: str, mechanism: str) -> None:
        self._explicit[(mechanism, user)] = _Entry(None)
        self._derived.pop((mechanism, user), None)

    # --- persistence ------------------------------------------------------------------------
    def snapshot(self) -> list[dict[str, Any]]:
        """What was altered, JSON-able (removed credentials are kept as tombstones)."""
        out = []
        for (mech, user), entry in sorted(self._explicit.items()):
            row: dict[str, Any] = {"user": user, "mechanism": mech}
            c = entry.credential
            if c is not None:
                row.update(salt=_b64(c.salt), stored_key=_b64(c.stored_key), server_key=_b64(c.server_key),
                           iterations=c.iterations)
            out.append(row)
        return out

    def restore(self, rows: list[dict[str, Any]]) -> None:
        """Load a ``snapshot()``; raises ValueError/KeyError on a malformed row."""
        for row in rows:
            mech, user = str(row["mechanism"]), str(row["user"])
            if mech not in SCRAM_MECHANISMS:
                raise ValueError(f"unknown SCRAM mechanism {mech!r}")
            if "salt" not in row:
                self._explicit[(mech, user)] = _Entry(None)
                continue
            cred = ScramCredential(base64.b64decode(row["salt"]), base64.b64decode(row["stored_key"]),
                                   base64.b64decode(row["server_key"]), int(row["iterations"]))
            self._explicit[(mech, user)] = _Entry(cred)


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()

"""AlterUserScramCredentials — key 51, v0 (KIP-554).

Behaviour (ScramControlManager.alterCredentials): deletions first, then upsertions, each user
altered at most once per request (a second alteration → DUPLICATE_RESOURCE "A user credential
cannot be altered twice in the same request", and the user's other alterations are dropped).
Checks: an empty name → UNACCEPTABLE_CREDENTIAL "Username must not be empty"; a mechanism other
than SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2) → UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM
mechanism"; deleting a credential that does not exist → RESOURCE_NOT_FOUND; iterations below
4096 → UNACCEPTABLE_CREDENTIAL "Too few iterations", above 16384 → "Too many iterations". The
broker derives StoredKey and ServerKey from the salted password and keeps them with its other
state (persisted with a data dir); SCRAM logins use them at once.
Deviations: results list successes before failures, each in request order (Kafka's order follows
hash maps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.sasl import MIN_SCRAM_ITERATIONS
from kwire.broker.core.scram_credentials import MAX_SCRAM_ITERATIONS, mechanism_name
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsRequest_ScramCredentialDeletion,
    AlterUserScramCredentialsRequest_ScramCredentialUpsertion,
    AlterUserScramCredentialsResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
VERSIONS = (0, 0)

Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
_TWICE = "A user credential cannot be altered twice in the same request"


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism_name(mechanism) is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _mechanism(type_id: int) -> str:
    """The name of a mechanism that ``_check_name_and_mechanism`` accepted."""
    name = mechanism_name(type_id)
    if name is None:  # cannot happen after the check: UNSUPPORTED_SASL_MECHANISM answers it
        raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return name


def handle(ctx: RequestContext, req: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    store = ctx.core.subsystems.scram_credentials
    errors: dict[str, tuple[int, str]] = {}
    deletions: dict[str, AlterUserScramCredentialsRequest_ScramCredentialDeletion] = {}
    upserts: dict[str, AlterUserScramCredentialsRequest_ScramCredentialUpsertion] = {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
            continue
        err = _check_name_and_mechanism(d.name, d.mechanism)
        if err is None and not store.exists(_mechanism(d.mechanism), d.name):
            err = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if err is not None:
            errors[d.name] = err
        else:
            deletions[d.name] = d
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
            continue
        err = _check_name_and_mechanism(u.name, u.mechanism)
        if err is None and u.iterations < MIN_SCRAM_ITERATIONS:
            err = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif err is None and u.iterations > MAX_SCRAM_ITERATIONS:
            err = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        if err is not None:
            errors[u.name] = err
        else:
            upserts[u.name] = u
    results = []
    for name, d in deletions.items():
        store.delete(name, _mechanism(d.mechanism))
        results.append(Result(user=name, error_code=ErrorCode.NONE, error_message=None))
    for name, u in upserts.items():
        store.upsert(name, _mechanism(u.mechanism), u.iterations, bytes(u.salt), bytes(u.salted_password))
        results.append(Result(user=name, error_code=ErrorCode.NONE, error_message=None))
    for name, (code, message) in errors.items():
        results.append(Result(user=name, error_code=code, error_message=message))
    if deletions or upserts:
        ctx.core.metadata_changed()
    return AlterUserScramCredentialsResponse(results=results)


def error_response(ctx: RequestContext, req: AlterUserScramCredentialsRequest,
                   code: int) -> AlterUserScramCredentialsResponse:
    names = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
    return AlterUserScramCredentialsResponse(results=[Result(user=n, error_code=code) for n in names])

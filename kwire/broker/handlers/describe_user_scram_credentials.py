"""DescribeUserScramCredentials — key 50, v0 (KIP-554).

Behaviour (ScramImage.describe): a null or empty user list describes every user holding a SCRAM
credential (by name); a named user without one → RESOURCE_NOT_FOUND ("Attempt to describe a user
credential that does not exist: NAME"); a user named twice → DUPLICATE_RESOURCE once for it. Each
result lists (mechanism, iterations), never salts or keys. Credentials: the configured SASL users
for each enabled SCRAM mechanism, plus what AlterUserScramCredentials stored.
Deviations: none (no authorizer, so never CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
VERSIONS = (0, 0)

Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = DescribeUserScramCredentialsResponse.CredentialInfo


def handle(ctx: RequestContext, req: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    known = ctx.core.subsystems.scram_credentials.describe()
    if not req.users:
        names: dict[str, bool] = dict.fromkeys(known, False)
    else:
        names = {}
        for u in req.users:
            names[u.name] = u.name in names  # True: named more than once
    results = []
    for name, duplicate in names.items():
        if duplicate:
            results.append(Result(user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                                  error_message="Cannot describe SCRAM credentials for the same user twice in a "
                                                f"single request: {name}"))
        elif name not in known:
            results.append(Result(user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                                  error_message=f"Attempt to describe a user credential that does not exist: {name}"))
        else:
            results.append(Result(user=name, error_code=ErrorCode.NONE, error_message=None, credential_infos=[
                Info(mechanism=m, iterations=i) for m, i in known[name]]))
    return DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, error_message=None, results=results)


def error_response(ctx: RequestContext, req: DescribeUserScramCredentialsRequest,
                   code: int) -> DescribeUserScramCredentialsResponse:
    return DescribeUserScramCredentialsResponse(error_code=code, error_message=None)

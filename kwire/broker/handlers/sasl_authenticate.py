"""SaslAuthenticate — key 36, v0–2 (KIP-152, KIP-368).

Behaviour: carries the tokens of the mechanism picked by a v1 SaslHandshake: PLAIN (one
token, empty answer) or SCRAM-SHA-256/512 (client-first → server-first, client-final →
server-final). A failed exchange answers SASL_AUTHENTICATION_FAILED with Kafka's message, and
the answer and the close wait ``connection.failed.authentication.delay.ms`` on the broker clock
(SEC-14, ``BrokerCore.fail_authentication``). Before a handshake, after a v0
handshake, or after a failure the connection is closed (Kafka's authenticator throws
IllegalSaslState there); after success, or on a broker without SASL → ILLEGAL_SASL_STATE,
as KafkaApis answers. The v0 flow, where tokens arrive as bare frames and a failure closes the
connection without an answer, is served by the core (``BrokerCore._raw_sasl_token``): those
frames are not requests.
Version notes: v1+ reports the session lifetime (KIP-368, SEC-11): ``connections.max.reauth.ms``
(per listener and mechanism) and an OAUTHBEARER token's expiry bound it; 0 when neither does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.sasl import SaslAuthenticationError, SaslExchange, evaluate_token
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.SASL_AUTHENTICATE
VERSIONS = (0, 2)

_AFTER_SUCCESS = "SaslAuthenticate request received after successful authentication"  # KafkaApis


def handle(ctx: RequestContext, req: SaslAuthenticateRequest) -> SaslAuthenticateResponse | None:
    conn = ctx.conn
    if conn.sasl_mechanism is None or conn.authenticated:
        return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=_AFTER_SUCCESS)
    ex = conn.sasl_state
    if not isinstance(ex, SaslExchange) or ex.raw_tokens or ex.failed:
        why = ("before SaslHandshake" if not isinstance(ex, SaslExchange) else
               "after a v0 SaslHandshake (bare tokens expected)" if ex.raw_tokens else "after a failed exchange")
        ctx.defer().close(f"SaslAuthenticate {why}")
        return None
    if ex.bad_mechanism is not None:
        # SaslServerAuthenticator REAUTH_BAD_MECHANISM: fails without an answer, the close delayed
        ex.failed = True
        ctx.core.fail_authentication(conn, ex.bad_mechanism, ctx.defer())
        return None
    try:
        token = evaluate_token(conn, ex, bytes(req.auth_bytes), **ctx.core.sasl_completion(conn))
    except SaslAuthenticationError as exc:
        ctx.core.fail_authentication(conn, f"SASL authentication failed: {exc.reason}", ctx.defer(),
                                     SaslAuthenticateResponse(error_code=exc.error_code, error_message=exc.message,
                                                              auth_bytes=b""))
        return None
    return SaslAuthenticateResponse(error_code=ErrorCode.NONE, error_message=None, auth_bytes=token,
                                    session_lifetime_ms=ex.session_lifetime_ms if ex.server.complete else 0)

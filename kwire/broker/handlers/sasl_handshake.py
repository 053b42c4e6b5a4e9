"""SaslHandshake — key 17, v0–1 (KIP-43, KIP-152).

Behaviour: on a broker with ``BrokerConfig.sasl``, the first handshake of a connection picks the
mechanism: one that is not enabled → UNSUPPORTED_SASL_MECHANISM with the enabled list, a failed
authentication: the answer and the close wait ``connection.failed.authentication.delay.ms``
(SEC-14); an enabled one → NONE with the enabled list, and the connection
expects that mechanism's tokens next. The enabled mechanisms are the listener's
(``listener.name.<l>.sasl.enabled.mechanisms``, ``sasl.enabled.mechanisms``, else
``BrokerConfig.sasl``). A handshake on a broker without SASL, or after the connection
authenticated without a session lifetime, → ILLEGAL_SASL_STATE, as KafkaApis answers it; with
one (KIP-368) it begins re-authentication (``BrokerCore._begin_reauthentication``, SEC-13),
which must keep the mechanism and the principal. A second handshake in the middle of an
exchange never gets here: the core fails it as SaslServerAuthenticator does (SEC-14).
Version notes: v0 means the tokens that follow are bare size-prefixed frames (no
SaslAuthenticate header); v1 means SaslAuthenticate requests carry them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.sasl import SaslAuthority, SaslExchange
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.SASL_HANDSHAKE
VERSIONS = (0, 1)


def handle(ctx: RequestContext, req: SaslHandshakeRequest) -> SaslHandshakeResponse | None:
    conn = ctx.conn
    core = ctx.core
    authority: SaslAuthority | None = core.subsystems.sasl
    if conn.sasl_mechanism is None or authority is None or conn.authenticated:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    if conn.sasl_state is not None:
        ctx.defer().close("SaslHandshake in the middle of a SASL exchange")
        return None
    enabled = core.sasl_mechanisms(conn.listener)
    if req.mechanism not in enabled:
        # SaslServerAuthenticator.handleHandshakeRequest: UnsupportedSaslMechanismException
        core.fail_authentication(conn, f"Unsupported SASL mechanism {req.mechanism}", ctx.defer(),
                                 SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                                       mechanisms=enabled))
        return None
    bad = None
    if conn.reauth_of is not None and req.mechanism != conn.reauth_of[0]:
        # SaslServerAuthenticator.ReauthInfo.saslMechanismUnchanged: answered, then the next token fails
        bad = (f"SASL mechanism '{req.mechanism}' requested by client is not supported for re-authentication "
               f"of mechanism '{conn.reauth_of[0]}'")
    conn.sasl_mechanism = req.mechanism
    server = authority.server(req.mechanism, now_ms=core.clock.now_ms,
                              jaas=core.listener_setting(conn.listener, "sasl.jaas.config", req.mechanism))
    conn.sasl_state = SaslExchange(server, raw_tokens=ctx.api_version == 0, bad_mechanism=bad)
    return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled)

"""SaslHandshake — key 17, v0–1 (KIP-43, KIP-152).

Behaviour: on a broker with ``BrokerConfig.sasl``, the first handshake of a connection picks the
mechanism: one that is not enabled → UNSUPPORTED_SASL_MECHANISM with the enabled list (the
client may try another); an enabled one → NONE with the enabled list, and the connection
expects that mechanism's tokens next. A handshake on a broker without SASL, or after the
connection authenticated, → ILLEGAL_SASL_STATE, as KafkaApis answers it (no KIP-368
re-authentication: the session lifetime is 0). A second handshake in the middle of an
exchange closes the connection, as Kafka's SaslServerAuthenticator does.
Version notes: v0 means the tokens that follow are bare size-prefixed frames (no
SaslAuthenticate header); v1 means SaslAuthenticate requests carry them.
Deviations: after UNSUPPORTED_SASL_MECHANISM Kafka closes the connection; kwire keeps it
open, so the client may try another mechanism (clients close it themselves anyway).
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
    authority: SaslAuthority | None = ctx.core.subsystems.sasl
    if conn.sasl_mechanism is None or authority is None or conn.authenticated:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    if conn.sasl_state is not None:
        ctx.defer().close("SaslHandshake in the middle of a SASL exchange")
        return None
    if not authority.enabled(req.mechanism):
        return SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                     mechanisms=authority.mechanisms)
    conn.sasl_mechanism = req.mechanism
    conn.sasl_state = SaslExchange(authority.server(req.mechanism), raw_tokens=ctx.api_version == 0)
    return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=authority.mechanisms)

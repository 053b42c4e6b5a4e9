"""SaslHandshake through the core: mechanism choice, unsupported mechanisms, illegal states."""

from __future__ import annotations

import pytest

from kwire.broker.config import SaslConfig
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.broker.helpers import ConnectionClosed, CoreClient, make_core

ALL = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]


@pytest.mark.parametrize("version", [0, 1])
def test_an_enabled_mechanism_is_accepted_with_the_enabled_list(version: int) -> None:
    core, _ = make_core(sasl=SaslConfig(users={"u": "p"}))
    c = CoreClient(core)
    resp = c.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), version)
    assert (resp.error_code, resp.mechanisms) == (ErrorCode.NONE, ALL)
    assert c.conn.sasl_mechanism == "SCRAM-SHA-256" and not c.conn.authenticated


@pytest.mark.rule("SEC-14")
def test_unsupported_mechanism_lists_the_enabled_ones_late_and_closes() -> None:
    """SaslServerAuthenticator.handleHandshakeRequest: UnsupportedSaslMechanismException is an
    authentication failure, so the answer and the close wait connection.failed.authentication.delay.ms."""
    core, _ = make_core(sasl=SaslConfig(mechanisms=("SCRAM-SHA-512",), users={"u": "p"}))
    c = CoreClient(core)
    resp = c.send_auth_failure(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert (resp.error_code, resp.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512"])
    fresh = CoreClient(core)
    assert fresh.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1).error_code == ErrorCode.NONE


def test_without_sasl_configured_the_handshake_is_illegal_sasl_state() -> None:
    core, _ = make_core()
    resp = CoreClient(core).send(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert (resp.error_code, resp.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])


@pytest.mark.rule("SEC-14")
def test_a_request_other_than_sasl_authenticate_mid_exchange_fails_late_with_illegal_sasl_state() -> None:
    """SaslServerAuthenticator.handleSaslToken after a v1 handshake: IllegalSaslStateException with
    its error answer, sent with the close after the delay (here set to 250 ms)."""
    settings = {"connection.failed.authentication.delay.ms": "250"}
    topic = MetadataRequest.MetadataRequestTopic(name="t")
    for request, version in ((SaslHandshakeRequest(mechanism="PLAIN"), 1), (MetadataRequest(topics=[topic]), 12)):
        core, _ = make_core(sasl=SaslConfig(users={"u": "p"}), settings=settings)
        c = CoreClient(core)
        c.send(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        resp = c.send_auth_failure(request, version, delay_ms=250)
        code = resp.topics[0].error_code if isinstance(request, MetadataRequest) else resp.error_code
        assert code == ErrorCode.ILLEGAL_SASL_STATE


@pytest.mark.rule("SEC-14")
def test_without_a_delay_the_failure_is_answered_and_closed_at_once() -> None:
    """Selector: connection.failed.authentication.delay.ms=0 closes now (NO_FAILED_AUTHENTICATION_DELAY)."""
    core, _ = make_core(sasl=SaslConfig(users={"u": "p"}),
                        settings={"connection.failed.authentication.delay.ms": "0"})
    c = CoreClient(core)
    assert c.send(SaslHandshakeRequest(mechanism="NOPE"), 1) is None
    out = core.take_outbox()
    assert [conn for conn, _ in out] == [c.conn.conn_id] * 2 and out[1][1] is None


def test_other_requests_before_authentication_close_the_connection() -> None:
    core, _ = make_core(sasl=SaslConfig(users={"u": "p"}))
    with pytest.raises(ConnectionClosed):
        CoreClient(core).send(MetadataRequest(topics=None), 12)

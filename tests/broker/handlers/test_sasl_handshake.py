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


def test_unsupported_mechanism_lists_the_enabled_ones_and_another_try_is_allowed() -> None:
    core, _ = make_core(sasl=SaslConfig(mechanisms=("SCRAM-SHA-512",), users={"u": "p"}))
    c = CoreClient(core)
    resp = c.send(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert (resp.error_code, resp.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512"])
    assert c.send(SaslHandshakeRequest(mechanism="GSSAPI"), 1).error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert c.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1).error_code == ErrorCode.NONE


def test_without_sasl_configured_the_handshake_is_illegal_sasl_state() -> None:
    core, _ = make_core()
    resp = CoreClient(core).send(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert (resp.error_code, resp.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])


def test_a_second_handshake_mid_exchange_closes_the_connection() -> None:
    core, _ = make_core(sasl=SaslConfig(users={"u": "p"}))
    c = CoreClient(core)
    c.send(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert c.send(SaslHandshakeRequest(mechanism="PLAIN"), 1) is None
    with pytest.raises(ConnectionClosed):
        c.deferred()


def test_other_requests_before_authentication_close_the_connection() -> None:
    core, _ = make_core(sasl=SaslConfig(users={"u": "p"}))
    with pytest.raises(ConnectionClosed):
        CoreClient(core).send(MetadataRequest(topics=None), 12)

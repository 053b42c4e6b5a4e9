"""Connection limits of the trio edge, as Kafka's SocketServer has them (issue 12.3, 12.4, 23):
``max.connections.per.ip`` (closed at once) and its overrides, ``max.connections`` (served once a
slot frees), ``connection_creation_rate`` ip quotas (closed unread after the throttle time) and
``max.connection.creation.rate`` (the acceptor waits) on the broker clock,
``connections.max.idle.ms`` (idle connections closed), ``sasl.server.max.receive.size``
(frames before SASL completes), and one receive buffer shared by every connection."""

from __future__ import annotations

import random
import socket
import threading

import pytest

from kwire.broker.config import SaslConfig
from kwire.control import Broker, BrokerConfig
from kwire.protocol import decode_response, encode_request
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kwire.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.broker.server.test_wire_edge_cases import Raw


def _api_versions(r: Raw, corr: int = 1) -> None:
    r.send(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                          correlation_id=corr))
    assert decode_response(r.recv_frame(), 18, 3).correlation_id == corr


@pytest.mark.rule("QUO-8")
def test_connections_over_the_per_ip_limit_are_closed_at_once() -> None:
    with Broker(BrokerConfig(log_connections=False, settings={"max.connections.per.ip": "2"})) as b:
        a, c = Raw(b), Raw(b)
        _api_versions(a)
        _api_versions(c)
        third = Raw(b)
        assert third.is_closed()
        a.close()
        # The address's count drops when the broker has let go of the connection entirely.
        b.wait_until(lambda core: len(core.connections) == 1
                     and core.connection_quotas(min(core.cluster.nodes)).per_ip.get("127.0.0.1", 0) == 1)
        again = Raw(b)
        _api_versions(again)  # a slot for this address freed up
        for r in (c, again, third):
            r.close()


@pytest.mark.rule("QUO-8")
def test_at_max_connections_a_new_connection_waits_for_a_slot() -> None:
    with Broker(BrokerConfig(log_connections=False, settings={"max.connections": "2"})) as b:
        a, c = Raw(b), Raw(b)
        _api_versions(a)
        _api_versions(c)
        waiting = Raw(b)
        waiting.send(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                                    correlation_id=9))
        for i in range(3):  # the broker keeps serving the admitted ones meanwhile
            _api_versions(a, 10 + i)
        assert b.call(lambda: len(b.core.connections)) == 2
        waiting.sock.setblocking(False)
        try:
            early: bytes | None = waiting.sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            early = None
        assert early is None, "answered or closed beyond max.connections"
        waiting.sock.setblocking(True)
        a.close()
        assert decode_response(waiting.recv_frame(), 18, 3).correlation_id == 9
        for r in (c, waiting):
            r.close()


@pytest.mark.rule("QUO-8")
def test_raising_max_connections_lets_a_waiting_connection_in() -> None:
    """ConnectionQuotas.updateBrokerMaxConnections wakes the waiting acceptor (max.connections is
    cluster-wide dynamic)."""
    with Broker(BrokerConfig(log_connections=False, settings={"max.connections": "1"})) as b:
        first = Raw(b)
        _api_versions(first)
        waiting = Raw(b)
        waiting.send(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                                    correlation_id=5))
        b.wait_until(lambda core: b.server._slot_waiters == 1)
        b.set_config("broker", "", "max.connections", "2")
        assert decode_response(waiting.recv_frame(), 18, 3).correlation_id == 5
        first.close()
        waiting.close()


@pytest.mark.rule("QUO-8")
def test_a_per_ip_override_replaces_the_default_for_its_address() -> None:
    """ConnectionQuotas.maxConnectionsPerIpForIp: max.connections.per.ip.overrides wins for its ip
    (here 0 for everyone else would refuse all; 127.0.0.1 may have one)."""
    settings = {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:1"}
    with Broker(BrokerConfig(log_connections=False, settings=settings)) as b:
        first = Raw(b)
        _api_versions(first)
        second = Raw(b)
        assert second.is_closed()
        first.close()
        second.close()


def _peek_nothing(r: Raw) -> bool:
    """Neither an answer nor a close has arrived (the socket is open and quiet)."""
    r.sock.setblocking(False)
    try:
        r.sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    finally:
        r.sock.setblocking(True)
    return False


@pytest.mark.rule("QUO-9")
def test_an_ip_over_its_connection_creation_rate_is_closed_unread_after_the_throttle_time() -> None:
    """KIP-612, ConnectionQuotas.recordIpConnectionMaybeThrottle and Acceptor's DelayedCloseSocket:
    with connection_creation_rate=2 the Rate's 10 s window lets 20 connections in; the 21st sees
    2.1/s: accepted, never read (a request sent on it gets no answer), closed when the throttle
    time (500 ms) has passed on the broker clock. It never counted as a connection."""
    with Broker(BrokerConfig(log_connections=False), manual_clock=True) as b:
        b.set_quota("ip=127.0.0.1", connection_creation_rate=2)
        node = min(b.core.cluster.nodes)
        admitted = [Raw(b) for _ in range(20)]
        for r in admitted:
            _api_versions(r)
        throttled = Raw(b)
        throttled.send(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                                      correlation_id=7))
        b.wait_until(lambda core: core.connection_quotas(node).throttled_ips == 1)
        assert _peek_nothing(throttled)
        b.advance(499)
        assert _peek_nothing(throttled)
        b.advance(1)
        assert throttled.is_closed()
        assert b.call(lambda: b.core.connection_quotas(node).total) == 20
        b.advance(10_000)  # the window has moved on: the address may connect again
        again = Raw(b)
        _api_versions(again)
        for r in [*admitted, throttled, again]:
            r.close()


@pytest.mark.rule("QUO-9")
def test_over_max_connection_creation_rate_the_acceptor_waits() -> None:
    """ConnectionQuotas.waitForConnectionSlot: over the broker-wide max.connection.creation.rate the
    listener accepts nothing until the throttle time has passed (broker clock), then serves."""
    with Broker(BrokerConfig(log_connections=False, settings={"max.connection.creation.rate": "1"}),
                manual_clock=True) as b:
        admitted = [Raw(b) for _ in range(10)]
        for r in admitted:
            _api_versions(r)
        waiting = Raw(b)  # 11 / 10 s = 1.1/s: (1.1 - 1) / 1 x 10000 = 1000 ms, the bound
        waiting.send(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                                    correlation_id=9))
        node = min(b.core.cluster.nodes)
        # the acceptor has recorded it (and waits)
        b.wait_until(lambda core: sum(x.value for x in core.connection_quotas(node)._broker_rate.samples) == 11)
        assert _peek_nothing(waiting)
        b.advance(999)
        assert _peek_nothing(waiting)
        b.advance(1)
        assert decode_response(waiting.recv_frame(), 18, 3).correlation_id == 9
        for r in [*admitted, waiting]:
            r.close()


def test_an_idle_connection_is_closed_after_connections_max_idle_ms() -> None:
    with Broker(BrokerConfig(log_connections=False, settings={"connections.max.idle.ms": "300"})) as b:
        idle = Raw(b)
        _api_versions(idle)
        assert idle.is_closed()  # blocks until the broker closes it (wall time: an I/O concern)
        fresh = Raw(b)
        _api_versions(fresh)
        fresh.close()


def _sasl_plain(r: Raw, user: str, password: str) -> None:
    r.send(encode_request(SaslHandshakeRequest(mechanism="PLAIN"), 1, correlation_id=1))
    assert decode_response(r.recv_frame(), 17, 1).body.error_code == 0
    r.send(encode_request(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), 2, correlation_id=2))
    assert decode_response(r.recv_frame(), 36, 2).body.error_code == 0


def test_frames_before_sasl_completes_are_capped_at_sasl_server_max_receive_size() -> None:
    """SaslServerAuthenticator reads with sasl.server.max.receive.size (512 KiB): a larger size
    prefix before authentication closes the connection; after it, the broker's limit applies."""
    with Broker(BrokerConfig(log_connections=False, sasl=SaslConfig(users={"u": "p"}))) as b:
        hostile = Raw(b)
        hostile.send((512 * 1024 + 1).to_bytes(4, "big") + b"x" * 10)
        assert hostile.is_closed()
        ok = Raw(b)
        _sasl_plain(ok, "u", "p")
        body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t" * 200)] * 3000)
        big = encode_request(body, 12, correlation_id=5)
        assert len(big) > 512 * 1024
        ok.send(big)
        assert decode_response(ok.recv_frame(), 3, 12).correlation_id == 5
        ok.close()


def test_many_connections_interleaving_reads_through_the_shared_buffer_get_their_own_answers() -> None:
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("t", 1)
        errors: list[BaseException] = []

        def client(seed: int) -> None:
            try:
                rng = random.Random(seed)
                r = Raw(b)
                reqs = b"".join(encode_request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(
                    name="t")]), 12, correlation_id=seed * 100 + i, client_id=f"c{seed}") for i in range(20))
                pos = 0
                while pos < len(reqs):
                    n = rng.randint(1, 200)
                    r.send(reqs[pos:pos + n])
                    pos += n
                for i in range(20):
                    resp = decode_response(r.recv_frame(), 3, 12)
                    assert resp.correlation_id == seed * 100 + i
                    assert resp.body.topics[0].name == "t"
                r.close()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=client, args=(s,)) for s in range(1, 21)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[:3]


@pytest.mark.rule("SEC-14")
def test_a_failed_sasl_login_is_answered_and_closed_after_the_delay_on_the_broker_clock() -> None:
    """Selector.maybeDelayCloseOnAuthenticationFailure / KafkaChannel.completeCloseOnAuthenticationFailure:
    the SASL_AUTHENTICATION_FAILED answer and the close wait connection.failed.authentication.delay.ms
    (100 ms); meanwhile the connection handles nothing (a request sent then is never answered)."""
    lines: list[str] = []
    with Broker(BrokerConfig(sasl=SaslConfig(users={"u": "p"})), manual_clock=True, on_line=lines.append) as b:
        r = Raw(b)
        r.send(encode_request(SaslHandshakeRequest(mechanism="PLAIN"), 1, correlation_id=1))
        assert decode_response(r.recv_frame(), 17, 1).body.error_code == 0
        b.start_recording()
        r.send(encode_request(SaslAuthenticateRequest(auth_bytes=b"\0u\0wrong"), 2, correlation_id=2))
        b.wait_until(lambda core: core.recording is not None and len(core.recording) == 1)
        r.send(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                              correlation_id=3))
        assert _peek_nothing(r)
        b.advance(99)
        assert _peek_nothing(r)
        b.advance(1)
        failed = decode_response(r.recv_frame(), 36, 2)
        assert failed.correlation_id == 2 and failed.body.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert r.is_closed()  # and nothing else: the ApiVersions sent meanwhile was never read
        assert len(b.recorded()) == 1
        r.close()
        # The broker log says why it closed the connection.
        b.wait_until(lambda core: any("closed (SASL authentication failed" in ln for ln in lines))


@pytest.mark.rule("QUO-7")
def test_the_edge_times_requests_for_request_percentage() -> None:
    """The server gives the core time.perf_counter_ns: with a request_percentage of 1e-6 % any real
    request (over 100 ns of the core's time) is over it, so the answer carries the bounded throttle
    of one quota window (ClientRequestQuotaManager.throttleTime)."""
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.set_quota("client-id=<default>", request_percentage=0.000001)
        r = Raw(b)
        r.send(encode_request(MetadataRequest(topics=[]), 12, correlation_id=4))
        assert decode_response(r.recv_frame(), 3, 12).body.throttle_time_ms == 1000
        r.close()

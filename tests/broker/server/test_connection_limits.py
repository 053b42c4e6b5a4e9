"""Connection limits of the trio edge, as Kafka's SocketServer has them (issue 12.3, 12.4):
``max.connections.per.ip`` (closed at once), ``max.connections`` (served once a slot frees),
``connections.max.idle.ms`` (idle connections closed), ``sasl.server.max.receive.size``
(frames before SASL completes), and one receive buffer shared by every connection."""

from __future__ import annotations

import random
import socket
import threading

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


def test_connections_over_the_per_ip_limit_are_closed_at_once() -> None:
    with Broker(BrokerConfig(log_connections=False, settings={"max.connections.per.ip": "2"})) as b:
        a, c = Raw(b), Raw(b)
        _api_versions(a)
        _api_versions(c)
        third = Raw(b)
        assert third.is_closed()
        a.close()
        # The address's count drops when the broker has let go of the connection entirely.
        b.wait_until(lambda core: len(core.connections) == 1 and b.server._per_ip.get("127.0.0.1", 0) == 1)
        again = Raw(b)
        _api_versions(again)  # a slot for this address freed up
        for r in (c, again, third):
            r.close()


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

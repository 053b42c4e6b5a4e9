"""The trio edge over real sockets: ordering, limits and bad input. Each bad connection is
closed as a real broker would, and every other connection keeps being served."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from kwire.control import Broker, BrokerConfig
from kwire.protocol import decode_response, encode_request
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.records import iter_batches
from tests.broker.helpers import batch

TIMEOUT_S = 10


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(max_request_bytes=64 * 1024, log_connections=False), manual_clock=True) as b:
        b.create_topic("t", 1)
        yield b


class Raw:
    def __init__(self, broker: Broker) -> None:
        host, port = broker.bootstrap.split(",")[0].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._exact(4))[0]
        return self._exact(size)

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out

    def is_closed(self) -> bool:
        """True once the broker closed the connection (EOF or reset), waiting at most TIMEOUT_S."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True

    def close(self) -> None:
        self.sock.close()


def _metadata_ok(broker: Broker) -> None:
    c = Raw(broker)
    c.send(encode_request(MetadataRequest(topics=None), 12, correlation_id=5))
    resp = decode_response(c.recv_frame(), 3, 12)
    assert resp.correlation_id == 5 and [t.name for t in resp.body.topics] == ["t"]
    c.close()


def _fetch(offset: int, wait_ms: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 20, session_epoch=-1,
                        topics=[FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchPartition(
                            partition=0, fetch_offset=offset, current_leader_epoch=-1, log_start_offset=-1,
                            partition_max_bytes=1 << 20)])])


def test_pipelined_requests_are_answered_in_order_even_behind_a_long_poll(broker: Broker) -> None:
    c = Raw(broker)
    c.send(encode_request(_fetch(0, 30_000), 11, correlation_id=1)
           + encode_request(MetadataRequest(topics=None), 12, correlation_id=2)
           + encode_request(ApiVersionsRequest(), 0, correlation_id=3))
    broker.wait_until(lambda core: core.stats.requests >= 1)
    broker.advance(30_000)  # the long poll expires on the broker clock, not in real time
    assert [decode_response(c.recv_frame(), k, v).correlation_id for k, v in ((1, 11), (3, 12), (18, 0))] == [1, 2, 3]
    c.close()


def test_long_poll_is_woken_by_a_produce_on_another_connection(broker: Broker) -> None:
    consumer, producer = Raw(broker), Raw(broker)
    consumer.send(encode_request(_fetch(0, 60_000), 11, correlation_id=1))
    producer.send(encode_request(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch([b"hello"]))])]),
        9, correlation_id=1))
    assert decode_response(producer.recv_frame(), 0, 9).body.responses[0].partition_responses[0].error_code == 0
    resp = decode_response(consumer.recv_frame(), 1, 11).body
    [b] = list(iter_batches(resp.responses[0].partitions[0].records))
    assert [r.value for r in b] == [b"hello"]


def test_frame_over_the_size_limit_closes_only_that_connection(broker: Broker) -> None:
    bad = Raw(broker)
    bad.send(struct.pack(">i", 64 * 1024 + 1) + b"\0" * 16)
    assert bad.is_closed()
    _metadata_ok(broker)


@pytest.mark.parametrize("payload", [
    b"\x00\x7f\x00\x00\x00\x00\x00\x01\x00\x00",  # unknown api key 127
    b"\x00\x03\x00\x63\x00\x00\x00\x01\x00\x00",  # Metadata v99
    b"\x00\x03\x00\x0c\x00\x00\x00\x01" + b"\xff" * 20,  # Metadata v12 garbage body
    b"\x00\x03",  # shorter than a request header
], ids=["unknown-key", "unknown-version", "garbage-body", "short-header"])
def test_unreadable_requests_close_the_connection_and_others_keep_working(broker: Broker, payload: bytes) -> None:
    bad = Raw(broker)
    bad.send(struct.pack(">i", len(payload)) + payload)
    assert bad.is_closed()
    _metadata_ok(broker)


def test_negative_frame_size_closes(broker: Broker) -> None:
    bad = Raw(broker)
    bad.send(struct.pack(">i", -5))
    assert bad.is_closed()
    _metadata_ok(broker)


def test_client_vanishing_mid_request_loses_no_acknowledged_data(broker: Broker) -> None:
    p = Raw(broker)
    p.send(encode_request(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch([b"kept"]))])]),
        9, correlation_id=1))
    assert decode_response(p.recv_frame(), 0, 9).body.responses[0].partition_responses[0].base_offset == 0
    half = encode_request(MetadataRequest(topics=None), 12, correlation_id=2)
    p.send(half[: len(half) // 2])
    p.close()
    c = Raw(broker)
    c.send(encode_request(_fetch(0, 0), 11, correlation_id=9))
    resp = decode_response(c.recv_frame(), 1, 11).body
    assert [r.value for b in iter_batches(resp.responses[0].partitions[0].records) for r in b] == [b"kept"]


def test_injected_faults_error_close_and_swallow(broker: Broker) -> None:
    broker.inject_error(api_key=3, error_code=ErrorCode.NOT_CONTROLLER, times=1)
    c = Raw(broker)
    c.send(encode_request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]), 12,
                          correlation_id=5))
    assert decode_response(c.recv_frame(), 3, 12).body.topics[0].error_code == ErrorCode.NOT_CONTROLLER
    _metadata_ok(broker)
    broker.close_on(api_key=3, times=1)
    bad = Raw(broker)
    bad.send(encode_request(MetadataRequest(topics=None), 12, correlation_id=1))
    assert bad.is_closed()
    _metadata_ok(broker)
    broker.swallow(api_key=3, times=1)
    quiet = Raw(broker)
    quiet.send(encode_request(MetadataRequest(topics=None), 12, correlation_id=1))
    quiet.sock.settimeout(0.2)  # bounded wait for a response that must not come
    with pytest.raises(socket.timeout):
        quiet.recv_frame()
    _metadata_ok(broker)


def test_partition_error_injection_then_recovery(broker: Broker) -> None:
    broker.inject_error(api_key=0, error_code=6, topic="t", partition=0, times=2)
    p = Raw(broker)
    codes = []
    for corr in range(3):
        p.send(encode_request(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch([b"x"]))])]),
            9, correlation_id=corr))
        codes.append(decode_response(p.recv_frame(), 0, 9).body.responses[0].partition_responses[0].error_code)
    assert codes == [6, 6, 0]


def test_latency_is_on_the_broker_clock(broker: Broker) -> None:
    broker.add_latency(5_000, api_key=3, times=1)
    c = Raw(broker)
    c.send(encode_request(MetadataRequest(topics=None), 12, correlation_id=1))
    c.sock.settimeout(0.2)
    with pytest.raises(socket.timeout):
        c.recv_frame()
    c.sock.settimeout(TIMEOUT_S)
    broker.wait_until(lambda core: bool(core.deadlines))
    broker.advance(5_000)
    assert decode_response(c.recv_frame(), 3, 12).correlation_id == 1


def test_a_failing_handler_costs_one_request_not_the_broker(broker: Broker) -> None:
    def boom(request: object, ctx: object) -> object:
        raise RuntimeError("handler bug")

    broker.hook(boom, api_key=3, times=1)
    c = Raw(broker)
    c.send(encode_request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]), 12,
                          correlation_id=1))
    assert decode_response(c.recv_frame(), 3, 12).body.topics[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    _metadata_ok(broker)


def test_a_response_that_cannot_be_encoded_closes_only_that_connection(broker: Broker) -> None:
    from kwire.protocol.messages.list_offsets import ListOffsetsRequest, ListOffsetsResponse

    # LeaderEpoch does not exist before ListOffsets v4 (and is not ignorable): encoding at v3 fails.
    bad_resp = ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(name="t", partitions=[
        ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=0, leader_epoch=7)])])
    broker.hook(lambda req, ctx: bad_resp, api_key=2, times=1)
    bad = Raw(broker)
    bad.send(encode_request(ListOffsetsRequest(replica_id=-1, topics=[]), 3, correlation_id=1))
    assert bad.is_closed()
    _metadata_ok(broker)

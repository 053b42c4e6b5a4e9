"""Multi-megabyte requests and responses over a real socket: a produce request is received
straight into its own frame buffer, a fetch answer leaves as stored batches in vectored writes
that the socket takes in parts, and every byte arrives intact and in order."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from kwire.control import Broker, BrokerConfig
from kwire.protocol import decode_response, encode_request
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.records import iter_batches
from tests.broker.helpers import batch

TIMEOUT_S = 30
PARTITIONS = 3


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False), manual_clock=True) as b:
        b.create_topic("big", PARTITIONS, configs={"max.message.bytes": str(8 << 20)})
        yield b


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], min(n - got, 7919))  # small reads: the broker's writes stay partial
        if not k:
            raise ConnectionError("closed")
        got += k
    return bytes(buf)


def _frame(sock: socket.socket) -> bytes:
    return _recv_exact(sock, struct.unpack(">i", _recv_exact(sock, 4))[0])


def _fetch(corr: int) -> bytes:
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=64 << 20, session_epoch=-1,
                       topics=[FetchRequest.FetchTopic(topic="big", partitions=[FetchRequest.FetchPartition(
                           partition=i, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
                           partition_max_bytes=16 << 20) for i in range(PARTITIONS)])])
    return encode_request(req, 12, correlation_id=corr)


def test_megabyte_produce_and_fetch_arrive_intact(broker: Broker) -> None:
    host, port = broker.bootstrap.split(",")[0].split(":")
    sock = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)
    values = {i: [bytes([65 + i]) * 1000 + b"%06d" % j for j in range(2500)] for i in range(PARTITIONS)}
    batches = {i: batch(v) for i, v in values.items()}
    req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="big", partition_data=[ProduceRequest.PartitionProduceData(index=i, records=b)
                                    for i, b in batches.items()])])
    data = encode_request(req, 9, correlation_id=1)
    assert len(data) > 7 << 20
    for k in range(0, len(data), 1 << 20):  # a request that arrives in many reads
        sock.sendall(data[k : k + (1 << 20)])
    produced = decode_response(_frame(sock), 0, 9).body
    assert [p.error_code for p in produced.responses[0].partition_responses] == [0] * PARTITIONS

    # Two pipelined fetches: both answers are whole, in order, and carry every record.
    sock.sendall(_fetch(2) + _fetch(3))
    for corr in (2, 3):
        resp = decode_response(_frame(sock), 1, 12)
        assert resp.correlation_id == corr
        for p in resp.body.responses[0].partitions:
            got = [r.value for b in iter_batches(p.records) for r in b]
            assert got == values[p.partition_index]
    sock.close()

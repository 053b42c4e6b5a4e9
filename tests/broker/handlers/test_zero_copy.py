"""Produce stores each batch where its request frame put it, and Fetch answers with the stored
buffers themselves: no byte of a batch is copied between the socket and the log, or back."""

from __future__ import annotations

from kwire.protocol import decode_response, encode_request
from kwire.protocol.messages.fetch import FetchRequest, FetchResponse
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.splice import FramePieces
from kwire.records import iter_batches
from tests.broker.helpers import batch, make_core


def _produce_frame(records: dict[int, bytes]) -> bytearray:
    req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=i, records=r)
                                  for i, r in records.items()])])
    # What FrameBuffer hands the core: a bytearray of its own.
    return bytearray(encode_request(req, 9, correlation_id=1, client_id="zc", size_prefix=False))


def _fetch(partitions: int) -> bytes:
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_epoch=-1,
                       topics=[FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchPartition(
                           partition=i, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
                           partition_max_bytes=1 << 20) for i in range(partitions)])])
    return encode_request(req, 12, correlation_id=2, client_id="zc", size_prefix=False)


def test_produce_stores_a_view_into_the_request_frame_with_offsets_assigned_in_place() -> None:
    core, _ = make_core()
    core.create_topic("t", 2)
    conn = core.connect(1)
    assert core.handle(conn, _produce_frame({0: batch([b"a", b"b"])})).kind == "send"
    frame = _produce_frame({0: batch([b"c"]), 1: batch([b"d"])})
    assert core.handle(conn, frame).kind == "send"
    stored = [core.cluster.topics["t"].partitions[i].log.batches[-1] for i in (0, 1)]
    for s in stored:
        assert isinstance(s.data, memoryview) and s.data.obj is frame
    # The base offset (2) was written into the frame's own bytes.
    assert next(iter_batches(stored[0].data)).base_offset == 2
    assert bytes(stored[0].data) in bytes(frame)


def test_a_recorded_request_keeps_the_bytes_the_client_sent() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    conn = core.connect(1)
    core.handle(conn, _produce_frame({0: batch([b"a"])}))
    core.recording = []
    frame = _produce_frame({0: batch([b"b"])})
    core.handle(conn, frame)
    sent = core.recording[0].request.topic_data[0].partition_data[0].records
    assert next(iter_batches(sent)).base_offset == 0  # as sent, not rewritten to 1
    stored = core.cluster.topics["t"].partitions[0].log.batches[-1].data
    assert next(iter_batches(stored)).base_offset == 1 and not isinstance(stored, memoryview)


def test_fetch_answers_with_the_stored_buffers_as_frame_pieces() -> None:
    core, _ = make_core()
    core.create_topic("t", 2)
    conn = core.connect(1)
    for i in range(3):
        core.handle(conn, _produce_frame({0: batch([b"x%d" % i] * 50), 1: batch([b"y"])}))
    out = core.handle(conn, _fetch(2))
    assert out.kind == "send" and isinstance(out.data, FramePieces)
    stored = [b.data for p in core.cluster.topics["t"].partitions for b in p.log.batches]
    assert all(any(piece is s for piece in out.data.pieces) for s in stored)
    body = decode_response(bytes(out.data), FetchResponse.API_KEY, 12).body
    got = [bytes(p.records) for p in body.responses[0].partitions]
    assert got == [b"".join(bytes(b.data) for b in p.log.batches) for p in core.cluster.topics["t"].partitions]


def test_the_connection_joins_small_pieces_and_passes_large_ones_through() -> None:
    from kwire.broker.connection import _JOIN_BELOW, Connection

    core, _ = make_core()
    core.create_topic("t", 2)
    conn = Connection(core, 1)
    big = [batch([b"z" * 1000] * (_JOIN_BELOW // 1000 + 5)) for _ in range(2)]
    conn.receive_data(len(f := _produce_frame({0: big[0], 1: big[1]})).to_bytes(4, "big") + f)
    conn.receive_data(len(f := _fetch(2)).to_bytes(4, "big") + f)
    pieces = conn.pieces_to_send()
    stored = [p.log.batches[0].data for p in core.cluster.topics["t"].partitions]
    # Each stored batch passes through as it is; the small pieces between them are joined.
    assert [any(p is s for p in pieces) for s in stored] == [True, True]
    assert len(pieces) == 5
    assert not any(len(a) < _JOIN_BELOW and len(b) < _JOIN_BELOW for a, b in zip(pieces, pieces[1:], strict=False))
    assert conn.pieces_to_send() == []

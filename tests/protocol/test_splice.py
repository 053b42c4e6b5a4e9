"""Record chains: responses that carry stored batches by reference encode to the same bytes as
responses that carry them joined, and the stored buffers reach the frame pieces uncopied."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kwire.protocol import decode_response, encode_response
from kwire.protocol.framing import encode_response_frame
from kwire.protocol.messages.fetch import FetchResponse
from kwire.protocol.splice import FramePieces, RecordChain, SpliceBuffer, as_bytes, splice
from tests.broker.helpers import batch

BATCHES = [batch([b"a" * 10, b"b"]), batch([b"c" * 300]), batch([b"d"] * 40)]


def _fetch_response(records_per_partition: list[object], session_id: int = 7) -> FetchResponse:
    parts = [FetchResponse.PartitionData(partition_index=i, high_watermark=100, records=r)
             for i, r in enumerate(records_per_partition)]
    return FetchResponse(session_id=session_id, responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=parts)])


@pytest.mark.parametrize("version", [4, 11, 12, 16, 18])
def test_a_chain_encodes_exactly_like_its_joined_bytes(version: int) -> None:
    joined = b"".join(BATCHES)
    sid = 7 if version >= 7 else 0
    plain = encode_response(_fetch_response([joined, b"", None], sid), version, correlation_id=3, size_prefix=False)
    spliced = encode_response_frame(_fetch_response([RecordChain(BATCHES), RecordChain(), None], sid), version,
                                    correlation_id=3)
    assert isinstance(spliced, FramePieces)
    assert bytes(spliced) == plain and len(spliced) == len(plain)
    body = decode_response(as_bytes(spliced), FetchResponse.API_KEY, version).body
    assert bytes(body.responses[0].partitions[0].records) == joined


def test_the_stored_batches_are_the_pieces_themselves() -> None:
    """No copy on the way to the socket: each stored batch object is one of the frame's pieces."""
    frame = encode_response_frame(_fetch_response([RecordChain(BATCHES)]), 16, correlation_id=1)
    assert isinstance(frame, FramePieces)
    for b in BATCHES:
        assert any(p is b for p in frame.pieces)


def test_a_response_without_chains_is_plain_bytes() -> None:
    out = encode_response_frame(_fetch_response([b"".join(BATCHES)]), 16, correlation_id=1)
    assert isinstance(out, bytes)
    assert out == encode_response(_fetch_response([b"".join(BATCHES)]), 16, correlation_id=1, size_prefix=False)


def test_encoding_a_chain_into_a_plain_bytearray_copies_it() -> None:
    """Message.encode (no splice buffer) still yields complete bytes."""
    msg = _fetch_response([RecordChain(BATCHES)])
    assert msg.encode(16) == _fetch_response([b"".join(BATCHES)]).encode(16)


def test_chain_value_semantics() -> None:
    c = RecordChain([b"ab", memoryview(b"cde")])
    assert RecordChain([b"ab", b"cde"], 5).size == 5
    assert len(c) == 5 and bytes(c) == b"abcde" and c == b"abcde" and c == RecordChain([b"abc", b"de"])
    assert c != b"abcdf" and bool(RecordChain()) is False
    with pytest.raises(TypeError):
        hash(c)


@given(st.lists(st.tuples(st.binary(max_size=40), st.lists(st.binary(max_size=20), max_size=4)), max_size=6),
       st.binary(max_size=10))
def test_pieces_are_the_buffer_with_every_chain_spliced_in_place(segments: list[tuple[bytes, list[bytes]]],
                                                                  tail: bytes) -> None:
    buf = SpliceBuffer()
    expected = b""
    for head, parts in segments:
        buf += head
        splice(buf, RecordChain(parts))
        expected += head + b"".join(parts)
    buf += tail
    expected += tail
    frame = FramePieces(buf)
    assert bytes(frame) == expected and len(frame) == len(expected)

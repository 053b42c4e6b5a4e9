"""Truncated, oversized or garbage input gives a typed DecodeError naming message, version,
field and offset; nothing else leaks and nothing is allocated for a lying length."""

from __future__ import annotations

import contextlib
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.errors import (
    DecodeError,
    EncodeError,
    FrameTooLargeError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kwire.fuzz.strategies import message_strategy
from kwire.protocol import FrameBuffer, decode_request, encode_request
from kwire.protocol.messages.metadata import MetadataRequest, MetadataResponse
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.messages.share_fetch import ShareFetchRequest


def _share_fetch() -> ShareFetchRequest:
    return ShareFetchRequest(
        group_id="g", member_id="m", share_session_epoch=1, max_records=10, batch_size=5,
        topics=[ShareFetchRequest.FetchTopic(topic_id=uuid.UUID(int=7), partitions=[
            ShareFetchRequest.FetchPartition(partition_index=3, acknowledgement_batches=[
                ShareFetchRequest.AcknowledgementBatch(first_offset=1, last_offset=2, acknowledge_types=[4])])])],
    )


def test_every_truncation_is_a_decode_error_with_offset_and_field() -> None:
    raw = _share_fetch().encode(2)
    for cut in range(len(raw)):
        with pytest.raises(DecodeError) as info:
            ShareFetchRequest.decode(raw[:cut], 2)
        err = info.value
        assert err.message == "ShareFetchRequest" and err.api_version == 2 and err.api_key == 78
        assert err.offset is not None and 0 <= err.offset <= cut
        assert err.field
        assert "ShareFetchRequest v2" in str(err)


def test_trailing_bytes_are_an_error() -> None:
    raw = _share_fetch().encode(2)
    with pytest.raises(DecodeError, match="1 trailing bytes") as info:
        ShareFetchRequest.decode(raw + b"\0", 2)
    assert info.value.offset == len(raw)


def test_array_count_larger_than_input_is_rejected_before_allocation() -> None:
    # MetadataRequest v4: Topics int32 count 0x7fffffff with nothing behind it.
    raw = b"\x7f\xff\xff\xff" + b"\x01"
    with pytest.raises(DecodeError, match="count 2147483647 is larger") as info:
        MetadataRequest.decode(raw, 4)
    assert info.value.field == "Topics" and info.value.offset == 4


def test_string_length_past_end_is_rejected() -> None:
    # ProduceRequest v3: TransactionalId length 1000, 2 bytes follow.
    with pytest.raises(DecodeError, match="length 1000 runs past") as info:
        ProduceRequest.decode(b"\x03\xe8ab", 3)
    assert info.value.field == "TransactionalId"


def test_null_in_non_nullable_string_is_rejected() -> None:
    # MetadataResponse v1: Brokers[0].Host is not nullable.
    raw = b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01" + b"\xff\xff"
    with pytest.raises(DecodeError, match="non-nullable") as info:
        MetadataResponse.decode(raw, 1)
    assert info.value.field == "Host"


def test_invalid_utf8_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="UTF-8"):
        ProduceRequest.decode(b"\x00\x02\xff\xfe" + b"\x00" * 10, 3)


def test_overlong_varint_is_rejected() -> None:
    # ShareFetch v2 GroupId compact length as a 6-byte varint.
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        ShareFetchRequest.decode(b"\x80\x80\x80\x80\x80\x01", 2)


def test_negative_length_other_than_minus_one_is_rejected() -> None:
    with pytest.raises(DecodeError, match="invalid negative length -2"):
        ProduceRequest.decode(b"\xff\xfe", 3)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=64), st.sampled_from([(ShareFetchRequest, 2), (MetadataResponse, 12), (ProduceRequest, 9)]))
def test_garbage_gives_a_message_or_a_decode_error(garbage: bytes, case: tuple[type, int]) -> None:
    cls, version = case
    with contextlib.suppress(DecodeError):
        cls.decode(garbage, version)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_messages_never_leak_untyped_errors(data: st.DataObject) -> None:
    cls, version = data.draw(st.sampled_from([(ShareFetchRequest, 2), (MetadataResponse, 12), (ShareFetchRequest, 1)]))
    raw = bytearray(data.draw(message_strategy(cls, version)).encode(version))
    if raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        cls.decode(bytes(raw), version)


def test_encoding_a_field_the_version_lacks_is_an_error() -> None:
    msg = _share_fetch()
    msg.is_renew_ack = True
    with pytest.raises(EncodeError, match="IsRenewAck does not exist in version 1"):
        msg.encode(1)


def test_ignorable_field_is_dropped_silently_in_older_versions() -> None:
    msg = _share_fetch()
    msg.share_acquire_mode = 1  # "ignorable": true in the spec
    assert ShareFetchRequest.decode(msg.encode(1), 1).share_acquire_mode == 0


def test_wrong_types_are_encode_errors_naming_the_field() -> None:
    msg = _share_fetch()
    msg.share_session_epoch = "one"  # type: ignore[assignment]
    with pytest.raises(EncodeError) as info:
        msg.encode(2)
    assert "ShareSessionEpoch" in str(info.value)
    msg = _share_fetch()
    msg.max_wait_ms = 2**31
    with pytest.raises(EncodeError, match="MaxWaitMs"):
        msg.encode(2)


def test_unknown_version_and_api_key() -> None:
    with pytest.raises(UnsupportedVersionError, match="ShareFetchRequest has no version 3"):
        ShareFetchRequest.decode(b"", 3)
    with pytest.raises(UnknownApiKeyError):
        decode_request(b"\x7f\x00\x00\x00\x00\x00\x00\x01\x00\x00")


def test_frame_over_the_limit_is_rejected_before_buffering_it() -> None:
    fb = FrameBuffer(max_frame_bytes=1024)
    fb.feed(b"\x00\x00\x04\x01")
    with pytest.raises(FrameTooLargeError, match="1025 bytes exceeds the limit of 1024"):
        fb.next_frame()


def test_frame_buffer_whole_single_bytes_and_trailing_data() -> None:
    frames = [encode_request(_share_fetch(), 2, correlation_id=i) for i in range(3)]
    stream = b"".join(frames)
    fb = FrameBuffer()
    fb.feed(stream)
    assert [decode_request(p).correlation_id for p in fb.frames()] == [0, 1, 2]
    fb = FrameBuffer()
    got = []
    for b in stream:
        fb.feed(bytes([b]))
        got += fb.frames()
    assert len(got) == 3 and fb.pending == 0
    fb = FrameBuffer()
    fb.feed(frames[0] + frames[1][:5])
    assert len(fb.frames()) == 1 and fb.pending == 5

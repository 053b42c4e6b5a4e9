"""Tagged fields: known ones default when absent, unknown ones survive a round trip."""

from __future__ import annotations

from kwire.protocol.messages.fetch import FetchResponse
from kwire.protocol.messages.request_header import RequestHeader


def test_unknown_tags_are_kept_and_written_back_in_tag_order() -> None:
    hdr = RequestHeader(request_api_key=3, request_api_version=12, correlation_id=9, client_id="c",
                        unknown_tagged_fields=[(5, b"\x01\x02"), (200, b"")])
    raw = hdr.encode(2)
    # ... client id, then 2 tags: tag 5 size 2, tag 200 (two-byte varint) size 0.
    assert raw.endswith(b"\x02\x05\x02\x01\x02\xc8\x01\x00")
    back = RequestHeader.decode(raw, 2)
    assert back.unknown_tagged_fields == [(5, b"\x01\x02"), (200, b"")]
    assert back.encode(2) == raw


def test_client_id_keeps_the_int16_length_in_flexible_header_v2() -> None:
    raw = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=1, client_id="ab").encode(2)
    assert raw == b"\x00\x12\x00\x03\x00\x00\x00\x01" + b"\x00\x02ab" + b"\x00"


def test_known_tagged_field_written_only_when_not_default() -> None:
    part = FetchResponse.PartitionData(partition_index=1, records=b"")
    base = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])])
    plain = base.encode(12)
    part.diverging_epoch = FetchResponse.EpochEndOffset(epoch=4, end_offset=100)  # tag 0 in v12+
    tagged = base.encode(12)
    assert len(tagged) > len(plain)
    assert FetchResponse.decode(tagged, 12).responses[0].partitions[0].diverging_epoch.end_offset == 100
    assert FetchResponse.decode(plain, 12).responses[0].partitions[0].diverging_epoch == FetchResponse.EpochEndOffset()

"""The ``kwire`` command as users and other tools call it."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

from kwire.protocol import encode_request, encode_response
from kwire.protocol.messages.api_versions import ApiVersionsResponse
from kwire.protocol.messages.share_acknowledge import ShareAcknowledgeRequest


def kwire(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "kwire", *args], input=stdin, capture_output=True, timeout=60)


def _renew_ack() -> ShareAcknowledgeRequest:
    return ShareAcknowledgeRequest(
        group_id="g", member_id="m", share_session_epoch=2, is_renew_ack=True,
        topics=[ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=uuid.UUID(int=1), partitions=[
            ShareAcknowledgeRequest.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                ShareAcknowledgeRequest.AcknowledgementBatch(first_offset=5, last_offset=9, acknowledge_types=[4])])])],
        unknown_tagged_fields=[(9, b"\xaa")],
    )


def test_decode_prints_spec_names_and_encode_gives_the_bytes_back() -> None:
    raw = _renew_ack().encode(2)
    out = kwire("decode", "--api-key", "79", "--api-version", "2", "--request", "--hex", stdin=raw.hex().encode())
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["IsRenewAck"] is True
    assert doc["Topics"][0]["TopicId"] == "00000000-0000-0000-0000-000000000001"
    assert doc["Topics"][0]["Partitions"][0]["AcknowledgementBatches"][0]["AcknowledgeTypes"] == [4]
    assert doc["_unknown_tagged_fields"] == {"9": "aa"}
    back = kwire("encode", "--api-key", "79", "--api-version", "2", "--request", stdin=out.stdout)
    assert back.returncode == 0, back.stderr
    assert back.stdout == raw


def test_decode_frame_with_header_and_response_to() -> None:
    req = encode_request(_renew_ack(), 2, correlation_id=42, client_id="cli")
    out = kwire("decode", "--frame", stdin=req)
    doc = json.loads(out.stdout)
    assert (doc["api_key"], doc["api_version"], doc["header_version"]) == (79, 2, 2)
    assert doc["header"]["CorrelationId"] == 42 and doc["header"]["ClientId"] == "cli"
    resp = encode_response(ApiVersionsResponse(error_code=35), 4, correlation_id=7)
    out = kwire("decode", "--frame", "--response-to", "18:4", stdin=resp)
    doc = json.loads(out.stdout)
    assert doc["header_version"] == 0 and doc["body"]["ErrorCode"] == 35


def test_apis_lists_every_supported_key() -> None:
    out = kwire("apis", "--json")
    rows = {r["api_key"]: r for r in json.loads(out.stdout)}
    assert rows[78]["name"] == "ShareFetch" and (rows[78]["min_version"], rows[78]["max_version"]) == (1, 2)
    assert rows[26]["name"] == "EndTxn"
    assert 4 not in rows  # LeaderAndIsr was removed upstream
    assert "ShareAcknowledge" in kwire("apis").stdout.decode()


def test_errors_are_one_line_without_traceback() -> None:
    out = kwire("decode", "--api-key", "79", "--api-version", "2", "--request", "--hex", stdin=b"0001")
    assert out.returncode != 0
    err = out.stderr.decode()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "ShareAcknowledgeRequest v2" in err and "offset" in err
    assert kwire("decode", "--api-key", "999", "--api-version", "0", "--request", stdin=b"").returncode != 0
    bad = kwire("encode", "--api-key", "79", "--api-version", "2", "--request", stdin=b'{"Nope": 1}')
    assert bad.returncode != 0 and b"unknown field 'Nope'" in bad.stderr

"""The ``kwire`` command as users and other tools call it."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

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


def _frame_files() -> list[Path]:
    root = Path(__file__).resolve().parent.parent / "fixtures" / "frames"
    out = []
    for p in sorted(root.rglob("*.bin")):
        data = p.read_bytes()
        if len(data) >= 4 and int.from_bytes(data[:4], "big") == len(data) - 4:
            out.append(p)
    return out


def test_decode_frame_pipes_into_encode_frame_byte_for_byte(tmp_path: Path) -> None:
    """`kwire decode --frame F | kwire encode --frame` gives F back, for every size-prefixed request
    fixture; a response frame decodes with its request frame (--request-frame) and comes back too."""
    frames = _frame_files()
    requests = [p for p in frames if p.name.startswith("request")]
    assert requests
    for p in requests:
        decoded = subprocess.run([sys.executable, "-m", "kwire", "decode", "--frame", str(p)], capture_output=True,
                                 check=True)
        again = subprocess.run([sys.executable, "-m", "kwire", "encode", "--frame"], input=decoded.stdout,
                               capture_output=True, check=True)
        assert again.stdout == p.read_bytes(), p
    pairs = [(p, p.with_name(p.name.replace("response", "request", 1))) for p in frames
             if p.name.startswith("response") and p.with_name(p.name.replace("response", "request", 1)).exists()]
    for resp, req in pairs:
        decoded = subprocess.run([sys.executable, "-m", "kwire", "decode", "--frame", "--request-frame", str(req),
                                  str(resp)], capture_output=True, check=True)
        src = tmp_path / "r.json"
        src.write_bytes(decoded.stdout)
        again = subprocess.run([sys.executable, "-m", "kwire", "encode", "--frame", str(src)], capture_output=True,
                               check=True)
        assert again.stdout == resp.read_bytes(), resp

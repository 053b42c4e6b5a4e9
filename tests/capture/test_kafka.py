"""Kafka exchanges out of captures: reassembly, resync, pairing, and the damage the reader survives."""

from __future__ import annotations

import io
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kwire.capture import PcapngWriter, TcpFlow, read_kafka_exchanges
from kwire.protocol import decode_response

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"


def _read(name: str):  # type: ignore[no-untyped-def]
    return read_kafka_exchanges((FIXTURES / name).read_bytes())


def _key(ex):  # type: ignore[no-untyped-def]
    return (ex.conn_id, ex.correlation_id, ex.api_key, ex.api_version,
            ex.request.payload if ex.request else None, ex.response.payload if ex.response else None)


def test_clean_capture_pairs_every_request_with_its_response() -> None:
    exchanges, issues = _read("clients.pcapng")
    assert issues == []
    assert len(exchanges) == 23
    assert all(ex.request is not None and ex.response is not None for ex in exchanges)
    for ex in exchanges:
        assert decode_response(ex.response.payload, ex.api_key, ex.api_version).correlation_id == ex.correlation_id
    assert len({ex.conn_id for ex in exchanges}) == 5
    assert {ex.server for ex in exchanges} == {"127.0.0.1:9092"}


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark (Debian package) not installed")
def test_requests_match_what_tshark_dissects() -> None:
    """tshark reassembles TCP and dissects Kafka independently (api keys <= 47 only)."""
    out = subprocess.run(
        ["tshark", "-r", str(FIXTURES / "clients.pcapng"), "-Y", "kafka.request_frame || kafka.response_frame || kafka",
         "-T", "fields", "-E", "occurrence=f", "-e", "tcp.srcport", "-e", "kafka.api_key", "-e", "kafka.api_version",
         "-e", "kafka.correlation_id", "-e", "kafka.client_id"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    theirs = Counter()
    for line in out.splitlines():
        port, key, version, corr, cid = line.split("\t")
        if port != "9092" and key:  # requests carry the api key in the header
            theirs[(port, int(key), int(version), int(corr), cid)] += 1
    exchanges, _ = _read("clients.pcapng")
    from kwire.protocol import decode_request

    ours = Counter((ex.client.rsplit(":", 1)[1], ex.api_key, ex.api_version, ex.correlation_id,
                    decode_request(ex.request.payload).client_id) for ex in exchanges)
    assert ours == theirs


def test_retransmitted_and_reordered_segments_change_nothing_but_are_reported() -> None:
    clean, _ = _read("clients.pcapng")
    damaged, issues = _read("retransmission.pcapng")
    assert sorted(map(_key, damaged)) == sorted(map(_key, clean))
    assert [i.kind for i in issues] == ["retransmission"]
    assert issues[0].direction == "request" and issues[0].nbytes == 1448


def test_a_connection_caught_mid_stream_resyncs_on_the_next_request() -> None:
    clean, _ = _read("clients.pcapng")
    exchanges, issues = _read("mid_stream.pcapng")
    kinds = Counter(i.kind for i in issues)
    assert kinds["mid_stream"] == 2 and kinds["resync"] >= 1
    producer = [ex for ex in exchanges if ex.conn_id.startswith("127.0.0.1:40002")]
    # only the small Produce after the cut survives, with its response paired by correlation id
    assert [(ex.api_key, ex.request is not None, ex.response is not None) for ex in producer] == [(0, True, True)]
    want = next(ex for ex in clean if _key(ex)[1:] == _key(producer[0])[1:])
    assert want.request.payload == producer[0].request.payload
    other = [_key(ex) for ex in exchanges if not ex.conn_id.startswith("127.0.0.1:40002")]
    assert sorted(other) == sorted(_key(ex) for ex in clean if not ex.conn_id.startswith("127.0.0.1:40002"))


def test_a_capture_torn_inside_a_frame_reports_the_partial_frame() -> None:
    exchanges, issues = _read("torn_tail.pcapng")
    assert [(i.kind, i.direction) for i in issues] == [("truncated", "request")]
    assert all(ex.request is not None and ex.response is not None for ex in exchanges)


def _frames_of(name: str) -> list[tuple[bytes, bytes]]:
    exchanges, _ = _read(name)
    return [(ex.request.payload, ex.response.payload) for ex in exchanges if ex.conn_id.startswith("127.0.0.1:40004")]


def _size(b: bytes) -> bytes:
    return len(b).to_bytes(4, "big") + b


def test_a_gap_mid_request_is_reported_and_the_next_exchange_still_decodes() -> None:
    pairs = _frames_of("clients.pcapng")
    flow = TcpFlow("10.0.0.1:50000", "10.0.0.2:9092", mss=40)
    pkts = flow.handshake(1_000_000)
    (r1, a1), (r2, a2), (r3, a3) = pairs[:3]
    pkts += flow.send(True, _size(r1), 2_000_000) + flow.send(False, _size(a1), 3_000_000)
    head = _size(r2)[:20]
    pkts += flow.send(True, head, 4_000_000)
    flow.skip(True, len(_size(r2)) - 20)  # the rest of request 2 was never captured
    pkts += flow.send(False, _size(a2), 5_000_000)
    pkts += flow.send(True, _size(r3), 6_000_000) + flow.send(False, _size(a3), 7_000_000)
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        for ts, frame in pkts:
            w.write_packet(ts, frame)
    exchanges, issues = read_kafka_exchanges(buf.getvalue())
    kinds = [i.kind for i in issues]
    assert "gap" in kinds
    gap = next(i for i in issues if i.kind == "gap")
    assert (gap.direction, gap.nbytes) == ("request", len(_size(r2)) - 20)
    done = [(ex.request.payload if ex.request else None, ex.response.payload if ex.response else None) for ex in exchanges]
    assert (r1, a1) in done and (r3, a3) in done
    assert (None, a2) in done  # its request was lost: the answer is reported unpaired


def test_connection_shards_partition_the_exchanges() -> None:
    data = (FIXTURES / "clients.pcapng").read_bytes()
    whole, _ = read_kafka_exchanges(data)
    parts = [read_kafka_exchanges(data, shard=(k, 3))[0] for k in range(3)]
    assert sorted(_key(e) for p in parts for e in p) == sorted(map(_key, whole))
    conns = [{e.conn_id for e in p} for p in parts]
    assert sum(len(c) for c in conns) == len(set().union(*conns))


def test_a_retransmitted_response_segment_is_dropped_once_delivered() -> None:
    (r1, a1), (r2, a2) = _frames_of("clients.pcapng")[:2]
    flow = TcpFlow("10.0.0.1:50001", "10.0.0.2:9092", mss=30)
    pkts = flow.handshake(1_000_000)
    pkts += flow.send(True, _size(r1), 2_000_000) + flow.send(False, _size(a1), 3_000_000)
    pkts += flow.retransmit(False, -1, 3_500_000)
    pkts += flow.send(True, _size(r2), 4_000_000) + flow.send(False, _size(a2), 5_000_000)
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        for ts, frame in pkts:
            w.write_packet(ts, frame)
    exchanges, issues = read_kafka_exchanges(buf.getvalue())
    assert [(i.kind, i.direction) for i in issues] == [("retransmission", "response")]
    assert [(e.request.payload, e.response.payload) for e in exchanges] == [(r1, a1), (r2, a2)]

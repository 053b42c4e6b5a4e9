"""Recording real client traffic, exporting it as golden frames, replaying it."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer

from kwire.control import Broker, BrokerConfig
from kwire.recording import export_exchanges, load_fixture, replay


def test_record_export_and_replay(tmp_path: Path) -> None:
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("rec", 1)
        b.start_recording()
        p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "recorder-test"})
        p.produce("rec", b"value", key=b"key")
        assert p.flush(20) == 0
        exchanges = b.recorded()
        assert {e.api_key for e in exchanges} >= {18, 3, 0}
        paths = export_exchanges(exchanges, tmp_path)
        produce_reqs = [load_fixture(p) for p in paths if "produce" in p.parts and p.stem.endswith("request")]
        assert produce_reqs and "recorder-test" in produce_reqs[0].provenance
        fx = produce_reqs[0]
        # The sidecar value decodes from the body (golden check) and the frame replays.
        from kwire.protocol.registry import request_class

        assert request_class(0).decode(fx.body, fx.api_version).to_json(fx.api_version) == fx.value
        [resp] = replay([fx], b.bootstrap)
        assert resp.responses[0].partition_responses[0].base_offset == 1  # appended again after offset 0


def test_rejected_requests_are_recorded_raw_and_left_out_of_the_export(tmp_path: Path) -> None:
    """Every request is recorded, also those a broker cannot decode or does not serve."""
    import struct

    from kwire.protocol import encode_request
    from kwire.protocol.messages.api_versions import ApiVersionsRequest
    from tests.broker.helpers import make_core

    core, _ = make_core()
    core.recording = []
    ok = encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                        correlation_id=1, size_prefix=False)
    too_new = struct.pack(">hhi", 18, 99, 2) + b"\x00\x00"
    unknown_key = struct.pack(">hhi", 9999, 0, 3) + b"\x00\x00"
    garbage_body = struct.pack(">hhih", 3, 12, 4, -1) + b"\xff" * 3
    outcomes = [core.handle(core.connect(1), p) for p in (ok, too_new, unknown_key, garbage_body, b"\x00")]
    assert [o.kind for o in outcomes] == ["send", "send", "close", "close", "close"]
    rec = core.recording
    assert [(e.api_key, e.api_version, e.correlation_id) for e in rec] == [
        (18, 3, 1), (18, 99, 2), (9999, 0, 3), (3, 12, 4), (-1, -1, -1)]
    assert rec[0].request is not None and all(e.request is None for e in rec[1:])
    assert [bytes(e.request_bytes) for e in rec[1:]] == [too_new, unknown_key, garbage_body, b"\x00"]
    assert rec[1].response_bytes == outcomes[1].data and rec[1].closed is None  # the KIP-511 fallback
    assert all(e.closed for e in rec[2:])
    written = export_exchanges(rec, tmp_path)
    assert {p.parent.parent.name for p in written} == {"api_versions"} and all("v3" in p.parts for p in written)

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

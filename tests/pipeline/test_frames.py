"""kwire-frames: rows from kwire's own recording exports match the rows of the same traffic as pcapng."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from kwire.capture import write_exchanges_pcapng
from kwire.control import Broker, BrokerConfig
from kwire.pipeline.frames import recording_rows
from kwire.pipeline.traffic import iter_traffic
from kwire.recording import export_exchanges

_SAME = ("correlation_id", "api_key", "api_name", "api_version", "client_id", "client_software_name",
         "request_size", "response_size", "error_code", "error_codes", "decode_status")


@pytest.fixture(scope="module")
def recorded() -> list[Any]:
    from kafka import KafkaProducer

    with Broker(BrokerConfig()) as b:
        b.create_topic("fr", partitions=1)
        b.start_recording()
        p = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="frames-client")
        p.send("fr", b"v" * 500)
        p.flush()
        p.close()
        return b.recorded()


def test_export_rows_equal_capture_rows(recorded: list[Any], tmp_path: Path) -> None:
    export_exchanges(recorded, tmp_path / "export")
    buf = io.BytesIO()
    write_exchanges_pcapng(recorded, buf)
    (tmp_path / "c.pcapng").write_bytes(buf.getvalue())
    from_export = sorted(tuple(repr(r[k]) for k in _SAME) for r in recording_rows(tmp_path / "export"))
    from_pcap = sorted(tuple(repr(r[k]) for k in _SAME) for r in iter_traffic(tmp_path / "c.pcapng"))
    assert from_export == from_pcap
    assert len(from_export) == len(recorded)
    rows = list(recording_rows(tmp_path / "export"))
    assert {r["server"] for r in rows} == {"broker-1"}
    assert all(r["latency_us"] is None for r in rows)


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_frames_source_gives_the_plain_rows(spark: Any, recorded: list[Any], tmp_path: Path) -> None:
    import json

    export_exchanges(recorded, tmp_path / "export")
    plain = list(recording_rows(tmp_path / "export"))
    got = spark.read.format("kwire-frames").load(str(tmp_path / "export")).toArrow().to_pylist()
    canon = lambda rows: sorted(json.dumps(r, sort_keys=True) for r in rows)  # noqa: E731
    assert canon(got) == canon(plain)

"""Recorded broker exchanges -> pcapng -> the same frames back, paired the same way."""

from __future__ import annotations

import io

from kwire.capture import read_kafka_exchanges, write_exchanges_pcapng
from kwire.control import Broker, BrokerConfig


def test_a_recording_round_trips_through_pcapng() -> None:
    from kafka import KafkaProducer

    with Broker(BrokerConfig(brokers=2)) as b:
        b.create_topic("rt", partitions=2)
        b.start_recording()
        p = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="rt-client")
        for i in range(4):
            p.send("rt", value=b"x" * (1000 * i), partition=i % 2)
        p.flush()
        p.close()
        recorded = b.recorded()
    buf = io.BytesIO()
    packets = write_exchanges_pcapng(recorded, buf)
    assert packets > 3 * len(recorded)
    exchanges, issues = read_kafka_exchanges(buf.getvalue())
    assert issues == []
    want = sorted((r.api_key, r.api_version, r.correlation_id, r.request_bytes, r.response_bytes) for r in recorded)
    got = sorted((e.api_key, e.api_version, e.correlation_id, e.request.payload,
                  e.response.payload if e.response else None) for e in exchanges)
    assert got == want
    # one TCP connection per broker connection; brokers on consecutive ports from 9092
    assert len({e.conn_id for e in exchanges}) == len({(r.broker_id, r.conn_id) for r in recorded})
    assert {e.server.rsplit(":", 1)[1] for e in exchanges} <= {"9092", "9093"}

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


def test_a_long_poll_keeps_its_wait_in_the_capture() -> None:
    """A Fetch parked for 500 ms of broker time answers 500 ms after its request in the capture
    (``response_at_ms``); an immediate answer follows its request within a millisecond."""
    import threading

    from kwire.client import WireClient
    from kwire.clock import ManualClock
    from kwire.protocol.messages.fetch import FetchRequest
    from kwire.protocol.messages.metadata import MetadataRequest

    with Broker(BrokerConfig(log_connections=False), clock=ManualClock()) as b:
        b.create_topic("lp", partitions=1)
        b.start_recording()
        with WireClient(b.bootstrap) as c:
            c.request(MetadataRequest(topics=None))
            fetch = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, topics=[
                FetchRequest.FetchTopic(topic="lp", partitions=[FetchRequest.FetchPartition(
                    partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                    partition_max_bytes=1 << 20)])])
            t = threading.Thread(target=c.request, args=(fetch,), kwargs={"version": 11})
            t.start()
            b.wait_for_parked("Fetch", timeout=10)
            b.advance(500)
            t.join(10)
        recorded = b.recorded()
    buf = io.BytesIO()
    write_exchanges_pcapng(recorded, buf)
    exchanges, _ = read_kafka_exchanges(buf.getvalue())
    waits = {e.api_key: e.response.first_ts_ns - e.request.last_ts_ns for e in exchanges
             if e.response is not None and e.request is not None}
    assert abs(waits[1] - 500_000_000) < 1_000_000  # Fetch (the packets of one frame are spaced a little)
    assert waits[3] < 1_000_000  # Metadata

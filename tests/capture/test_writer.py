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


def _long_poll_recording() -> list:
    """A Metadata answered at once, then a Fetch parked until the test advances the broker clock 500 ms."""
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
        return b.recorded()


def _waits(recorded: list) -> tuple[dict[int, int], list[str]]:
    from kwire.capture.pcap import section_comments

    buf = io.BytesIO()
    write_exchanges_pcapng(recorded, buf, comment="kwire broker --record")
    exchanges, _ = read_kafka_exchanges(buf.getvalue())
    return ({e.api_key: e.response.first_ts_ns - e.request.last_ts_ns for e in exchanges
             if e.response is not None and e.request is not None}, section_comments(buf.getvalue()))


def test_wire_times_give_real_latency() -> None:
    """The broker's I/O edge stamps each exchange in monotonic µs: the capture puts every request and
    answer at its real time, so the latency it shows is the broker's real answer time (the parked
    Fetch waited as long as the test took to advance the clock, not 500 ms); the section comment
    says so (kwire-timestamps=wire-us)."""
    from kwire.capture.writer import WIRE_TIMESTAMPS, has_broker_clock_timestamps

    recorded = _long_poll_recording()
    assert all(r.at_us is not None and r.response_at_us is not None for r in recorded)
    waits, comments = _waits(recorded)
    real = {r.api_key: (r.response_at_us - r.at_us) * 1000 for r in recorded}
    for key in (1, 3):
        assert abs(waits[key] - real[key]) < 50_000, key  # frame packets are spaced a few µs apart
    assert comments == [f"kwire broker --record; {WIRE_TIMESTAMPS}"]
    assert not has_broker_clock_timestamps(comments)


def test_without_wire_times_the_broker_clock_places_packets() -> None:
    """Exchanges without wire times (an older recording) are placed on the broker clock: the long
    poll answers 500 ms after its request, an immediate answer within a millisecond, and the
    capture says its timestamps are broker ms (no latency)."""
    import dataclasses

    from kwire.capture.writer import BROKER_TIMESTAMPS, has_broker_clock_timestamps

    recorded = [dataclasses.replace(r, at_us=None, response_at_us=None) for r in _long_poll_recording()]
    waits, comments = _waits(recorded)
    assert abs(waits[1] - 500_000_000) < 1_000_000  # Fetch (the packets of one frame are spaced a little)
    assert waits[3] < 1_000_000  # Metadata
    assert comments == [f"kwire broker --record; {BROKER_TIMESTAMPS}"]
    assert has_broker_clock_timestamps(comments) and has_broker_clock_timestamps(["kwire broker --record"])

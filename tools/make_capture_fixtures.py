"""Make the committed captures in fixtures/captures/: real clients recorded by the kwire broker and
written as pcapng through kwire.capture, plus damaged variants (a capture that starts
mid-connection, a retransmitted and a reordered segment, a torn tail).

Usage: python tools/make_capture_fixtures.py [OUT_DIR]   (default fixtures/captures)
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from kwire.capture import PcapngWriter, iter_packets, parse_tcp, write_exchanges_pcapng
from kwire.control import Broker, BrokerConfig


def record_clients() -> list:
    from kafka import KafkaConsumer, KafkaProducer

    with Broker(BrokerConfig(brokers=1)) as b:
        b.create_topic("orders", partitions=2)
        b.start_recording()
        p = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="fixture-producer", linger_ms=5)
        for i in range(6):
            p.send("orders", key=f"k{i}".encode(), value=(f"order-{i}-".encode() * 400), headers=[("h", b"v")])
        p.flush()
        for i in range(3):  # a second, small Produce after the big one: a resync point
            p.send("orders", key=f"s{i}".encode(), value=f"small-{i}".encode())
        p.flush()
        p.close()
        c = KafkaConsumer("orders", bootstrap_servers=b.bootstrap, group_id="fixture-group", client_id="fixture-consumer",
                          auto_offset_reset="earliest", consumer_timeout_ms=8000)
        for got, _ in enumerate(c, 1):
            if got == 6:
                break
        c.commit()
        c.close()
        return b.recorded()


def packets(data: bytes) -> list[tuple[int, bytes]]:
    return [(ts, bytes(frame)) for ts, _, frame in iter_packets(data)]


def write(path: Path, pkts: list[tuple[int, bytes]], comment: str) -> None:
    with PcapngWriter(path, comment=comment) as w:
        for ts, frame in pkts:
            w.write_packet(ts, frame)


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def data_packets(pkts: list[tuple[int, bytes]], client_port: int) -> list[int]:
    """Indexes of the packets carrying data from the client on ``client_port`` to the broker."""
    out = []
    for i, (_, frame) in enumerate(pkts):
        seg = parse_tcp(1, memoryview(frame))
        if seg is not None and len(seg.payload) and _port(seg.src) == client_port:
            out.append(i)
    return out


def on_port(frame: bytes, port: int) -> bool:
    seg = parse_tcp(1, memoryview(frame))
    return seg is not None and port in (_port(seg.src), _port(seg.dst))


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "fixtures/captures")
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    exchanges = record_clients()
    write_exchanges_pcapng(exchanges, buf, comment="kafka-python 3.0.12 producer and consumer against the kwire broker")
    clean = buf.getvalue()
    (out / "clients.pcapng").write_bytes(clean)
    pkts = packets(clean)
    # the producer's connection that carries Produce: the biggest client->broker packet (the first
    # full-MSS segment of a multi-segment request)
    to_broker = []
    for i, (_, f) in enumerate(pkts):
        seg = parse_tcp(1, memoryview(f))
        if seg is not None and _port(seg.dst) < 10000:
            to_broker.append((len(f), -i))
    big = -max(to_broker)[1]
    seg = parse_tcp(1, memoryview(pkts[big][1]))
    assert seg is not None
    port = _port(seg.src)
    mine = data_packets(pkts, port)
    # mid-stream: the capture starts at the second segment of the big request
    start = mine[mine.index(big) + 1]
    keep = [p for i, p in enumerate(pkts) if i >= start or not on_port(p[1], port)]
    write(out / "mid_stream.pcapng", keep, "clients.pcapng with one connection's first packets missing")
    # retransmission + reordering: the big request's first segment is sent again, its next two swapped
    rt = list(pkts)
    i = mine.index(big)
    a, b2 = mine[i + 1], mine[i + 2]
    rt[a], rt[b2] = rt[b2], rt[a]
    rt.insert(b2 + 1, pkts[big])
    write(out / "retransmission.pcapng", rt, "clients.pcapng with a retransmitted and two reordered segments")
    # torn tail: the capture stops inside the big request (its second segment is the last packet,
    # and the file ends in the middle of that packet's block)
    last = mine[mine.index(big) + 1]
    torn = io.BytesIO()
    with PcapngWriter(torn, comment="clients.pcapng cut inside a request, file torn mid-packet") as w:
        for ts, frame in pkts[: last + 1]:
            w.write_packet(ts, frame)
    data = torn.getvalue()
    (out / "torn_tail.pcapng").write_bytes(data[: len(data) - len(pkts[last][1]) // 2])
    print(f"wrote {out}: {len(exchanges)} exchanges, {len(pkts)} packets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

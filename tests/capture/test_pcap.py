"""pcap/pcapng reading and writing, checked against dpkt (an independent implementation)."""

from __future__ import annotations

import io
from pathlib import Path

import dpkt
import pytest

from kwire.capture import PcapngWriter, TcpFlow, iter_packets, parse_tcp
from kwire.capture.pcap import LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_RAW
from kwire.errors import CaptureError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"


def _flow_packets() -> list[tuple[int, bytes]]:
    flow = TcpFlow("10.1.2.3:51000", "10.9.8.7:9092", mss=100)
    pkts = flow.handshake(1_700_000_000_123_456_789)
    pkts += flow.send(True, bytes(range(256)) * 2, 1_700_000_000_200_000_000)
    pkts += flow.send(False, b"answer" * 30, 1_700_000_000_300_000_000)
    pkts += flow.close(1_700_000_000_400_000_000)
    return pkts


def test_pcapng_writer_output_reads_back_identically_in_dpkt() -> None:
    pkts = _flow_packets()
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        for ts, frame in pkts:
            w.write_packet(ts, frame)
    theirs = list(dpkt.pcapng.Reader(io.BytesIO(buf.getvalue())))
    assert [bytes(f) for _, f in theirs] == [f for _, f in pkts]
    # dpkt gives float seconds (about 0.2 µs of precision at today's epoch)
    assert all(abs(t * 1e9 - ts) < 1000 for (t, _), (ts, _) in zip(theirs, pkts, strict=True))
    ours = list(iter_packets(buf.getvalue()))
    assert [(ts, bytes(f)) for ts, _, f in ours] == pkts


def test_tcp_fields_and_checksums_agree_with_dpkt() -> None:
    for _, frame in _flow_packets():
        eth = dpkt.ethernet.Ethernet(frame)
        ip, tcp = eth.data, eth.data.data
        seg = parse_tcp(LINKTYPE_ETHERNET, memoryview(frame))
        assert seg is not None
        assert (seg.seq, seg.ack, seg.flags, bytes(seg.payload)) == (tcp.seq, tcp.ack, tcp.flags, bytes(tcp.data))
        assert seg.src.endswith(f":{tcp.sport}") and seg.dst.endswith(f":{tcp.dport}")
        # dpkt recomputes checksums when packed with them zeroed: ours must match
        want_ip, want_tcp = ip.sum, tcp.sum
        ip.sum = 0
        tcp.sum = 0
        ip.data = tcp
        again = dpkt.ip.IP(bytes(ip))
        assert (again.sum, again.data.sum) == (want_ip, want_tcp)


@pytest.mark.parametrize("nano", [False, True])
def test_classic_pcap_from_dpkt_reads_in_either_resolution(nano: bool) -> None:
    pkts = _flow_packets()
    buf = io.BytesIO()
    w = dpkt.pcap.Writer(buf, nano=nano, linktype=dpkt.pcap.DLT_EN10MB)
    for ts, frame in pkts:
        w.writepkt(frame, ts=ts / 1e9)
    got = list(iter_packets(buf.getvalue()))
    assert [bytes(f) for _, _, f in got] == [f for _, f in pkts]
    # float seconds in dpkt's writer carry ~0.25 µs of error at today's epoch
    assert all(abs(ts - want) <= 1000 for (ts, _, _), (want, _) in zip(got, pkts, strict=True))


def test_raw_ip_and_linux_sll_link_layers_give_the_same_segment() -> None:
    _, frame = _flow_packets()[3]
    ip_packet = frame[14:]
    raw = parse_tcp(LINKTYPE_RAW, memoryview(ip_packet))
    sll = parse_tcp(LINKTYPE_LINUX_SLL, memoryview(b"\0" * 14 + b"\x08\x00" + ip_packet))
    eth = parse_tcp(LINKTYPE_ETHERNET, memoryview(frame + b"\0" * 6))  # Ethernet padding is ignored
    assert raw is not None and sll is not None and eth is not None
    assert bytes(raw.payload) == bytes(sll.payload) == bytes(eth.payload) != b""


def test_not_a_capture_is_a_typed_error() -> None:
    with pytest.raises(CaptureError, match="not a pcap"):
        list(iter_packets(b"hello world, not a capture"))


def _capture(fmt: str, pkts: list[tuple[int, bytes]]) -> bytes:
    """Ethernet packets as a pcapng file (kwire's writer) or a classic nanosecond pcap (dpkt's)."""
    buf = io.BytesIO()
    if fmt == "pcapng":
        with PcapngWriter(buf) as w:
            for ts, frame in pkts:
                w.write_packet(ts, frame)
    else:
        pw = dpkt.pcap.Writer(buf, nano=True, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, frame in pkts:
            pw.writepkt(frame, ts=ts / 1e9)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["pcapng", "pcap"])
def test_a_capture_torn_mid_packet_yields_the_whole_packets_before(fmt: str) -> None:
    pkts = _flow_packets()
    data = _capture(fmt, pkts)
    torn = data[: len(data) - len(pkts[-1][1]) // 2]
    assert [bytes(f) for _, _, f in iter_packets(torn)] == [f for _, f in pkts[:-1]]


def test_fixture_is_readable_by_dpkt_with_the_same_payloads() -> None:
    data = (FIXTURES / "clients.pcapng").read_bytes()
    theirs = [bytes(dpkt.ethernet.Ethernet(f).data.data.data) for _, f in dpkt.pcapng.Reader(io.BytesIO(data))]
    ours = [bytes(s.payload) for _, lt, f in iter_packets(data) if (s := parse_tcp(lt, f)) is not None]
    assert ours == theirs


def _mixed_frames() -> list[tuple[int, bytes]]:
    """Two connections, plus one frame the skip filter cannot judge (IPv4 with options) and a
    VLAN-tagged one: the filter must let those through whatever it says."""
    pkts = _flow_packets()
    other = TcpFlow("10.1.2.4:51001", "10.9.8.7:9092", mss=100)
    pkts += other.handshake(1_700_000_001_000_000_000) + other.send(True, b"x" * 250, 1_700_000_001_100_000_000)
    eth = dpkt.ethernet.Ethernet(pkts[-1][1])
    eth.data.opts = b"\x01\x01\x01\x00"  # NOP NOP NOP EOL: ihl 6
    eth.data.hl = 6
    eth.data.len += 4
    eth.data.sum = 0
    pkts.append((1_700_000_001_200_000_000, bytes(eth)))
    tagged = pkts[3][1][:12] + b"\x81\x00\x00\x07" + pkts[3][1][12:]
    pkts.append((1_700_000_001_300_000_000, tagged))
    return pkts


@pytest.mark.parametrize("fmt", ["pcapng", "pcap"])
def test_the_skip_filter_drops_exactly_the_judged_packets_it_names(fmt: str) -> None:
    pkts = _mixed_frames()
    data = _capture(fmt, pkts)
    asked: list[bytes] = []

    def skip(key: bytes) -> bool:
        asked.append(key)
        return key[0:4] == bytes([10, 1, 2, 4]) or key[4:8] == bytes([10, 1, 2, 4])  # the second connection

    kept = [bytes(f) for _, _, f in iter_packets(data, skip=skip)]
    segs = [parse_tcp(LINKTYPE_ETHERNET, memoryview(f)) for _, f in pkts]
    second = {i for i, s in enumerate(segs) if s is not None and "10.1.2.4" in (s.src + s.dst)}
    judged = second - {len(pkts) - 2}  # the ihl-6 frame cannot be judged by its raw bytes
    assert kept == [f for i, (_, f) in enumerate(pkts) if i not in judged]
    assert len(asked) == len(set(asked)) == 4  # each direction of each connection asked once
    assert kept[-1] == pkts[-1][1] and segs[-1] is not None  # the VLAN frame still parses


def test_the_fast_path_and_the_general_parser_agree_with_dpkt() -> None:
    for _, frame in _mixed_frames():
        eth = dpkt.ethernet.Ethernet(frame)
        ip = eth.data
        if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
            seg = parse_tcp(LINKTYPE_ETHERNET, memoryview(frame))
            assert seg is not None
            assert (seg.seq, seg.ack, seg.flags, bytes(seg.payload)) == (ip.data.seq, ip.data.ack, ip.data.flags,
                                                                         bytes(ip.data.data))
    # fragments and other protocols are not TCP segments
    frag = dpkt.ethernet.Ethernet(_flow_packets()[3][1])
    frag.data.mf = 1
    frag.data.sum = 0
    assert parse_tcp(LINKTYPE_ETHERNET, memoryview(bytes(frag))) is None
    udp = dpkt.ethernet.Ethernet(_flow_packets()[3][1])
    udp.data.p = dpkt.ip.IP_PROTO_UDP
    assert parse_tcp(LINKTYPE_ETHERNET, memoryview(bytes(udp))) is None

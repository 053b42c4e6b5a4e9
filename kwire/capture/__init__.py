"""Packet captures: pcap/pcapng reading and writing, TCP reassembly, Kafka exchanges out of TCP.

Imports only ``kwire.protocol`` and ``kwire.errors``; shared by the pipeline, ``kwire decode
--pcap`` and ``kwire record --to FILE.pcapng``.
"""

from kwire.capture.kafka import (
    CaptureIssue,
    KafkaCaptureReader,
    WireExchange,
    WireFrame,
    connection_shard,
    iter_kafka_exchanges,
    read_kafka_exchanges,
)
from kwire.capture.pcap import PcapngWriter, TcpFlow, TcpSegment, iter_packets, parse_tcp
from kwire.capture.writer import write_exchanges_pcapng

__all__ = [
    "CaptureIssue",
    "KafkaCaptureReader",
    "PcapngWriter",
    "TcpFlow",
    "TcpSegment",
    "WireExchange",
    "WireFrame",
    "connection_shard",
    "iter_kafka_exchanges",
    "iter_packets",
    "parse_tcp",
    "read_kafka_exchanges",
    "write_exchanges_pcapng",
]

"""``kwire dlq inspect`` and ``kwire dlq replay``: dead-letter topics read from a live broker (over
kwire's codec) and from a data dir, the header conventions of KIP-1191, Kafka Connect, Spring Kafka
and x-original-*, and an idempotent replay."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kwire import dlq_tools
from kwire.client import WireClient
from kwire.control import Broker, BrokerConfig


def make_dlq(b: Broker, copy: bool = True) -> None:
    """A share group's real DLQ records (two REJECTs through the share partition) plus records in
    the other conventions, all in one topic 'dlq.g'; ``copy`` False leaves the payload out (DLQ-8)."""
    from kwire.broker.core.share_coordinator import share_coordinator
    from kwire.broker.core.share_partition import AckBatch

    b.create_topic("orders", partitions=2)
    b.create_topic("dlq.g", partitions=1, configs={"errors.deadletterqueue.group.enable": "true"})
    b.set_config("group", "g", "share.auto.offset.reset", "earliest")
    b.set_config("group", "g", "errors.deadletterqueue.topic.name", "dlq.g")
    b.set_config("group", "g", "errors.deadletterqueue.copy.record.enable", "true" if copy else "false")
    b.produce("orders", [b"o1", b"o2"], partition=1, keys=[b"k1", b"k2"])

    def reject() -> None:
        sp = share_coordinator(b.core).partitions.for_fetch("g", "orders", 1)
        sp.acquire("m", 10)
        sp.acknowledge("m", [AckBatch(0, 1, (3,))])

    b.call(reject)
    b.wait_until(lambda core: b.core.cluster.topics["dlq.g"].partitions[0].log.log_end_offset >= 2, timeout=30)


def test_conventions_are_understood() -> None:
    """Each convention's headers give the source topic, partition, offset, group and error."""
    p = dlq_tools.parse_dead_letter
    k = p("d", 0, 1, None, b"v", [("__dlq.errors.topic", b"t"), ("__dlq.errors.partition", b"2"),
                                  ("__dlq.errors.offset", b"7"), ("__dlq.errors.group", b"g"),
                                  ("__dlq.errors.delivery.count", b"5"),
                                  ("__dlq.errors.message", b"Offset delivery count exceeded the threshold.")])
    assert (k.convention, k.source_topic, k.source_partition, k.source_offset, k.group, k.delivery_count) == (
        "kip1191", "t", 2, 7, "g", 5)
    c = p("d", 0, 1, None, b"v", [("__connect.errors.topic", b"src"), ("__connect.errors.partition", b"3"),
                                  ("__connect.errors.offset", b"9"), ("__connect.errors.connector.name", b"sink"),
                                  ("__connect.errors.exception.message", b"boom")])
    assert (c.convention, c.source_topic, c.source_partition, c.source_offset, c.group, c.error) == (
        "connect", "src", 3, 9, "sink", "boom")
    s = p("d", 0, 1, None, b"v", [("kafka_dlt-original-topic", b"spr"),
                                  ("kafka_dlt-original-partition", struct.pack(">i", 4)),
                                  ("kafka_dlt-original-offset", struct.pack(">q", 123)),
                                  ("kafka_dlt-original-consumer-group", b"cg"),
                                  ("kafka_dlt-exception-message", b"bad")])
    assert (s.convention, s.source_topic, s.source_partition, s.source_offset, s.group, s.error) == (
        "spring", "spr", 4, 123, "cg", "bad")
    x = p("d", 0, 1, None, b"v", [("x-original-topic", b"xo"), ("x-original-partition", b"0"),
                                  ("x-original-offset", b"5")])
    assert (x.convention, x.source_topic, x.source_offset) == ("x-original", "xo", 5)
    assert p("d", 0, 1, None, b"v", [("other", b"1")]).convention == "unknown"


def test_inspect_a_live_broker_and_a_data_dir(tmp_path: Path) -> None:
    """inspect reads the KIP-1191 records written by kwire, from the wire and from the data dir."""
    with Broker(BrokerConfig(log_connections=False, data_dir=str(tmp_path))) as b:
        make_dlq(b)
        out = subprocess.run([sys.executable, "-m", "kwire", "dlq", "inspect", "--bootstrap", b.bootstrap,
                              "--json", "dlq.g"], capture_output=True, text=True, timeout=60, check=True)
    live = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(d["convention"], d["source_topic"], d["source_partition"], d["source_offset"], d["group"],
             d["delivery_count"], d["value"]) for d in live] == [
        ("kip1191", "orders", 1, 0, "g", 1, "o1"), ("kip1191", "orders", 1, 1, "g", 1, "o2")]
    from_disk = [d.as_dict() for d in dlq_tools.read_data_dir(tmp_path, "dlq.g")]
    assert from_disk == live
    table = subprocess.run([sys.executable, "-m", "kwire", "dlq", "inspect", "--data-dir", str(tmp_path), "dlq.g"],
                           capture_output=True, text=True, timeout=60, check=True).stdout
    assert "Offset rejected by client." in table and "orders" in table


def test_replay_to_the_original_partition_once() -> None:
    """replay --to-original: the records go back to orders-1 without the DLQ headers, with the replay
    marker; a second replay produces nothing; --dry-run produces nothing."""
    with Broker(BrokerConfig(log_connections=False)) as b:
        make_dlq(b)
        cmd = [sys.executable, "-m", "kwire", "dlq", "replay", "--bootstrap", b.bootstrap, "--to-original", "dlq.g"]
        dry = subprocess.run([*cmd, "--dry-run"], capture_output=True, text=True, timeout=60, check=True)
        assert "would produce dlq.g/0/0 -> orders-1" in dry.stdout
        assert b.end_offsets("orders") == {0: 0, 1: 2}
        first = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
        assert "produced 2" in first.stderr
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
        assert "produced 0, already replayed 2" in second.stderr
        replayed = b.read("orders", 1, 2)
    assert [bytes(r.value) for r in replayed] == [b"o1", b"o2"]
    assert [[k for k, _ in r.headers] for r in replayed] == [[dlq_tools.REPLAY_MARKER]] * 2


@pytest.mark.rule("DLQ-8")
def test_replay_skips_dead_letters_without_payload_unless_allowed() -> None:
    """DLQ-8: with copy.record.enable false a dead letter has no key and no value; replaying it would
    write empty records into the original topic, so replay skips them and says why; --allow-empty
    replays them anyway."""
    with Broker(BrokerConfig(log_connections=False)) as b:
        make_dlq(b, copy=False)
        cmd = [sys.executable, "-m", "kwire", "dlq", "replay", "--bootstrap", b.bootstrap, "--to-original", "dlq.g"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
        assert "produced 0" in out.stderr and "no payload 2" in out.stderr and "--allow-empty" in out.stderr
        assert b.end_offsets("orders") == {0: 0, 1: 2}
        forced = subprocess.run([*cmd, "--allow-empty"], capture_output=True, text=True, timeout=60, check=True)
        assert "produced 2" in forced.stderr
        assert [r.value for r in b.read("orders", 1, 2)] == [None, None]


def test_replay_filters_and_other_topics() -> None:
    """--to TOPIC with --error: only matching records, partition = original modulo the topic's count."""
    with Broker(BrokerConfig(log_connections=False)) as b:
        make_dlq(b)
        b.create_topic("retry", partitions=1)
        with WireClient(b.bootstrap) as c:
            letters = list(dlq_tools.read_cluster(c, "dlq.g"))
            none = dlq_tools.replay(c, letters, to_topic="retry", keep=lambda d: "timeout" in (d.error or ""))
            assert none.produced == 0
            some = dlq_tools.replay(c, letters, to_topic="retry", keep=lambda d: d.source_offset == 1)
            assert some.produced == 1
        assert b.end_offsets("retry") == {0: 1}


def test_inspect_names_a_missing_topic() -> None:
    with Broker(BrokerConfig(log_connections=False)) as b:
        out = subprocess.run([sys.executable, "-m", "kwire", "dlq", "inspect", "-b", b.bootstrap, "nope"],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "nope" in out.stderr


@pytest.mark.rule("DLQ-9")
def test_dlq_records_from_the_control_api() -> None:
    """DLQ-9: Broker.dlq_records decodes the group's DLQ records with the headers as a dict."""
    with Broker(BrokerConfig(log_connections=False)) as b:
        make_dlq(b)
        recs = b.dlq_records("g")
        assert [r["headers"]["__dlq.errors.offset"] for r in recs] == ["0", "1"]
        assert recs[0]["key"] == b"k1" and b.dlq_stats("g")["records_written"] == 2

"""``kwire topics`` and ``kwire groups`` against a kwire cluster, with real clients making the
groups (librdkafka's classic and KIP-848 consumers), as a user runs them, and the wire client's
version negotiation against a broker capped to older versions."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kwire.client import WireClient
from kwire.cluster_info import describe_groups, describe_topics
from kwire.control import Broker, BrokerConfig
from kwire.errors import WireClientError

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.conformance

TIMEOUT_S = 20.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Broker]:
    with Broker(BrokerConfig(brokers=2, log_connections=False,
                             settings={"group.initial.rebalance.delay.ms": "0"})) as b:
        b.create_topic("orders", partitions=3)
        b.create_topic("empty", partitions=1)
        p = ck.Producer({"bootstrap.servers": b.bootstrap, "log_level": 3})
        for i in range(9):
            p.produce("orders", str(i).encode(), partition=i % 3)
        assert p.flush(TIMEOUT_S) == 0
        consumers = [_consume(b, "classic-g", "classic", 3), _consume(b, "next-g", "consumer", 6)]
        yield b
        for c in consumers:
            c.close()


def _consume(b: Broker, group: str, protocol: str, want: int) -> Any:
    c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "group.protocol": protocol,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 3})
    c.subscribe(["orders"])
    got = 0
    deadline = time.monotonic() + TIMEOUT_S
    while got < want and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got += 1
            c.commit(m, asynchronous=False)
    assert got == want
    return c


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kwire", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def test_topics_table_and_json(cluster: Broker) -> None:
    out = _run("topics", "--bootstrap", cluster.bootstrap)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["topic", "partition", "leader", "replicas", "isr", "start", "end", "messages", "error"]
    assert [ln.split()[:2] for ln in lines[1:]] == [["empty", "0"], ["orders", "0"], ["orders", "1"], ["orders", "2"]]
    data = json.loads(_run("topics", "-b", cluster.bootstrap, "--json", "orders").stdout)
    assert [(p["partition"], p["start_offset"], p["end_offset"]) for p in data[0]["partitions"]] == [
        (0, 0, 3), (1, 0, 3), (2, 0, 3)]
    core_leaders = cluster.call(lambda: [p.leader_id for p in cluster.core.cluster.topics["orders"].partitions])
    assert [p["leader"] for p in data[0]["partitions"]] == core_leaders
    assert data[0]["topic_id"] == str(cluster.call(lambda: cluster.core.cluster.topics["orders"].topic_id))


def test_an_unknown_topic_is_reported_not_created(cluster: Broker) -> None:
    data = json.loads(_run("topics", "-b", cluster.bootstrap, "--json", "nope").stdout)
    assert data[0]["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert cluster.call(lambda: "nope" not in cluster.core.cluster.topics)


def test_groups_of_both_protocols_with_members_and_lag(cluster: Broker) -> None:
    out = _run("groups", "--bootstrap", cluster.bootstrap, "--json")
    assert out.returncode == 0, out.stderr
    groups = {g["group_id"]: g for g in json.loads(out.stdout)}
    classic, nxt = groups["classic-g"], groups["next-g"]
    assert (classic["type"], classic["state"], len(classic["members"])) == ("classic", "Stable", 1)
    assert classic["members"][0]["assignment"] == {"orders": [0, 1, 2]}
    assert (nxt["type"], nxt["state"], len(nxt["members"])) == ("consumer", "Stable", 1)
    assert nxt["members"][0]["assignment"] == {"orders": [0, 1, 2]}
    # 9 records, 3 (classic) and 6 (KIP-848) committed: lag counts only committed partitions.
    assert sum(p["committed"] for p in classic["offsets"]["orders"].values()) == 3
    assert sum(p["committed"] for p in nxt["offsets"]["orders"].values()) == 6
    assert classic["lag"] == sum(p["end"] - p["committed"] for p in classic["offsets"]["orders"].values())
    table = _run("groups", "-b", cluster.bootstrap, "classic-g").stdout
    assert table.splitlines()[1].split()[:4] == ["classic-g", "classic", "Stable", "1"]


def test_the_wire_client_negotiates_down_to_an_older_broker(cluster: Broker) -> None:
    for key, version in ((3, 4), (10, 2), (9, 3), (2, 2), (16, 2)):
        cluster.cap_api_version(key, version)
    try:
        with WireClient(cluster.bootstrap) as client:
            topics = {t.name: t for t in describe_topics(client)}
            assert topics["orders"].partitions[0].end_offset == 3
            groups = {g.group_id: g for g in describe_groups(client, ["classic-g"])}
            assert groups["classic-g"].offsets["orders"]
    finally:
        cluster.call(lambda: cluster.core.version_caps.clear())


def test_nothing_listening_is_a_one_line_error() -> None:
    out = _run("topics", "-b", "127.0.0.1:1")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "no bootstrap server answered" in out.stderr
    with pytest.raises(WireClientError, match="HOST:PORT"):
        WireClient("localhost")

"""``kwire groups`` on a share group: per partition the start offset, end, in-flight and settled
counts and lag (DescribeShareGroupOffsets v1 with KIP-1226's Lag, ListOffsets, ShareGroupDescribe),
read over the wire as kafka-share-groups.sh --describe --offsets does (ShareGroupCommand at d79bd502),
checked against the broker's own share state."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kwire.cli import main
from kwire.client import WireClient
from kwire.cluster_info import describe_groups
from kwire.control import Broker, BrokerConfig

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.conformance


def _poll(c: Any, want: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < want and time.monotonic() < deadline:
        got += [m for m in c.poll(0.5) or [] if m.error() is None]
    return got


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Broker, Any]]:
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("jobs", partitions=2)
        b.set_config("group", "workers", "share.auto.offset.reset", "earliest")
        b.produce("jobs", [b"a", b"b", b"c", b"d", b"e"], partition=0)
        c = ck.ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": "workers",
                              "share.acknowledgement.mode": "explicit", "log_level": 3})
        c.subscribe(["jobs"])
        got = _poll(c, 5)
        assert len(got) == 5
        for m in got[:2]:  # offsets 0 and 1 accepted: the start offset moves to 2
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        c.acknowledge(got[3], ck.AcknowledgeType.REJECT)  # offset 3 archived; 2 and 4 stay acquired
        c.acknowledge(got[2], ck.AcknowledgeType.RELEASE)
        c.acknowledge(got[4], ck.AcknowledgeType.RELEASE)
        c.commit_sync()
        yield b, c
        c.close()


def test_share_partitions_start_lag_and_settled(shared: tuple[Broker, Any]) -> None:
    b, _ = shared
    st = b.share_state("workers", "jobs", 0)
    assert st is not None and st["start_offset"] == 2
    with WireClient(b.bootstrap) as client:
        (g,) = describe_groups(client, ["workers"])
    assert (g.type, g.error) == ("share", None)
    p0 = g.share_offsets["jobs"][0]
    # from 2 to 5: 2 and 4 released (not done), 3 rejected (archived)
    assert (p0.start, p0.end, p0.in_flight, p0.settled, p0.lag, p0.consumers) == (2, 5, 3, 1, 2, 1)
    assert g.lag == 2


def test_groups_cli_prints_share_progress(shared: tuple[Broker, Any], capsys: pytest.CaptureFixture[str]) -> None:
    b, _ = shared
    assert main(["groups", "-b", b.bootstrap, "--json", "workers"]) == 0
    (g,) = json.loads(capsys.readouterr().out)
    assert g["lag"] == 2
    assert g["offsets"]["jobs"]["0"] == {"start": 2, "end": 5, "in_flight": 3, "settled": 1, "lag": 2,
                                         "consumers": 1, "error": None}
    assert main(["groups", "-b", b.bootstrap, "workers"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:5] == ["workers", "share", "Stable", "1", "2"]
    rows = [line.split() for line in out.splitlines() if line.startswith("jobs")]
    assert rows[0] == ["jobs", "0", "2", "5", "3", "1", "2", "1"]
    # 5 is the high watermark (exclusive); share_state's end_offset is the SPEO (inclusive), 4 here
    header = next(line.split() for line in out.splitlines() if line.startswith("topic"))
    assert header[:4] == ["topic", "partition", "start", "high-watermark"]
    st = b.share_state("workers", "jobs", 0)
    assert st is not None and st["end_offset"] == 4

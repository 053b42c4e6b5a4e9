"""The Java AdminClient (kafka-clients 4.3) against a 3-broker kwire cluster: manual replica
assignments in CreateTopics and paging DescribeTopicPartitions (KIP-966) with a cursor."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kwire.conformance.paths import java_lib_dir
from kwire.control import Broker, BrokerConfig

pytestmark = pytest.mark.conformance

SOURCE = Path(__file__).parent / "java" / "DescribeTopics.java"


def test_java_admin_creates_with_assignments_and_pages_describe_topics() -> None:
    java = shutil.which("java")
    jars = sorted(java_lib_dir().glob("*.jar"))
    if java is None or not jars:
        pytest.skip("java or the kafka-clients jars are not installed (tools/install_clients.sh java)")
    with Broker(BrokerConfig(brokers=3, log_connections=False)) as b:
        b.create_topic("other", partitions=2)
        b.start_recording()
        out = subprocess.run([java, "-cp", ":".join(map(str, jars)), str(SOURCE), b.bootstrap],
                             capture_output=True, text=True, timeout=120, check=False)
        assert out.returncode == 0, out.stderr[-3000:]
        recorded = b.recorded()
    lines = out.stdout.split()
    rows = [tuple(lines[i:i + 4]) for i in range(0, len(lines), 4)]
    placed = [r for r in rows if r[0] == "placed"]
    assert placed == [("placed", "0", "3", "3,1"), ("placed", "1", "2", "2,3"), ("placed", "2", "1", "1,2")]
    assert len([r for r in rows if r[0] == "other"]) == 2
    describes = [e for e in recorded if e.api_key == 75]
    # One partition per answer: the client followed the cursor through every partition.
    assert len(describes) >= 5
    assert all(len(p.partitions) <= 1 for e in describes for p in e.response.topics)

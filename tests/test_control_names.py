"""Fault injection takes API and error names as well as numbers and enums; anything it cannot
match is refused at once (it used to be accepted and never fire)."""

from __future__ import annotations

import contextlib

import pytest

from kwire.control import Broker, BrokerConfig
from kwire.errors import UnknownApiKeyError, UnknownErrorCodeError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.registry import ApiKey, resolve_api_key, resolve_error_code
from tests.broker.helpers import batch


@pytest.mark.parametrize("value", [0, ApiKey.PRODUCE, "Produce", "PRODUCE", "produce", " pro-duce "])
def test_api_keys_resolve_from_numbers_enums_and_names(value: object) -> None:
    assert resolve_api_key(value) == 0  # type: ignore[arg-type]


def test_share_and_multiword_names() -> None:
    assert resolve_api_key("ShareFetch") == resolve_api_key("share_fetch") == 78
    assert resolve_error_code("not_leader_or_follower") == ErrorCode.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("value", ["Produc", 9999, -7, 1.5, True])
def test_unknown_api_keys_are_refused(value: object) -> None:
    with pytest.raises(UnknownApiKeyError):
        resolve_api_key(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["NOT_A_CODE", 123456, None])
def test_unknown_error_codes_are_refused(value: object) -> None:
    with pytest.raises(UnknownErrorCodeError):
        resolve_error_code(value)  # type: ignore[arg-type]


def test_inject_error_by_names_fires_and_bad_names_are_refused() -> None:
    from kwire.protocol import decode_response, encode_request
    from tests.broker.server.test_wire_edge_cases import Raw

    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("t", 1)
        b.inject_error(api_key="Produce", error_code="NOT_LEADER_OR_FOLLOWER", topic="t", partition=0)
        with pytest.raises(UnknownApiKeyError, match="Produc"):
            b.inject_error(api_key="Produc", error_code="NOT_LEADER_OR_FOLLOWER")
        with pytest.raises(UnknownErrorCodeError):
            b.inject_error(api_key="Produce", error_code="NOT_LEADER")
        r = Raw(b)
        req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch([b"v"]))])])
        codes = []
        for corr in (1, 2):
            r.send(encode_request(req, 9, correlation_id=corr))
            codes.append(decode_response(r.recv_frame(), 0, 9).body.responses[0].partition_responses[0].error_code)
        assert codes == [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE]  # fired once (times=1)
        r.close()


def test_a_busy_port_is_the_one_line_cause_in_python_and_the_cli() -> None:
    """A start-up failure names its cause (it used to say "Exceptions from Trio nursery")."""
    import subprocess
    import sys

    from kwire.control import BrokerNotRunning

    with Broker(BrokerConfig(log_connections=False)) as b:
        port = int(b.bootstrap.rsplit(":", 1)[1])
        with pytest.raises(BrokerNotRunning, match="(?i)address already in use") as exc:
            Broker(BrokerConfig(port=port, log_connections=False)).start()
        assert "nursery" not in str(exc.value) and str(port) in str(exc.value)
        out = subprocess.run([sys.executable, "-m", "kwire", "broker", "--port", str(port)], capture_output=True,
                             text=True, timeout=60, check=False)
        assert out.returncode == 2
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "address already in use" in lines[0].lower() and "nursery" not in lines[0], lines


def test_waiting_helpers_for_requests_parks_groups_and_offsets() -> None:
    """A real consumer group: wait for its JoinGroup to park, for the group to be Stable with one
    member, for produced records to reach an offset; a timeout names what it saw."""
    import threading

    ck = pytest.importorskip("confluent_kafka")
    with Broker(BrokerConfig(log_connections=False, settings={"group.initial.rebalance.delay.ms": "0"})) as b:
        b.create_topic("t", 1)
        p = ck.Producer({"bootstrap.servers": b.bootstrap, "log_level": 0})
        for i in range(3):
            p.produce("t", b"v%d" % i, partition=0)
        assert p.flush(20) == 0
        b.wait_for_offset("t", 0, 3, timeout=10)
        b.wait_for_request("Produce", timeout=10)
        c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                         "log_level": 0})
        c.subscribe(["t"])
        stop = threading.Event()
        t = threading.Thread(target=lambda: [c.poll(0.1) for _ in iter(stop.is_set, True)], daemon=True)
        t.start()
        try:
            b.wait_for_group("g", state="stable", members=1, timeout=30)
            b.wait_for_request("JoinGroup", timeout=5)
            with pytest.raises(TimeoutError, match="state Stable, 1 member"):
                b.wait_for_group("g", members=2, timeout=0.5)
            with pytest.raises(TimeoutError, match="log end offset 3"):
                b.wait_for_offset("t", 0, 10, timeout=0.5)
        finally:
            stop.set()
            t.join(10)
            c.close()
        b.add_latency(60_000, api_key="Metadata")

        def ask() -> None:
            # The broker stops while this waits: the client's transport error is expected.
            with contextlib.suppress(ck.KafkaException):
                ck.Producer({"bootstrap.servers": b.bootstrap, "log_level": 0}).list_topics(timeout=3)

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        b.wait_for_parked("Metadata", timeout=10)
    asker.join(10)


def test_inspection_topics_groups_and_records_from_python() -> None:
    ck = pytest.importorskip("confluent_kafka")
    import time

    with Broker(BrokerConfig(log_connections=False, settings={"group.initial.rebalance.delay.ms": "0"})) as b:
        b.create_topic("t", 2)
        p = ck.Producer({"bootstrap.servers": b.bootstrap, "log_level": 0})
        p.produce("t", b"v0", key=b"k", partition=1, headers=[("h", b"x")])
        p.produce("t", b"v1", partition=1)
        assert p.flush(20) == 0
        assert [(q["partition"], q["log_end_offset"]) for q in b.topics()["t"]] == [(0, 0), (1, 2)]
        recs = b.read("t", 1)
        assert [(r.offset, r.key, r.value, r.headers) for r in recs] == [(0, b"k", b"v0", [("h", b"x")]),
                                                                         (1, None, b"v1", [])]
        assert [r.offset for r in b.read("t", 1, offset=1)] == [1]
        c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "log_level": 0})
        c.subscribe(["t"])
        deadline = time.monotonic() + 20
        got = None
        while got is None and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got = m
        assert got is not None
        c.commit(got, asynchronous=False)
        d = b.describe_group("g")
        assert d is not None and (d["type"], d["state"]) == ("classic", "Stable")
        (member,) = d["members"].values()
        assert member["assignment"] == {"t": [0, 1]}
        assert d["committed"] == {f"t-{got.partition()}": got.offset() + 1}
        assert b.describe_group("nope") is None
        c.close()


def test_share_faults_name_what_they_cannot_find() -> None:
    """A misspelt share group, partition or member raises instead of doing nothing quietly."""
    from kwire.errors import KwireError

    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("jobs", partitions=1)
        with pytest.raises(KwireError, match="holds no share partition jobs-0"):
            b.expire_locks("worker", "jobs", 0)
        with pytest.raises(KwireError, match="has no member 'nobody'"):
            b.fence_share_member("workers", "nobody")

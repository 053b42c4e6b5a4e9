"""The fuzzer's stateful sequences walk the coordinators deep (not refused at the first check),
and the memory watch turns growth past the limit into a finding."""

from __future__ import annotations

import random
from pathlib import Path

from kwire.conformance.wire_client import WireClient
from kwire.control import Broker, BrokerConfig
from kwire.fuzz.runner import FuzzConfig, _RssWatch, run_fuzz
from kwire.fuzz.sequences import consumer_member, share_consumer, transactional_producer
from kwire.protocol import decode_response, encode_request


def _drive(b: Broker, gen, seeds: range) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """Run each seed's sequence on one connection; (label, top-level error code) of every answer."""
    topic_id = b.call(lambda: b.core.cluster.topics["fuzz"].topic_id)

    def lookup(tid: str) -> tuple[int, int]:
        for row in b.transactions():
            if row["transactional_id"] == tid:
                return row["producer_id"], row["producer_epoch"]
        return -1, -1

    out = []
    for seed in seeds:
        with WireClient(b.bootstrap).connect() as c:
            for label, msg, version in gen(random.Random(seed), topic_id, lookup):
                corr = c.next_correlation_id
                c.sock.sendall(encode_request(msg, version, correlation_id=corr, client_id="t"))
                frame = c.recv_frame()
                body = decode_response(frame, msg.API_KEY, version).body
                out.append((label, getattr(body, "error_code", 0)))
    return out


def test_sequences_reach_deep_states() -> None:
    with Broker(BrokerConfig(log_connections=False, settings={"group.initial.rebalance.delay.ms": "0"})) as b:
        b.create_topic("fuzz", 3)
        b.set_config("group", "fz-sg-0", "share.auto.offset.reset", "earliest")
        b.produce("fuzz", [b"x"] * 20)
        share = _drive(b, share_consumer, range(20))
        txn = _drive(b, transactional_producer, range(20))
        assert sum(1 for label, code in txn if label == "end txn" and code == 0) >= 2
        cg = _drive(b, consumer_member, range(10))
        states = {row["state_name"] for row in b.transactions()}
        share_parts = b.call(lambda: len(b.core.subsystems.share_groups.partitions))
    # Share sessions got past their opening: later fetches and acknowledgements were answered without
    # a top-level error, and share partitions exist.
    assert sum(1 for label, code in share if label in ("share fetch", "share ack") and code == 0) >= 20
    assert share_parts >= 1
    # Transactions completed both ways, and the heartbeats were served.
    assert states & {"CompleteCommit", "CompleteAbort"}
    assert sum(1 for label, code in cg if label == "cghb beat" and code == 0) >= 1


def test_a_run_with_sequences_is_clean(tmp_path: Path) -> None:
    report = run_fuzz(FuzzConfig(budget=400, seed=5, out=tmp_path, hypothesis_share=0.0, sequence_share=0.5))
    assert report.summary() == "fuzz: frames: 400, crashes: 0, hangs: 0, lost: 0"


def test_memory_growth_past_the_limit_is_reported() -> None:
    # An earlier, higher peak in the same process (other tests) must not hide growth during the run.
    earlier = bytearray(128 << 20)
    for i in range(0, len(earlier), 4096):
        earlier[i] = 1
    del earlier
    watch = _RssWatch(limit_mb=1)
    watch.sample(1000)
    hog = bytearray(64 << 20)  # 64 MB touched: the resident memory grows
    for i in range(0, len(hog), 4096):
        hog[i] = 1
    watch.sample(2000)
    assert watch.growth_mb() >= 32
    del hog
    assert watch.growth_mb() >= 32  # the highest sample counts, not only the memory at the end

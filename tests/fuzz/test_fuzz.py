"""``kwire fuzz``: a bounded clean run (what CI runs every time), and each detector proven by a
broker broken on purpose (a handler that raises, a request that is never answered, an
acknowledged record that is not stored)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kwire.cli import main
from kwire.control import Broker
from kwire.errors import KwireError
from kwire.fuzz.mutators import MUTATIONS, default_seeds, fixture_seeds, mutate
from kwire.fuzz.runner import FuzzConfig, run_fuzz
from kwire.protocol import response_class

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(r"^fuzz: frames: (\d+), crashes: (\d+), hangs: (\d+), lost: (\d+)$")


def test_bounded_run_against_kwire_is_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CI budget: 1500 frames, seed 1, every detector on; the last line is the summary."""
    rc = main(["fuzz", "--budget", "1500", "--seed", "1", "--out", str(tmp_path), "--quiet"])
    lines = capsys.readouterr().out.strip().splitlines()
    m = SUMMARY.match(lines[-1])
    assert m is not None, lines[-5:]
    assert m.groups() == ("1500", "0", "0", "0"), lines
    assert rc == 0
    assert list(tmp_path.iterdir()) == []


def test_without_seed_each_run_draws_its_own_and_prints_it(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs without --seed are two campaigns; the printed seed replays a run exactly."""
    seeds = []
    for _ in range(2):
        assert main(["fuzz", "--budget", "60", "--out", str(tmp_path), "--quiet"]) == 0
        captured = capsys.readouterr()
        first = re.search(r"^fuzz: seed: (\d+) \(replay with --seed \1\)$", captured.err, re.M)
        assert first is not None, captured.err
        lines = captured.out.strip().splitlines()
        assert lines[-3] == f"fuzz: seed: {first.group(1)}" and SUMMARY.match(lines[-1]), lines[-3:]
        frames = SUMMARY.match(lines[-1]).group(1)  # type: ignore[union-attr]
        assert re.fullmatch(rf"fuzz: {frames} frames in \d+\.\d s \(\d+ frames/s\); replay with "
                            rf"--seed {first.group(1)} --budget {frames}", lines[-2]), lines[-2]
        seeds.append(int(first.group(1)))
    assert seeds[0] != seeds[1]
    drawn = [run_fuzz(FuzzConfig(budget=40, seed=seeds[0], out=None, hypothesis_share=0.0)) for _ in range(2)]
    assert drawn[0].summary() == drawn[1].summary()


def test_seeds_cover_fixtures_and_every_request_and_mutations_change_bytes() -> None:
    seeds = default_seeds()
    assert {s.api_key for s in seeds} >= {0, 1, 3, 11, 18, 22, 68, 76, 78, 79}
    fixtures = fixture_seeds(ROOT / "fixtures")
    assert any(s.origin.startswith("frames/share_fetch/") for s in fixtures)
    import random

    rng = random.Random(5)
    changed = sum(next(mutate(rng, s, seeds))[1] != s.payload for s in seeds[:200])
    assert changed > 150
    assert {"lying_count", "version_swap", "api_key_swap", "random_tagged_fields", "truncate"} <= set(MUTATIONS)


def _raise_on_metadata(broker: Broker) -> None:
    def boom(request: Any, ctx: Any) -> None:
        raise KwireError("deliberate handler bug")

    broker.hook(boom, api_key=3, times=None)


# Each detector is proven on both paths: every frame over sockets, and every frame into the core.
BOTH_PATHS = pytest.mark.parametrize("core_share", [0.0, 1.0], ids=["sockets", "in-process"])


@BOTH_PATHS
def test_a_handler_exception_is_a_crash_minimised_and_saved(tmp_path: Path, core_share: float) -> None:
    report = run_fuzz(FuzzConfig(budget=600, seed=11, out=tmp_path, hypothesis_share=0.0, core_share=core_share,
                                 broker_setup=_raise_on_metadata))
    assert report.crashes >= 1 and report.hangs == 0 and report.lost == 0
    crash = next(f for f in report.findings if f.kind == "crash")
    assert "deliberate handler bug" in crash.detail
    assert crash.saved is not None and crash.saved.exists()
    side = json.loads(crash.saved.with_suffix(".json").read_text())
    assert side["kind"] == "crash" and side["api_key"] == 3 and bytes.fromhex(side["frame"]) == crash.payload
    # Minimised: still a Metadata request that trips the bug, no longer than a default one.
    assert len(crash.payload) <= max(len(s.payload) for s in default_seeds() if s.api_key == 3)
    assert report.summary().endswith(f"crashes: {report.crashes}, hangs: 0, lost: 0")


def _swallow_describe_cluster(broker: Broker) -> None:
    broker.swallow(api_key=60, times=None)  # DescribeCluster asks for no wait; never answering it is a hang


@BOTH_PATHS
def test_an_unanswered_request_is_a_hang(tmp_path: Path, core_share: float) -> None:
    """In-process, the request is deferred and still unanswered after the core's clock moved
    ``hang_s`` past it; over sockets, nothing arrives within ``hang_s`` of wall time."""
    report = run_fuzz(FuzzConfig(budget=400, seed=12, out=tmp_path, hang_s=0.5, hypothesis_share=0.0,
                                 core_share=core_share, broker_setup=_swallow_describe_cluster))
    hangs = [f for f in report.findings if f.kind == "hang"]
    assert report.hangs == len(hangs) >= 1
    assert all(f.payload[:2] == b"\x00\x3c" for f in hangs)  # api key 60
    if core_share:
        assert all("broker clock" in f.detail for f in hangs)
    assert report.crashes == 0


def _acknowledge_without_storing(broker: Broker) -> None:
    resp_cls = response_class(0)

    def fake(request: Any, ctx: Any) -> Any:
        topics = [t for t in request.topic_data if t.name.startswith("fuzz-ledger-")]
        if not topics:
            return None  # everything else is handled normally
        return resp_cls(responses=[resp_cls.TopicProduceResponse(name=t.name, partition_responses=[
            resp_cls.PartitionProduceResponse(index=p.index, base_offset=5000, log_append_time_ms=-1,
                                              log_start_offset=0) for p in t.partition_data]) for t in topics])

    broker.hook(fake, api_key=0, times=None)


@BOTH_PATHS
def test_an_acknowledged_record_not_stored_is_lost(tmp_path: Path, core_share: float) -> None:
    report = run_fuzz(FuzzConfig(budget=300, seed=13, out=tmp_path, hypothesis_share=0.0, ledger_every=50,
                                 core_share=core_share, broker_setup=_acknowledge_without_storing))
    assert report.acked >= 6  # in-process every 50 frames; over sockets every 5 socket frames, and at the end
    assert report.lost == report.acked
    assert all(f.kind == "lost" and "offset 5000" in f.detail for f in report.findings if f.kind == "lost")


def test_decoders_mode_runs_atheris_and_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--decoders``: coverage-guided (atheris) over every request/response decoder and the batch reader."""
    pytest.importorskip("atheris", reason="atheris is not installed (pip install atheris)")
    rc = main(["fuzz", "--decoders", "--budget", "3000", "--seed", "3", "--out", str(tmp_path)])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    m = SUMMARY.match(last)
    assert m is not None, last
    assert int(m.group(1)) >= 3000 and m.groups()[1:] == ("0", "0", "0")
    assert rc == 0


@pytest.mark.slow
def test_core_guided_mode_runs_atheris_over_the_core_and_reports_coverage(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--core-guided``: atheris over the instrumented core and handlers; coverage grows."""
    pytest.importorskip("atheris", reason="atheris is not installed (pip install atheris)")
    rc = main(["fuzz", "--core-guided", "--budget", "400", "--seed", "3", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    m = SUMMARY.match(captured.out.strip().splitlines()[-1])
    assert m is not None, captured.out[-500:]
    assert int(m.group(1)) >= 400 and m.groups()[1:] == ("0", "0", "0")
    edges = [int(x) for x in re.findall(r"(\d+) edges", captured.err)]
    assert len(edges) >= 2 and edges[-1] > edges[0] > 0, captured.err[-800:]
    assert rc == 0


def test_a_core_guided_finding_raises_with_the_frame() -> None:
    """The harness turns a crash the in-process target sees into an exception libFuzzer keeps."""
    pytest.importorskip("atheris", reason="atheris is not installed (pip install atheris)")
    from kwire.fuzz.core_guided import CoreFinding, _Harness

    h = _Harness(seed=5, hang_s=1.0)
    h.broker.hook(lambda request, ctx: 1 / 0, api_key=3, times=None)  # a handler bug on Metadata
    h.one(b"")  # nothing sent: no finding
    found = None
    import random

    rng = random.Random(0)
    for _ in range(1000):
        try:
            h.one(rng.randbytes(64))
        except CoreFinding as exc:
            found = str(exc)
            break
    assert found is not None and found.startswith("crash: ") and "frame 0003" in found


def _fetch(wait_ms: int) -> bytes:
    from kwire.protocol import encode_request
    from kwire.protocol.messages.fetch import FetchRequest

    req = FetchRequest(replica_id=-1, max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                           topic="t", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0)])])
    return encode_request(req, 11, correlation_id=1, client_id="t", size_prefix=False)


def test_in_process_waits_run_on_the_core_clock_and_only_an_unasked_wait_is_a_hang() -> None:
    """In-process, a deferred request is run on the manual clock to the end of the wait it asked
    for plus ``hang_s``: a long poll answers at its MaxWaitMs (Kafka's DelayedFetch), one asking
    for more than a minute is dropped as parked, and a swallowed DescribeCluster is a hang."""
    from kwire.broker.config import BrokerConfig
    from kwire.fuzz.runner import _core_broker, _CoreTarget, _ErrorLog, _Fuzzer

    fz = _Fuzzer(FuzzConfig(hang_s=1.0), None, _ErrorLog())
    broker = _core_broker(BrokerConfig(brokers=1))
    broker.create_topic("t", 1)
    target = _CoreTarget(fz, broker)
    t0 = broker.core.clock.now_ms()
    target.send(_fetch(500), "long poll")
    assert fz.report.findings == [] and target.conn is not None  # answered: the connection stays
    assert broker.core.clock.now_ms() - t0 >= 500
    target.send(_fetch(10 * 60_000), "very long poll")
    assert fz.report.findings == [] and target.conn is None  # parked on purpose: dropped, no finding
    broker.swallow(api_key=60, times=None)
    from kwire.protocol import encode_request
    from kwire.protocol.messages.describe_cluster import DescribeClusterRequest

    target.send(encode_request(DescribeClusterRequest(), 0, correlation_id=1, client_id="t", size_prefix=False), "x")
    assert [f.kind for f in fz.report.findings] == ["hang"] and fz.report.hangs == 1
    broker.stop()

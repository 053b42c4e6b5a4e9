"""``kwire fuzz --spark``: a campaign sharded across Spark tasks gives one report; the shards use
distinct seeds, each runs its own broker, and findings from the executors reach the driver's
``--out`` minimised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kwire.pipeline.fuzz import ShardSpec, merge, run_shard, shard_seed

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_merge_sums_the_shards_and_keeps_a_finding_once(tmp_path: Path) -> None:
    rows = [run_shard(ShardSpec(seed=3, budget=150), i) for i in (1, 0)]
    assert [r["seed"] for r in rows] == [shard_seed(3, 1), shard_seed(3, 0)] and rows[0]["seed"] != rows[1]["seed"]
    twin = dict(rows[0], shard=2, findings=[{"kind": "crash", "detail": "d", "payload": "0003000b", "origin": "o"}])
    rows[0]["findings"] = [{"kind": "crash", "detail": "d", "payload": "0003000b", "origin": "o"}]
    report, shards = merge([*rows, twin], tmp_path)
    assert [r["shard"] for r in shards] == [0, 1, 2]
    assert report.frames == sum(r["frames"] for r in shards) >= 450
    assert len(report.findings) == 1 and report.findings[0].saved is not None  # the same frame from two shards
    assert "shard 1" in report.findings[0].origin


def test_a_campaign_on_spark_gathers_every_shards_findings(spark: Any, tmp_path: Path) -> None:
    from kwire.pipeline.spark.fuzz import fuzz_job

    def deliberate_bug(broker: Any) -> None:  # shipped to the executors by value (a closure)
        from kwire.errors import KwireError

        def boom(request: Any, ctx: Any) -> None:
            raise KwireError("deliberate handler bug")

        broker.hook(boom, api_key=3, times=None)

    spec = ShardSpec(seed=5, budget=400, broker_setup=deliberate_bug)
    report, rows = fuzz_job(spark, spec, 2, tmp_path)
    assert [r["shard"] for r in rows] == [0, 1]
    assert len({r["seed"] for r in rows}) == 2
    assert report.frames == sum(r["frames"] for r in rows) >= 800
    assert all(r["crashes"] >= 1 for r in rows)  # each shard ran its own broker with the bug
    crash = next(f for f in report.findings if f.kind == "crash")
    assert "deliberate handler bug" in crash.detail and crash.saved is not None
    side = json.loads(crash.saved.with_suffix(".json").read_text())
    assert side["api_key"] == 3 and "kwire fuzz --seed" in side["provenance"]


def test_the_cli_runs_a_sharded_campaign(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "kwire", "fuzz", "--spark", "--master", "local[2]", "--shards", "2",
                          "--budget", "200", "--seed", "9", "--out", str(tmp_path), "--quiet"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert sum(1 for line in lines if line.lstrip().startswith("shard ")) == 2
    assert lines[-1].startswith("fuzz: frames: ") and lines[-1].endswith("crashes: 0, hangs: 0, lost: 0")

"""Fuzz campaigns sharded across processes (``kwire fuzz --spark``): plain Python, no Spark here.

A campaign is ``shards`` independent fuzz runs, each with its own in-process broker and its own
seed (``shard_seed``), so the shards explore different inputs and a finding is repeatable from its
shard's seed alone. ``run_shard`` is what one executor runs: it returns its counters and every
finding with its minimised frame (executors on a cluster share no disk), and ``merge`` turns the
shards' results into one report on the driver, which saves the findings under ``--out``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ShardSpec", "shard_seed", "run_shard", "merge"]


def shard_seed(seed: int, shard: int) -> int:
    """The seed of one shard: distinct per shard, the same for the same campaign seed."""
    return seed * 1_000_003 + shard


@dataclass(slots=True, frozen=True)
class ShardSpec:
    """What every shard of a campaign shares (shipped to the executors)."""

    seed: int = 0
    seconds: float | None = None
    budget: int | None = None  # frames per shard
    hang_s: float = 5.0
    fixtures: str | None = None  # a seed corpus path that exists on every executor, or None
    broker_setup: Callable[[Any], None] | None = None  # tests: install faults in each shard's broker


def run_shard(spec: ShardSpec, shard: int) -> dict[str, Any]:
    """Run one shard to its budget or time; its report as plain data."""
    from kwire.fuzz.runner import FuzzConfig, run_fuzz

    fixtures = Path(spec.fixtures) if spec.fixtures and Path(spec.fixtures).is_dir() else None
    seed = shard_seed(spec.seed, shard)
    report = run_fuzz(FuzzConfig(seconds=spec.seconds, budget=spec.budget, seed=seed, out=None, fixtures=fixtures,
                                 hang_s=spec.hang_s, broker_setup=spec.broker_setup))
    return {
        "shard": shard, "seed": seed, "frames": report.frames, "crashes": report.crashes, "hangs": report.hangs,
        "lost": report.lost, "acked": report.acked, "elapsed_s": report.elapsed_s,
        "memory_growth_mb": report.memory_growth_mb,
        "findings": [{"kind": f.kind, "detail": f.detail, "payload": f.payload.hex(), "origin": f.origin}
                     for f in report.findings],
    }


def merge(rows: Iterable[dict[str, Any]], out: Path | None) -> tuple[Any, list[dict[str, Any]]]:
    """One ``FuzzReport`` over every shard (findings saved under ``out`` with their shard's seed,
    the same finding from several shards kept once) and the per-shard rows, ordered by shard."""
    from kwire.fuzz.runner import Finding, FuzzReport, save_finding

    shards = sorted(rows, key=lambda r: int(r["shard"]))
    total = FuzzReport()
    seen: set[tuple[str, str]] = set()
    for r in shards:
        total.frames += int(r["frames"])
        total.crashes += int(r["crashes"])
        total.hangs += int(r["hangs"])
        total.lost += int(r["lost"])
        total.acked += int(r["acked"])
        total.elapsed_s = max(total.elapsed_s, float(r["elapsed_s"]))
        total.memory_growth_mb = max(total.memory_growth_mb, float(r["memory_growth_mb"]))
        for f in r["findings"]:
            finding = Finding(f["kind"], f["detail"], bytes.fromhex(f["payload"]),
                              f"shard {r['shard']} (seed {r['seed']}): {f['origin']}")
            key = (finding.kind, f["payload"] or finding.detail)
            if key in seen:
                continue
            seen.add(key)
            if out is not None and finding.payload and finding.kind in ("crash", "hang"):
                finding.saved = save_finding(out, finding, int(r["seed"]))
            total.findings.append(finding)
    return total, shards

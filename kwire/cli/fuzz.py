"""``kwire fuzz``: mutated and generated requests against a broker it starts in-process.

    kwire fuzz --seconds 60 --seed 7 --out fuzz-out/
    kwire fuzz --budget 1000000                 # the long run (README)
    kwire fuzz --decoders --seconds 60          # coverage-guided, decoders only (atheris)
    kwire fuzz --core-guided --seconds 300      # coverage-guided, the broker core and handlers (atheris)
    kwire fuzz --spark --shards 8 --budget 200000 [--master spark://host:7077]
                                                # a campaign sharded across Spark executors

Starts with ``fuzz: seed: S`` (a fresh seed unless ``--seed``) on stderr and ends with
``fuzz: frames: N, crashes: C, hangs: H, lost: L`` (after ``fuzz: seed: S`` again and a line with
the rate and ``replay with --seed S --budget N``) and exits 1 when any of the last three is not 0. Findings are minimised and saved under ``--out`` as fixtures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kwire.cli._numbers import COUNT, SECONDS, SEED, TIMEOUT

if TYPE_CHECKING:
    from kwire.fuzz.runner import FuzzReport

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    limit = p.add_mutually_exclusive_group()
    limit.add_argument("--seconds", type=SECONDS, help="run this long (default 60 s unless --budget)")
    limit.add_argument("--budget", type=COUNT, help="send this many frames")
    p.add_argument("--seed", type=SEED, default=None,
                   help="random seed (runs are repeatable per seed; default: a fresh one, printed)")
    p.add_argument("--out", type=Path, default=Path("fuzz-out"), help="where minimised findings go")
    p.add_argument("--fixtures", type=Path, default=None,
                   help="seed corpus root (default: the repo's fixtures/ when present)")
    p.add_argument("--hang-seconds", type=TIMEOUT, default=5.0, help="answer bound for one request")
    p.add_argument("--decoders", action="store_true", help="coverage-guided fuzzing of the decoders (atheris)")
    p.add_argument("--core-guided", action="store_true",
                   help="coverage-guided fuzzing of the broker core, handlers and coordinators with the "
                        "stateful sequences (atheris); prints coverage over time")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--spark", action="store_true",
                   help="shard the campaign across Spark executors (each shard: its own broker and seed)")
    p.add_argument("--shards", type=COUNT, default=None,
                   help="with --spark: how many shards (default: Spark's default parallelism)")
    p.add_argument("--master", default=None, help="with --spark: the Spark master (default local[*])")


def run(args: argparse.Namespace) -> int:
    from kwire.cli import CliError

    if args.seed is None:
        # A fresh campaign each run unless asked: two runs must not repeat one another, and the
        # seed is printed first so a run that dies half-way can still be replayed.
        import secrets

        args.seed = secrets.randbelow(2**31)
    print(f"fuzz: seed: {args.seed} (replay with --seed {args.seed})", file=sys.stderr)
    if args.decoders:
        import importlib.util

        if importlib.util.find_spec("atheris") is None:
            raise CliError("--decoders needs atheris (pip install atheris)")
        from kwire.fuzz.decoders import run_decoders

        seconds = args.seconds if args.seconds is not None or args.budget is not None else 60.0
        drun = run_decoders(seconds, args.budget, args.seed, args.out)
        for a in drun.artifacts:
            print(f"crash: decoder raised something other than a KwireError -> {a}")
        if drun.crashes and not drun.artifacts:
            print(drun.output[-3000:], file=sys.stderr)
        print(f"fuzz: frames: {drun.executions}, crashes: {drun.crashes}, hangs: 0, lost: 0")
        return 1 if drun.crashes else 0
    if args.core_guided:
        return _run_core_guided(args)
    from kwire.conformance.paths import repo_root
    from kwire.fuzz.runner import FuzzConfig, run_fuzz

    fixtures = args.fixtures
    if fixtures is None:
        candidate = repo_root() / "fixtures"
        fixtures = candidate if candidate.is_dir() else None

    last = [0.0]  # the first line after 5 s: a warm-up rate (start-up, seeds) would mislead

    def progress(r: FuzzReport) -> None:
        if not args.quiet and r.elapsed_s - last[0] >= 5.0:  # a line every 5 s, not every check
            last[0] = r.elapsed_s
            rate = r.frames / r.elapsed_s if r.elapsed_s else 0.0
            print(f"  {r.frames} frames ({rate:.0f}/s), crashes {r.crashes}, hangs {r.hangs}", file=sys.stderr)

    seconds = args.seconds if args.seconds is not None or args.budget is not None else 60.0
    if args.spark:
        return _run_spark(args, seconds, fixtures)
    cfg = FuzzConfig(seconds=seconds, budget=args.budget, seed=args.seed, out=args.out, fixtures=fixtures,
                     hang_s=args.hang_seconds, progress=progress)
    report = run_fuzz(cfg)
    for f in report.findings:
        where = f" -> {f.saved}" if f.saved is not None else ""
        print(f"{f.kind}: {f.detail} [{f.origin}]{where}")
    print(f"fuzz: seed: {args.seed}")
    print(_rate_line(report, args.seed))
    print(report.summary())
    return 1 if report.crashes or report.hangs or report.lost else 0


def _rate_line(report: FuzzReport, seed: int) -> str:
    """Throughput and the exact replay: a run is repeatable per seed and frame count, so a
    ``--seconds`` run is replayed by its budget (another time-bounded run covers different work)."""
    rate = report.frames / report.elapsed_s if report.elapsed_s > 0 else 0.0
    return (f"fuzz: {report.frames} frames in {report.elapsed_s:.1f} s ({rate:.0f} frames/s); "
            f"replay with --seed {seed} --budget {report.frames}")


def _run_core_guided(args: argparse.Namespace) -> int:
    import importlib.util

    from kwire.cli import CliError

    if importlib.util.find_spec("atheris") is None:
        raise CliError("--core-guided needs atheris (pip install atheris)")
    from kwire.fuzz.core_guided import run_core_guided

    seconds = args.seconds if args.seconds is not None or args.budget is not None else 60.0
    run = run_core_guided(seconds, args.budget, args.seed, args.out, hang_s=args.hang_seconds)
    if not args.quiet:
        # new coverage over time: a line each time the edge count grew by a tenth or more
        shown = 0
        for t, execs, cov, ft in run.coverage:
            if cov >= shown * 1.1 or (t, execs, cov, ft) == run.coverage[-1]:
                shown = cov
                print(f"  {t:7.1f}s  {execs:>9} inputs  {cov:>6} edges  {ft:>7} features", file=sys.stderr)
    for a in run.artifacts:
        print(f"crash: the core tripped on an input -> {a}")
    if run.crashes:
        tail = [line for line in run.output.splitlines() if "CoreFinding" in line or "Error" in line]
        print("\n".join(tail[-10:]) or run.output[-3000:], file=sys.stderr)
    print(f"fuzz: seed: {args.seed}")
    print(f"fuzz: frames: {run.executions}, crashes: {run.crashes}, hangs: 0, lost: 0")
    return 1 if run.crashes else 0


def _run_spark(args: argparse.Namespace, seconds: float | None, fixtures: Path | None) -> int:
    """The campaign as Spark tasks: ``--budget`` and ``--seconds`` apply to each shard."""
    import importlib.util

    from kwire.cli import CliError

    if importlib.util.find_spec("pyspark") is None:
        raise CliError("--spark needs Spark: pip install 'kwire[spark]'")
    from kwire.pipeline.fuzz import ShardSpec
    from kwire.pipeline.spark import build_session
    from kwire.pipeline.spark.fuzz import fuzz_job

    print(f"starting Spark ({args.master or 'local[*]'})", file=sys.stderr)
    spark = build_session(args.master, app_name="kwire-fuzz")
    try:
        shards = args.shards or max(1, int(spark.sparkContext.defaultParallelism))
        if shards < 1:
            raise CliError("--shards must be at least 1")
        spec = ShardSpec(seed=args.seed, seconds=seconds if args.budget is None else None, budget=args.budget,
                         hang_s=args.hang_seconds, fixtures=str(fixtures) if fixtures is not None else None)
        print(f"fuzzing in {shards} shards", file=sys.stderr)
        report, rows = fuzz_job(spark, spec, shards, args.out)
    finally:
        spark.stop()
    for r in rows:
        print(f"  shard {r['shard']} (seed {r['seed']}): {r['frames']} frames in {r['elapsed_s']:.1f}s, "
              f"crashes {r['crashes']}, hangs {r['hangs']}, lost {r['lost']}")
    for f in report.findings:
        where = f" -> {f.saved}" if f.saved is not None else ""
        print(f"{f.kind}: {f.detail} [{f.origin}]{where}")
    print(f"fuzz: seed: {args.seed}")
    print(report.summary())
    return 1 if report.crashes or report.hangs or report.lost else 0

"""Fuzzer throughput: mutated and generated frames per second against an in-process kwire broker,
and decoder executions per second under atheris (``kwire fuzz --decoders``).

    python benchmarks/bench_fuzz.py [--seconds 60] [--seed 1] [--decoders]

Every frame goes through the same checks as ``kwire fuzz`` (answer or close within the bound,
canary, ledger), so this is the rate a long run achieves on this machine. Writes
benchmarks/results/fuzz.json and fuzz.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from kwire.fuzz.runner import FuzzConfig, run_fuzz

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--decoders", action="store_true", help="also time atheris over the decoders")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as out:
        report = run_fuzz(FuzzConfig(seconds=args.seconds, seed=args.seed, out=Path(out),
                                     fixtures=ROOT / "fixtures"))
    result: dict[str, object] = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"Python {platform.python_version()}, {platform.system()} {platform.machine()}, "
                   f"{os.cpu_count()} CPUs",
        "seconds": round(report.elapsed_s, 1),
        "frames": report.frames,
        "frames_per_s": round(report.frames / report.elapsed_s, 1),
        "summary": report.summary(),
        # A benchmark that trips the broker must say how: findings are kept in the results.
        "findings": [{"kind": f.kind, "detail": f.detail, "origin": f.origin, "frame": f.payload.hex()}
                     for f in report.findings],
    }
    if args.decoders:
        from kwire.fuzz.decoders import run_decoders

        with tempfile.TemporaryDirectory() as out:
            start = time.monotonic()
            d = run_decoders(args.seconds, None, args.seed, Path(out))
            result["decoder_executions"] = d.executions
            result["decoder_executions_per_s"] = round(d.executions / args.seconds, 1)
            result["decoder_setup_and_run_s"] = round(time.monotonic() - start, 1)
    res = ROOT / "benchmarks" / "results"
    res.mkdir(parents=True, exist_ok=True)
    (res / "fuzz.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = ["# Fuzzer throughput", "", f"Measured by `python benchmarks/bench_fuzz.py --seconds {args.seconds:g}"
             + (" --decoders" if args.decoders else "") + f"` on {result['when']} ({result['machine']}).", "",
             f"* broker fuzzing: {result['frames']} frames in {result['seconds']} s = "
             f"**{result['frames_per_s']} frames/s**; `{result['summary']}`"]
    lines += [f"  * {f.kind}: {f.detail} ({f.origin})" for f in report.findings]
    if args.decoders:
        lines.append(f"* decoders (atheris, pure-Python codec instrumented): {result['decoder_executions']} "
                     f"executions in {args.seconds:g} s = **{result['decoder_executions_per_s']}/s**")
    (res / "fuzz.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Fuzzer throughput, per mode: frames per second against kwire, and executions per second of the
coverage-guided (atheris) harnesses.

    python benchmarks/bench_fuzz.py [--seconds 60] [--seed 1] [--decoders] [--core-guided]

Broker modes (every frame goes through the same checks as ``kwire fuzz``: crash, hang, canary,
ledger):

* ``default``: what ``kwire fuzz`` runs: most frames into the in-process core, 0.5% over sockets;
* ``in-process``: every frame into the core (``core_share=1``);
* ``sockets``: every frame over real sockets to the running broker (``core_share=0``), as all of
  them were before.

Each records wall-clock frames/s and frames per CPU-second of the process (broker thread
included): on a shared machine the first falls with the load and the second does not. The load
average at the start and the end is written beside them. Writes benchmarks/results/fuzz.json and
fuzz.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from kwire.fuzz.runner import FuzzConfig, run_fuzz

ROOT = Path(__file__).resolve().parent.parent
MODES = {"default": {}, "in-process": {"core_share": 1.0}, "sockets": {"core_share": 0.0}}


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def broker_mode(name: str, seconds: float, seed: int) -> dict[str, Any]:
    load_before = _load()
    cpu0 = time.process_time()
    with tempfile.TemporaryDirectory() as out:
        report = run_fuzz(FuzzConfig(seconds=seconds, seed=seed, out=Path(out), fixtures=ROOT / "fixtures",
                                     **MODES[name]))  # type: ignore[arg-type]
    cpu = time.process_time() - cpu0
    return {
        "mode": name,
        "seconds": round(report.elapsed_s, 1),
        "cpu_seconds": round(cpu, 1),
        "frames": report.frames,
        "frames_per_s": round(report.frames / report.elapsed_s, 1),
        "frames_per_cpu_s": round(report.frames / cpu, 1),
        "load_before": load_before,
        "load_after": _load(),
        "summary": report.summary(),
        # A benchmark that trips the broker must say how: findings are kept in the results.
        "findings": [{"kind": f.kind, "detail": f.detail, "origin": f.origin, "frame": f.payload.hex()}
                     for f in report.findings],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--decoders", action="store_true", help="also time atheris over the decoders")
    ap.add_argument("--core-guided", action="store_true", help="also time atheris over the broker core")
    args = ap.parse_args()
    result: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"Python {platform.python_version()}, {platform.system()} {platform.machine()}, "
                   f"{os.cpu_count()} CPUs",
        "modes": [broker_mode(name, args.seconds, args.seed) for name in MODES],
    }
    if args.core_guided:
        from kwire.fuzz.core_guided import run_core_guided

        with tempfile.TemporaryDirectory() as out:
            start = time.monotonic()
            g = run_core_guided(args.seconds, None, args.seed, Path(out))
            wall = time.monotonic() - start
        first = g.coverage[0] if g.coverage else (0.0, 0, 0, 0)
        last = g.coverage[-1] if g.coverage else (0.0, 0, 0, 0)
        # libFuzzer's -max_total_time counts from its start, after the instrumented imports
        fuzz_s = max(last[0] - first[0], 1e-9)
        result["core_guided"] = {
            "executions": g.executions,
            "crashes": g.crashes,
            "executions_per_s": round(g.executions / fuzz_s, 1),
            "setup_s": round(first[0], 1),
            "setup_and_run_s": round(wall, 1),
            "edges_first": first[2], "edges_last": last[2], "features_last": last[3],
            # what tripped, if anything (libFuzzer stops at the first finding)
            "finding": [line for line in g.output.splitlines()
                        if "CoreFinding" in line or "ERROR: libFuzzer" in line or "deadly signal" in line][-5:],
            # coverage over time: (seconds since start, executions, edges, features), thinned
            "coverage": [c for i, c in enumerate(g.coverage) if i % max(1, len(g.coverage) // 40) == 0]
            + ([last] if g.coverage else []),
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
    flags = (" --decoders" if args.decoders else "") + (" --core-guided" if args.core_guided else "")
    lines = ["# Fuzzer throughput", "",
             f"Measured by `python benchmarks/bench_fuzz.py --seconds {args.seconds:g}{flags}` on {result['when']} "
             f"({result['machine']}).", "",
             "| mode | frames | s | frames/s | CPU s | frames per CPU-s | load avg before / after | summary |",
             "|---|---:|---:|---:|---:|---:|---|---|"]
    for m in result["modes"]:
        lines.append(f"| {m['mode']} | {m['frames']} | {m['seconds']} | **{m['frames_per_s']}** | {m['cpu_seconds']} "
                     f"| {m['frames_per_cpu_s']} | {m['load_before']} / {m['load_after']} | `{m['summary']}` |")
    for m in result["modes"]:
        lines += [f"  * {m['mode']}: {f['kind']}: {f['detail']} ({f['origin']})" for f in m["findings"]]
    if args.core_guided:
        g2 = result["core_guided"]
        lines += ["", f"* core (atheris, instrumented broker and records, stateful sequences): {g2['executions']} "
                      f"inputs in {args.seconds:g} s = **{g2['executions_per_s']}/s** after {g2['setup_s']} s of "
                      f"instrumented imports; edges {g2['edges_first']} -> {g2['edges_last']}, "
                      f"crashes {g2['crashes']}"] + [f"  * {line}" for line in g2["finding"]] + [
                  "", "  | s since start | inputs | edges | features |",
                  "  |---:|---:|---:|---:|"]
        lines += [f"  | {t} | {e} | {c} | {f} |" for t, e, c, f in g2["coverage"]]
    if args.decoders:
        lines.append(f"* decoders (atheris, pure-Python codec instrumented): {result['decoder_executions']} "
                     f"executions in {args.seconds:g} s = **{result['decoder_executions_per_s']}/s**")
    # The long run is not this benchmark's: its record (a clean clone, hours) is kept as written.
    old = (res / "fuzz.md").read_text() if (res / "fuzz.md").exists() else ""
    kept = old[old.index("## The long run"):] if "## The long run" in old else ""
    (res / "fuzz.md").write_text("\n".join(lines) + "\n" + ("\n" + kept if kept else ""))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

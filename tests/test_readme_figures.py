"""The README's figures that a benchmark produces agree with the committed results
(benchmarks/results/*.json and the run logs in *.md): rerunning a benchmark and committing its
results without updating the README fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _results(name: str) -> dict:
    return json.loads((ROOT / "benchmarks" / "results" / name).read_text(encoding="utf-8"))


def _readme(pattern: str) -> re.Match[str]:
    m = re.search(pattern, README, re.S)
    assert m is not None, f"the README no longer says {pattern!r}: update this check with it"
    return m


def _readme_ws(pattern: str) -> re.Match[str]:
    """``_readme`` with each space of ``pattern`` matching any run of whitespace (line breaks)."""
    return _readme(pattern.replace(" ", r"\s+"))


def _speedup(ratio: float) -> str:
    """kwire's time over the peer's -> "N.Nx as fast", as the benchmark tables round it."""
    return f"{1 / ratio:.1f}"


def _n(text: str) -> int:
    return int(text.replace(",", ""))


def test_fuzz_throughput() -> None:
    fuzz = _results("fuzz.json")
    log = (ROOT / "benchmarks" / "results" / "fuzz.md").read_text(encoding="utf-8")
    modes = {m["mode"]: m for m in fuzz["modes"]}
    m = _readme_ws(r"Measured here .*?: ([\d,]+) frames/s with the default mix \(([\d,]+) per CPU-second of the "
                r"process\), ([\d,]+) in-process only and ([\d,]+) over sockets only")
    assert _n(m[1]) == round(modes["default"]["frames_per_s"])
    assert _n(m[2]) == round(modes["default"]["frames_per_cpu_s"])
    assert _n(m[3]) == round(modes["in-process"]["frames_per_s"])
    assert _n(m[4]) == round(modes["sockets"]["frames_per_s"])
    m = _readme_ws(r"at this commit: `fuzz: frames: (\d+), crashes: 0, hangs: 0, lost: 0`\)")
    assert int(m[1]) == modes["default"]["frames"] and modes["default"]["summary"] in log
    g = fuzz["core_guided"]
    m = _readme_ws(r"`--core-guided` ran ([\d,]+) inputs/s and took the covered edges from ([\d,]+) to ([\d,]+)")
    assert (_n(m[1]), _n(m[2]), _n(m[3])) == (round(g["executions_per_s"]), g["edges_first"], g["edges_last"])
    m = _readme_ws(r"the decoders under atheris ran ([\d,]+) inputs in (\d+) s")
    assert _n(m[1]) == fuzz["decoder_executions"] and int(m[2]) == round(modes["default"]["seconds"])
    m = _readme_ws(r"ended `fuzz: frames: (\d+), crashes: 0, hangs: 0, lost: 0`")
    assert f"fuzz: frames: {m[1]}, crashes: 0, hangs: 0, lost: 0" in log


def test_codec_ratios() -> None:
    protocol = _results("protocol.json")
    peers = [w for w in protocol["workloads"] if "kwire/kafka-python" in w["ratio"]["decode"]]
    decode = sorted(_speedup(w["ratio"]["decode"]["kwire/kafka-python"]) for w in peers)
    encode = sorted(_speedup(w["ratio"]["encode"]["kwire/kafka-python"]) for w in peers)
    m = _readme(r"kwire's C decoder ([\d.]+)-([\d.]+)x and its encoder ([\d.]+)-([\d.]+)x as fast as kafka-python's")
    assert (m[1], m[2], m[3], m[4]) == (min(decode, key=float), max(decode, key=float),
                                        min(encode, key=float), max(encode, key=float))


def test_broker_ratios() -> None:
    defaults = _results("broker.json")["results"]["defaults"]
    kw, mock = defaults["kwire"], defaults["librdkafka_mock"]
    m = _readme(r"produce ([\d.]+)x, consume ([\d.]+)x librdkafka's mock")
    assert m[1] == f"{kw['produce_records_per_s'] / mock['produce_records_per_s']:.2f}"
    assert m[2] == f"{kw['consume_records_per_s'] / mock['consume_records_per_s']:.2f}"


def test_record_fast_path() -> None:
    fast = _results("records.json")["fast_path"]
    assert int(_readme(r"offset rewrite at ~(\d+) GB/s")[1]) == round(fast["validate_and_assign_GBps"])


def test_connection_memory() -> None:
    c = _results("connections.json")
    m = _readme(r"([\d,]+) idle connections hold (\d+) MB in all \(([\d.]+) KiB each")
    assert int(m[1].replace(",", "")) == c["idle"]["connections"]
    assert int(m[2]) == round(c["idle"]["rss_open_mb"]) and float(m[3]) == c["idle"]["per_connection_kib"]
    m = _readme(r"(\d+)\s+prefixes claiming (\d+) MiB each left the broker at (\d+) MB")
    plain = c["prefix_claims_plain"]
    assert (int(m[1]), int(m[2]), int(m[3])) == (plain["connections"], plain["claimed_mb_each"],
                                                  round(plain["rss_held_mb"]))
    sasl = c["prefix_claims_sasl"]
    m = _readme(r"\((\d+) MB with SASL on, where it closed all (\d+) before SASL\)")
    assert (int(m[1]), int(m[2])) == (round(sasl["rss_held_mb"]), sasl["closed_by_broker"])
    assert sasl["closed_by_broker"] == sasl["connections"]


def test_pipeline_per_core_efficiency() -> None:
    eff = _results("pipeline.json")["meta"]["per_core_efficiency"]
    m = _readme(r"Spark local\[2\]'s decode gives ([\d.]+) MB per CPU-second against the single\s+process's ([\d.]+) "
                r"\(([\d.]+)x; local\[1\], one task: ([\d.]+)x\)")
    assert (float(m[1]), float(m[2])) == (eff["spark_decode_mb_per_cpu_s"], eff["plain_decode_mb_per_cpu_s"])
    assert (m[3], m[4]) == (f"{eff['ratio']:.2f}", f"{eff['ratio_local1']:.2f}")


@pytest.mark.parametrize("name", ["fuzz.json", "protocol.json", "broker.json", "records.json", "connections.json",
                                  "pipeline.json"])
def test_results_files_are_committed(name: str) -> None:
    assert (ROOT / "benchmarks" / "results" / name).is_file()

"""Coverage-guided fuzzing of the broker core with atheris (``kwire fuzz --core-guided``).

Runs as its own process (``python -m kwire.fuzz.core_guided [libFuzzer flags]``): libFuzzer owns
the process and exits when done. ``kwire.broker`` (core, handlers, coordinators) and
``kwire.records`` are instrumented, so inputs that reach new branches of the handlers and the
coordinators' state machines are kept and mutated further. One input drives one in-process core
(``BrokerCore.handle`` on a manual clock, as ``kwire fuzz`` does for most of its frames):

* a few stateful sequences (``kwire.fuzz.sequences``: a KIP-848 member, a share consumer, a
  transactional producer), their random choices seeded from the input and each step's bytes
  overwritten where the input says, then
* request frames: a seed request (every request at every version, as the mutators start from)
  with bytes of the input written over it, or the input's bytes alone.

The findings are ``kwire fuzz``'s: a traceback in the broker's log or an answer with another
correlation id is a crash; a request that asked for no wait and is still unanswered after the
core's clock has moved ``hang_s`` past it is a hang. A finding raises, so libFuzzer saves the input
under ``-artifact_prefix``. The core is replaced every ``_FRESH_CORE_EVERY`` inputs so its state
(topics, groups, logs) stays bounded.

The parent (``run_core_guided``) reads libFuzzer's progress lines as they come and keeps the
coverage (edges, features) against the time since start: new coverage over time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CoreGuidedRun", "run_core_guided"]

_FRESH_CORE_EVERY = 5000
_PROGRESS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+)")


@dataclass(slots=True)
class CoreGuidedRun:
    executions: int
    crashes: int
    artifacts: list[Path]
    output: str
    # (seconds since start, executions, edges covered, features) at each libFuzzer progress line
    coverage: list[tuple[float, int, int, int]] = field(default_factory=list)


def run_core_guided(seconds: float | None, runs: int | None, seed: int, out: Path,
                    hang_s: float = 5.0) -> CoreGuidedRun:
    """Run the atheris harness over the core in a child process; counts executions, crashes and
    records coverage over time."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("crash-*"))
    argv = [sys.executable, "-m", "kwire.fuzz.core_guided", f"-seed={seed or 1}", "-print_final_stats=1",
            f"-artifact_prefix={out}/", "-rss_limit_mb=2048", "-timeout=30", "-max_len=2048"]
    if runs is not None:
        argv.append(f"-runs={runs}")
    if seconds is not None:
        argv.append(f"-max_total_time={max(1, int(seconds))}")
    # the pure-Python codec, like the decoders' harness (the C twins are not instrumented)
    env = dict(os.environ, KWIRE_NO_EXTENSIONS="1", KWIRE_FUZZ_SEED=str(seed), KWIRE_FUZZ_HANG_S=str(hang_s))
    start = time.monotonic()
    coverage: list[tuple[float, int, int, int]] = []
    lines: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            m = _PROGRESS.match(line)
            if m is not None:
                coverage.append((round(time.monotonic() - start, 2), int(m[1]), int(m[3]), int(m[4])))
        rc = proc.wait()
    text = "".join(lines)
    m2 = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text) or re.findall(r"#(\d+)\s+DONE", text)
    executions = int(m2[-1]) if m2 else 0
    artifacts = sorted(set(out.glob("crash-*")) - before)
    crashes = len(artifacts) or (1 if rc != 0 else 0)
    return CoreGuidedRun(executions, crashes, artifacts, text, coverage)


class CoreFinding(Exception):
    """Raised inside the harness for a crash or a hang, so libFuzzer keeps the input."""


class _Harness:
    """One input at a time into an in-process core (state kept across inputs, bounded)."""

    def __init__(self, seed: int, hang_s: float) -> None:
        import logging

        from kwire.fuzz.mutators import default_seeds
        from kwire.fuzz.runner import FuzzConfig, _ErrorLog

        self.seed = seed
        self.cfg = FuzzConfig(seed=seed, hang_s=hang_s)
        self.errors = _ErrorLog()
        logger = logging.getLogger("kwire.broker")
        logger.addHandler(self.errors)
        logger.propagate = False
        self.seeds = default_seeds()
        self.inputs = 0
        self.broker: Any = None
        self._fresh()

    def _fresh(self) -> None:
        from kwire.broker.config import BrokerConfig
        from kwire.fuzz.runner import _core_broker, _CoreTarget, _Fuzzer

        if self.broker is not None:
            self.broker.stop()
        config = BrokerConfig(brokers=1, log_connections=False, seed=self.seed,
                              settings={"group.initial.rebalance.delay.ms": "0"})
        self.broker = _core_broker(config)
        self.broker.create_topic("fuzz", 3)
        self.topic_id = self.broker.core.cluster.topics["fuzz"].topic_id
        self.fz = _Fuzzer(self.cfg, None, self.errors)
        self.target = _CoreTarget(self.fz, self.broker)

    def one(self, data: bytes) -> None:
        import random

        import atheris

        from kwire.fuzz.runner import _sequence

        self.inputs += 1
        if self.inputs % _FRESH_CORE_EVERY == 0:
            self._fresh()
        fdp = atheris.FuzzedDataProvider(data)
        fz, target = self.fz, self.target
        found = len(fz.report.findings)

        def overwrite(payload: bytes) -> bytes:
            buf = bytearray(payload)
            for _ in range(fdp.ConsumeIntInRange(0, 4)):
                if len(buf) <= 8 or fdp.remaining_bytes() == 0:
                    break
                at = fdp.ConsumeIntInRange(8, len(buf) - 1)  # keep key, version, correlation id
                chunk = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 8))
                buf[at:at + len(chunk)] = chunk
            return bytes(buf)

        fz.rng = random.Random(fdp.ConsumeIntInRange(0, 2**32 - 1))
        for _ in range(fdp.ConsumeIntInRange(0, 2)):
            _sequence(fz, self.broker, self.topic_id, [],
                      lambda payload, origin: target.send(overwrite(payload) if fdp.ConsumeBool() else payload,
                                                          origin))
        while fdp.remaining_bytes() > 0:
            if fdp.ConsumeIntInRange(0, 3):
                seed = self.seeds[fdp.ConsumeIntInRange(0, len(self.seeds) - 1)]
                target.send(overwrite(seed.payload), f"{seed.origin} overwritten by atheris")
            else:
                target.send(fdp.ConsumeBytes(fdp.ConsumeIntInRange(8, 512)), "atheris bytes")
        target._drop()
        if len(fz.report.findings) > found:
            f = fz.report.findings[found]
            raise CoreFinding(f"{f.kind}: {f.detail} [{f.origin}] frame {f.payload.hex()}")


def _harness() -> None:  # pragma: no cover - runs under libFuzzer in the child
    import importlib
    import pkgutil

    import atheris

    # Instrument the broker (core, handlers, coordinators) and the record layer: import every
    # module of them inside the block.
    with atheris.instrument_imports(include=["kwire.broker", "kwire.records"]):
        import kwire.broker
        import kwire.records

        for pkg in (kwire.broker, kwire.records):
            for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
                importlib.import_module(mod.name)
    harness = _Harness(int(os.environ.get("KWIRE_FUZZ_SEED", "1")), float(os.environ.get("KWIRE_FUZZ_HANG_S", "5")))
    atheris.Setup(sys.argv, harness.one)
    atheris.Fuzz()


if __name__ == "__main__":  # pragma: no cover
    _harness()

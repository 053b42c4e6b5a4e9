"""Coverage-guided fuzzing of the decoders with atheris (``kwire fuzz --decoders``).

Runs as its own process (``python -m kwire.fuzz.decoders [libFuzzer flags]``), because libFuzzer
owns the process and exits when done. The pure-Python decoders are instrumented
(``KWIRE_NO_EXTENSIONS=1`` is set for the child, so the C twins stay out of the way). One input:
two bytes pick the message (request or response of an API, at a version) or the record-batch
reader, the rest is the bytes to decode. The contract (h11's AFL rule): any bytes decode or raise
a ``KwireError``; anything else is a crash, which libFuzzer saves under ``-artifact_prefix``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DecoderRun", "run_decoders"]


@dataclass(slots=True)
class DecoderRun:
    executions: int
    crashes: int
    artifacts: list[Path]
    output: str


def run_decoders(seconds: float | None, runs: int | None, seed: int, out: Path) -> DecoderRun:
    """Run the atheris harness in a child process; counts executions and crashes."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("crash-*"))
    argv = [sys.executable, "-m", "kwire.fuzz.decoders", f"-seed={seed or 1}", "-print_final_stats=1",
            f"-artifact_prefix={out}/", "-rss_limit_mb=2048", "-timeout=10"]
    if runs is not None:
        argv.append(f"-runs={runs}")
    if seconds is not None:
        argv.append(f"-max_total_time={max(1, int(seconds))}")
    env = dict(os.environ, KWIRE_NO_EXTENSIONS="1")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    text = proc.stdout + proc.stderr
    m = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text) or re.findall(r"#(\d+)\s+DONE", text)
    executions = int(m[-1]) if m else 0
    artifacts = sorted(set(out.glob("crash-*")) - before)
    crashes = len(artifacts) or (1 if proc.returncode not in (0,) else 0)
    return DecoderRun(executions, crashes, artifacts, text)


def _harness() -> None:  # pragma: no cover - runs under libFuzzer in the child
    import atheris

    # Message modules load on first use: resolve them all inside the block so they are instrumented.
    with atheris.instrument_imports(include=["kwire"]):
        from kwire.errors import KwireError
        from kwire.protocol import all_apis
        from kwire.records import iter_batches

        targets = []
        for info in all_apis():
            if info.versions is None:
                continue
            for v in range(info.versions[0], info.versions[1] + 1):
                targets.append((info.request_class, v))
                targets.append((info.response_class, v))

    def one(data: bytes) -> None:
        if len(data) < 2:
            return
        pick = int.from_bytes(data[:2], "big")
        body = data[2:]
        try:
            if pick % (len(targets) + 1) == len(targets):
                for batch in iter_batches(body):
                    for _ in batch.records():
                        pass
            else:
                cls, version = targets[pick % (len(targets) + 1)]
                cls.decode(body, version)
        except KwireError:
            pass  # a typed refusal is the contract

    atheris.Setup(sys.argv, one)
    atheris.Fuzz()


if __name__ == "__main__":  # pragma: no cover
    _harness()

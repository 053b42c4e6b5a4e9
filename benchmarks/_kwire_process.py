"""``kwire broker`` as its own process for the benchmarks, as users run it (shared by the scripts)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["KwireProcess"]


class KwireProcess:
    """``kwire broker --port 0 --quiet`` with topics (``name:partitions``) created up front; ``bootstrap``
    is read from its first line."""

    def __init__(self, topics: list[str]) -> None:
        args = [a for t in topics for a in ("--topic", t)]
        self.proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet", *args],
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = re.search(r"bootstrap servers (\S+)", line)
        if not m:
            self.close()
            raise RuntimeError(f"kwire broker did not start: {line!r}")
        self.bootstrap = m.group(1)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)

"""Split planning for capture files: pack small files, shard big ones by connection.

pcap cannot be cut by byte range (TCP reassembly needs each connection's segments in order), so
a capture bigger than ``target_bytes`` is read by several tasks, each owning the connections
``kwire.capture.connection_shard`` gives it: every task walks the packets (cheap), and only the
owner reassembles and decodes a connection (the expensive part).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from kwire.errors import CaptureError

__all__ = ["CaptureTask", "expand_inputs", "plan_captures", "DEFAULT_CAPTURE_TARGET_BYTES"]

DEFAULT_CAPTURE_TARGET_BYTES = 64 << 20


@dataclass(slots=True, frozen=True)
class CaptureTask:
    """One task: ``(path, shard, shards)`` pieces read in order."""

    pieces: tuple[tuple[str, int, int], ...]


def expand_inputs(inputs: list[str], suffixes: tuple[str, ...] = (".pcap", ".pcapng", ".cap")) -> list[str]:
    """Files named, globbed, or found (by suffix) under directories; sorted, each once."""
    out: set[str] = set()
    for item in inputs:
        matches = glob.glob(item) or [item]
        for m in matches:
            p = Path(m)
            if p.is_dir():
                out.update(str(f) for f in p.rglob("*") if f.is_file() and f.suffix in suffixes)
            elif p.is_file():
                out.add(str(p))
            else:
                raise CaptureError(f"{m}: no such file or directory")
    return sorted(out)


def plan_captures(paths: list[str], target_bytes: int = DEFAULT_CAPTURE_TARGET_BYTES, *,
                  min_tasks: int = 1) -> list[CaptureTask]:
    """Tasks of about ``target_bytes`` each; at least ``min_tasks`` when there is one big file."""
    tasks: list[CaptureTask] = []
    cur: list[tuple[str, int, int]] = []
    size = 0
    for p in paths:
        n = os.path.getsize(p)
        shards = max(1, -(-n // target_bytes))
        if len(paths) == 1:
            shards = max(shards, min_tasks) if n > 0 else 1
        if shards > 1:
            tasks.extend(CaptureTask(((p, k, shards),)) for k in range(shards))
            continue
        if cur and size + n > target_bytes:
            tasks.append(CaptureTask(tuple(cur)))
            cur, size = [], 0
        cur.append((p, 0, 1))
        size += n
    if cur:
        tasks.append(CaptureTask(tuple(cur)))
    return tasks

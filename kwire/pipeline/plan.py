"""Split planning for capture files: pack small files, shard big ones by connection.

pcap cannot be cut by byte range (TCP reassembly needs each connection's segments in order), so
a capture is shared by several tasks, each owning the connections
``kwire.capture.connection_shard`` gives it: every task walks all the packets (the cheap part,
about a tenth of a full decode), and only the owner reassembles and decodes a connection.

Since every shard walks the whole file, more shards than can run at once only add walks: a file
is sharded to fill the parallelism asked for (``min_tasks``, in proportion to its share of the
input), never by its size alone. 17 size-based shards of a 1 GB capture on 2 cores cost twice
the CPU of 2 shards.
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
    """About ``min_tasks`` tasks when the input allows it: files bigger than ``target_bytes`` get
    connection shards in proportion to their share of the input, smaller ones are packed
    together up to ``target_bytes``."""
    tasks: list[CaptureTask] = []
    cur: list[tuple[str, int, int]] = []
    size = 0
    sizes = {p: os.path.getsize(p) for p in paths}
    total = sum(sizes.values())
    for p in paths:
        n = sizes[p]
        shards = 1
        if min_tasks > 1 and (n > target_bytes or len(paths) == 1) and n > 0:
            shards = max(1, -(-min_tasks * n // total))
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

"""``kwire fuzz --spark``: the shards of a fuzz campaign as Spark tasks, one shard per task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kwire.pipeline.fuzz import ShardSpec, merge, run_shard

__all__ = ["fuzz_job"]


def fuzz_job(spark: Any, spec: ShardSpec, shards: int, out: Path | None) -> tuple[Any, list[dict[str, Any]]]:
    """Run ``shards`` shards across the executors and merge their reports on the driver.

    Each task imports kwire on its executor and runs its own in-process broker: on a cluster,
    ``build_session`` ships kwire to the workers, whose Python needs kwire's dependencies."""
    rdd = spark.sparkContext.parallelize(range(shards), shards)
    rows = rdd.map(lambda shard: run_shard(spec, shard)).collect()
    return merge(rows, out)

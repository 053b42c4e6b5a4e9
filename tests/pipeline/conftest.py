"""A session-scoped SparkSession for the tests marked ``spark`` (skipped only without pyspark)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    from kwire.pipeline.spark import build_session

    session = build_session(os.environ.get("KWIRE_SPARK_MASTER", "local[2]"), app_name="kwire-tests",
                            shuffle_partitions=2)
    yield session
    session.stop()

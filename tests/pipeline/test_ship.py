"""kwire shipped to Spark executors as a zip (``kwire_zip``): everything a job imports on a worker,
data files included, loads from the zip alone, and the zip is built once per kwire version."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from .no_kwire import python_without_kwire

pytest.importorskip("pyspark")

_ON_A_WORKER = """
import sys
sys.path.insert(1, sys.argv[1])  # where pyspark's worker puts a --py-files entry
import kwire
from kwire.broker.core import configs
from kwire.pipeline import traffic, dlq, conformance, fuzz
from kwire.pipeline.spark import sources
assert kwire.__file__.startswith(sys.argv[1]), kwire.__file__
print(len(configs._kafka_broker_configs()[0]), len(configs._kafka_group_configs()[0]))
"""


def test_the_shipped_zip_is_all_a_worker_without_kwire_needs(tmp_path: Path) -> None:
    from kwire.broker.core import configs
    from kwire.pipeline.spark.session import kwire_zip

    path = kwire_zip(tmp_path)
    assert kwire_zip(tmp_path) == path and len(list(tmp_path.glob("kwire-*.zip"))) == 1  # built once
    names = set(zipfile.ZipFile(path).namelist())
    assert {"kwire/__init__.py", "kwire/__init__.pyc", "kwire/broker/core/kafka_broker_configs.json"} <= names
    assert not any("__pycache__" in n or n.endswith(".so") for n in names)
    python = python_without_kwire(tmp_path / "worker")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    refused = subprocess.run([str(python), "-c", "import kwire"], capture_output=True, text=True, env=env,
                             timeout=60, cwd=tmp_path)
    assert refused.returncode != 0 and "kwire is not installed on this worker" in refused.stderr
    out = subprocess.run([str(python), "-c", _ON_A_WORKER, str(path)], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    want = f"{len(configs._kafka_broker_configs()[0])} {len(configs._kafka_group_configs()[0])}"
    assert out.stdout.split() == want.split()

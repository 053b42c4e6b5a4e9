"""``kwire pipeline`` and ``kwire fuzz --spark`` on a real Spark standalone cluster.

A master and one worker (org.apache.spark.deploy.master.Master / deploy.worker.Worker, started
with the pyspark distribution's ``bin/spark-class``) listen on 127.0.0.1 only. The executors run a
Python in which kwire is *not* importable except from a zip (a ``sitecustomize`` refuses any
other kwire), so the jobs pass only because the driver ships kwire (``build_session`` ->
``SparkContext.addPyFile(kwire_zip())``). Every job's tables equal ``--engine local``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .bad_client import write_bad_client_capture
from .dlq_dirs import write_dlq_dirs
from .no_kwire import python_without_kwire

pyspark = pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]  # no second JVM beside the session's

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180  # master and worker up and registered (JVM start-up on a loaded 2-core machine)
JOB_TIMEOUT_S = 300

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``spark://127.0.0.1:PORT`` with one 2-core worker, and the env the CLI runs under."""
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    work = tmp_path_factory.mktemp("cluster")
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(work / "work"),
               SPARK_LOG_DIR=str(work), SPARK_DAEMON_MEMORY="256m",
               SPARK_DAEMON_JAVA_OPTS="-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
    env.pop("PYTHONPATH", None)  # the executors must get kwire from the driver, not from here
    logs = {name: (work / f"{name}.log").open("wb") for name in ("master", "worker")}
    master = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(ui)],
                              env=env, stdout=logs["master"], stderr=subprocess.STDOUT, start_new_session=True)
    # started together: the worker retries until the master listens
    worker = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                               "--cores", "2", "--memory", "1g", "--webui-port", str(worker_ui),
                               "--work-dir", str(work / "work"), f"spark://127.0.0.1:{port}"],
                              env=env, stdout=logs["worker"], stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while _alive_workers(ui) < 1:
            if master.poll() is not None or worker.poll() is not None or time.monotonic() > deadline:
                tails = {n: (work / f"{n}.log").read_text(errors="replace")[-2000:] for n in logs}
                pytest.fail(f"the standalone cluster did not come up in {START_TIMEOUT_S} s: {tails}")
            time.sleep(0.5)
        python = python_without_kwire(work / "no-kwire")
        cli_env = dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=str(python),
                       # the executors' JVM: the short-run flags build_session gives local[*]
                       PYSPARK_SUBMIT_ARGS='--conf "spark.executor.extraJavaOptions=-XX:+UseSerialGC '
                                           '-XX:TieredStopAtLevel=1" --conf spark.executor.memory=512m pyspark-shell')
        cli_env.pop("KWIRE_SPARK_SHIP", None)
        yield {"master": f"spark://127.0.0.1:{port}", "env": cli_env, "work": work}
    finally:
        _stop(worker)
        _stop(master)
        for f in logs.values():
            f.close()


def _kwire(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    # run from the repository root with a relative input: an executor's own work dir is elsewhere
    out = subprocess.run([sys.executable, "-m", "kwire", *args], capture_output=True, text=True, env=env,
                         timeout=JOB_TIMEOUT_S, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr[-4000:]
    return out


def _table(path: Path) -> list[str]:
    rows = pq.read_table(path).to_pylist()
    return sorted(json.dumps(r, sort_keys=True, default=lambda b: b.hex()) for r in rows)


@pytest.mark.parametrize("job, tables", [
    ("traffic", ("wire_exchanges", "capture_issues")),
    ("conformance", ("conformance_violations",)),
    ("dlq", ("dlq_records", "dlq_report")),
])
def test_pipeline_job_on_a_standalone_cluster_gives_the_local_tables(cluster: dict[str, Any], tmp_path: Path,
                                                                    job: str, tables: tuple[str, ...]) -> None:
    if job == "dlq":
        inputs = [str(write_dlq_dirs(tmp_path / "logs"))]
    else:  # one relative input: read from the driver's directory, not the executor's
        inputs = [os.path.relpath(ROOT / "fixtures" / "captures", ROOT)]
        if job == "conformance":  # a client that breaks every rule, beside clients that break none
            inputs.append(str(write_bad_client_capture(tmp_path / "bad.pcapng")))
    local = _kwire(cluster["env"], "pipeline", job, *inputs, "--out", str(tmp_path / "local"), "--engine", "local")
    remote = _kwire(cluster["env"], "pipeline", job, *inputs, "--out", str(tmp_path / "cluster"),
                    "--master", cluster["master"])
    assert f"starting Spark ({cluster['master']})" in remote.stderr
    for name in tables:
        got, want = _table(tmp_path / "cluster" / name), _table(tmp_path / "local" / name)
        assert got == want, name
        assert want or name in ("capture_issues", "conformance_violations")
    assert _table(tmp_path / "local" / tables[0])  # the first table of every job has rows
    assert remote.stdout.replace(str(tmp_path / "cluster"), "OUT") == local.stdout.replace(str(tmp_path / "local"), "OUT")


def test_fuzz_on_a_standalone_cluster_runs_each_shard_as_in_process(cluster: dict[str, Any], tmp_path: Path) -> None:
    from kwire.pipeline.fuzz import ShardSpec, run_shard, shard_seed

    out = _kwire(cluster["env"], "fuzz", "--spark", "--master", cluster["master"], "--shards", "2",
                 "--budget", "150", "--seed", "9", "--out", str(tmp_path), "--quiet")
    shards = [line.strip() for line in out.stdout.splitlines() if line.lstrip().startswith("shard ")]
    assert len(shards) == 2
    for i, line in enumerate(shards):
        here = run_shard(ShardSpec(seed=9, budget=150), i)
        assert line.startswith(f"shard {i} (seed {shard_seed(9, i)}): {here['frames']} frames in ")
        assert line.endswith(f"crashes {here['crashes']}, hangs {here['hangs']}, lost {here['lost']}")
    assert out.stdout.strip().splitlines()[-1].endswith("crashes: 0, hangs: 0, lost: 0")

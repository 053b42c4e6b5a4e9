"""A SparkSession that runs offline and quietly on a fresh machine (shared/reference/spark.md §1).

Loopback only (SPARK_LOCAL_IP, driver host/bind address), workers on this interpreter
(PYSPARK_PYTHON), no UI or progress bars, log4j at WARN with the noisy loggers at ERROR, and the
short-run JVM flags that cut start-up by 40-50% on a loaded 2-core machine.

On a cluster (any master that is not ``local``), kwire itself is shipped to the executors as a
zip (``SparkContext.addPyFile``), so workers need only Python (the driver's minor version),
pyarrow and kwire's dependencies, not kwire. The zip carries the sources, the data files and
unchecked hash-based ``.pyc`` (zipimport compiles nothing); the C speedups cannot load from a zip,
so shipped workers run the pure-Python twins (install kwire on the workers to get them).
"""

from __future__ import annotations

import hashlib
import os
import py_compile
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["build_session", "kwire_zip", "DEFAULT_MASTER", "SHIP_ENV"]

SHIP_ENV = "KWIRE_SPARK_SHIP"  # "1": ship kwire to the executors even on local[*]; "0": never

DEFAULT_MASTER = "local[*]"

_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.datasource.name = org.apache.spark.sql.execution.datasources
logger.datasource.level = error
"""


def _log4j_file() -> Path:
    path = Path(tempfile.gettempdir()) / "kwire-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        path.write_text(_LOG4J)
    return path


_SKIP_SUFFIXES = (".so", ".c", ".pyc", ".pyd")


def _package_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and not p.name.endswith(_SKIP_SUFFIXES))


def kwire_zip(dest: Path | None = None) -> Path:
    """The imported kwire package as a zip for ``--py-files``, built once per content (the name
    carries a hash of every file's path, size and mtime) and reused."""
    import kwire

    root = Path(kwire.__file__).resolve().parent
    files = _package_files(root)
    key = hashlib.sha256(sys.version.encode())
    for f in files:
        st = f.stat()
        key.update(f"{f.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}".encode())
    dest = dest or Path(tempfile.gettempdir())
    path = dest / f"kwire-{key.hexdigest()[:16]}.zip"
    if path.exists():
        return path
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z, tempfile.TemporaryDirectory() as build:
        pyc = Path(build) / "m.pyc"
        for f in files:
            name = f"kwire/{f.relative_to(root).as_posix()}"
            z.write(f, name)
            if f.suffix == ".py":
                # legacy layout (foo.pyc beside foo.py) is what zipimport reads; unchecked, so the
                # zip entry's 2-second DOS timestamp is never compared with the source's
                py_compile.compile(str(f), cfile=str(pyc), dfile=name, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                z.write(pyc, name + "c")
    os.replace(tmp, path)
    return path


def _ship(master: str) -> bool:
    flag = os.environ.get(SHIP_ENV)
    if flag in ("0", "1"):
        return flag == "1"
    return not master.startswith("local")


def build_session(master: str | None = None, *, app_name: str = "kwire", shuffle_partitions: int | None = None,
                  extra: dict[str, str] | None = None) -> Any:
    """Get or create the SparkSession with kwire's defaults and its data sources registered
    (and, on a cluster, kwire shipped to the executors)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from kwire.pipeline.spark.sources import register_sources

    master = master or os.environ.get("KWIRE_SPARK_MASTER") or DEFAULT_MASTER
    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j_file()}"
    local = master.startswith("local")
    if local:
        java_opts += " -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    builder = (
        SparkSession.builder.master(master).appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or 4))
        .config("spark.python.unix.domain.socket.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if local:  # on a cluster the executors log as the cluster says (the log4j file is on this machine only)
        builder = builder.config("spark.executor.extraJavaOptions", java_opts)
    for k, v in (extra or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if _ship(master):
        spark.sparkContext.addPyFile(str(kwire_zip()))
    register_sources(spark)
    return spark

"""docs/guide.md's examples, run as written: each code block under a ``<!-- guide:KIND -->`` marker.

``pytest`` blocks run as a test file in a pytester sandbox (the plugin's fixtures); ``python``
blocks run as scripts; ``java`` and ``js`` blocks run against a broker this test starts (the
address as their first argument); ``sh`` blocks run line by line as ``kwire`` commands; ``bash``
blocks run as bash scripts in an empty directory with ``kwire`` on PATH.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kwire.control import Broker, BrokerConfig

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"
BLOCK = re.compile(r"<!-- guide:(\w+) -->\n```\w*\n(.*?)```", re.S)
pytest_plugins = ["pytester"]


def blocks(kind: str) -> list[str]:
    return [code for k, code in BLOCK.findall(GUIDE.read_text()) if k == kind]


def test_the_guide_has_every_kind_of_example() -> None:
    kinds = {k for k, _ in BLOCK.findall(GUIDE.read_text())}
    assert kinds == {"pytest", "python", "java", "js", "sh", "bash"}


@pytest.mark.parametrize("index", range(len(blocks("pytest"))))
def test_pytest_examples(index: int, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{f"test_guide_{index}": blocks("pytest")[index]})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_examples(index: int, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(blocks("python")[index])
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 0, out.stderr[-3000:]


@pytest.mark.parametrize("index", range(len(blocks("java"))))
def test_java_examples(index: int, tmp_path: Path) -> None:
    """Each Java example on its own broker, started as the guide says (a group lock may be 1 s)."""
    from kwire.conformance.paths import java_lib_dir

    java = shutil.which("java")
    jars = sorted(java_lib_dir().glob("*.jar"))
    if java is None or not jars:
        pytest.skip("java or the kafka-clients jars are not installed (tools/install_clients.sh java)")
    src = blocks("java")[index]
    (tmp_path / "Main.java").write_text(src)
    with Broker(BrokerConfig(log_connections=False,
                             settings={"group.share.min.record.lock.duration.ms": "1000"})) as b:
        b.create_topic("guide")
        b.start_recording()
        out = subprocess.run([java, "-cp", ":".join(map(str, jars)), str(tmp_path / "Main.java"), b.bootstrap],
                             capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.split()[-1] == "0"
        if '"from java"' in src:
            assert [bytes(r.value) for r in b.read("guide", 0)] == [b"from java"]
        if "AcknowledgeType.RENEW" in src:  # RN-4: the renewals reached the broker as RENEW (type 4)
            renews = [e for e in b.recorded() if e.api_key in (78, 79) and any(
                4 in batch.acknowledge_types for t in e.request.topics for p in t.partitions
                for batch in p.acknowledgement_batches)]
            assert len(renews) >= 3


def test_js_example(tmp_path: Path) -> None:
    from kwire.conformance.paths import node_modules_dir

    node = shutil.which("node")
    modules = node_modules_dir()
    if node is None or not (modules / "kafkajs").is_dir():
        pytest.skip("node or kafkajs is not installed (tools/install_clients.sh js)")
    (src,) = blocks("js")
    script = tmp_path / "example.cjs"
    script.write_text(src)
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("guide")
        out = subprocess.run([node, str(script), b.bootstrap], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "NODE_PATH": str(modules)})
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.split()[-1] == "0"
        assert [bytes(r.value) for r in b.read("guide", 0)] == [b"from js"]


def test_cli_examples() -> None:
    for line in "".join(blocks("sh")).splitlines():
        if not line.strip():
            continue
        cmd, _, redirect = line.partition(">")
        args = shlex.split(cmd)
        assert args[0] == "kwire"
        out = subprocess.run([sys.executable, "-m", "kwire", *args[1:]], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"{line}: {out.stderr[-2000:]}"


def test_bash_examples(tmp_path: Path) -> None:
    """The shell sessions, as a user types them: ``kwire`` is the installed command."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kwire"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kwire "$@"\n')
    shim.chmod(0o755)
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    for index, code in enumerate(blocks("bash")):
        work = tmp_path / f"session{index}"
        work.mkdir()
        out = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=work, env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, f"block {index}: {out.stdout[-2000:]}{out.stderr[-2000:]}"

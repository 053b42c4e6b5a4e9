"""docs/guide.md's examples, run as written: each code block under a ``<!-- guide:KIND -->`` marker.

``pytest`` blocks run as a test file in a pytester sandbox (the plugin's fixtures); ``python``
blocks run as scripts; ``java`` and ``js`` blocks run against a broker this test starts (the
address as their first argument); ``sh`` blocks run line by line as ``kwire`` commands.
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
    assert kinds == {"pytest", "python", "java", "js", "sh"}


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


def test_java_example(tmp_path: Path) -> None:
    from kwire.conformance.paths import java_lib_dir

    java = shutil.which("java")
    jars = sorted(java_lib_dir().glob("*.jar"))
    if java is None or not jars:
        pytest.skip("java or the kafka-clients jars are not installed (tools/install_clients.sh java)")
    (src,) = blocks("java")
    (tmp_path / "Main.java").write_text(src)
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("guide")
        out = subprocess.run([java, "-cp", ":".join(map(str, jars)), str(tmp_path / "Main.java"), b.bootstrap],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.split()[-1] == "0"
        assert [bytes(r.value) for r in b.read("guide", 0)] == [b"from java"]


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

"""docs/authorization.md's "Configuring it" example runs as written: the broker line as given
(on a free port), then each ``kwire acls`` line against it, as the super user over SASL PLAIN.

Upstream at d79bd502: AclApis (DescribeAcls needs DESCRIBE on the cluster), StandardAuthorizer
(super.users), SaslServerAuthenticator.
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "authorization.md"


def _commands() -> list[list[str]]:
    text = DOC.read_text()
    block = text[text.index("## Configuring it"):]
    block = block[block.index("```sh\n") + 6:]
    block = block[:block.index("```")]
    joined = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line) for line in joined.splitlines() if line.startswith("kwire ")]


@pytest.mark.rule("ACL-1")
def test_configuring_it_example_runs_as_written() -> None:
    commands = _commands()
    assert commands[0][:2] == ["kwire", "broker"] and len(commands) == 6
    proc = subprocess.Popen([sys.executable, "-m", "kwire", *commands[0][1:], "--port", "0", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"bootstrap servers (\S+)", line)
        assert m, (line, proc.stderr.read() if proc.stderr else "")
        outputs = []
        for argv in commands[1:]:
            argv = [m.group(1) if a == "127.0.0.1:9092" else a for a in argv]
            done = subprocess.run([sys.executable, "-m", "kwire", *argv[1:]], capture_output=True, text=True,
                                  timeout=60, check=False)
            assert done.returncode == 0, (argv, done.stderr)
            outputs.append(done.stdout)
        assert outputs[0].startswith("added: User:alice ALLOW READ")
        assert "User:alice" in outputs[1] and "orders." in outputs[1] and "PREFIXED" in outputs[1]
        assert "removed 1" in outputs[2]
        # WRITE and CREATE on "payments" (outputs[3], [4]): alice produces to it, auto-creating it.
        confluent_kafka = pytest.importorskip("confluent_kafka")
        delivered: list[object] = []
        producer = confluent_kafka.Producer({
            "bootstrap.servers": m.group(1), "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
            "sasl.username": "alice", "sasl.password": "alice-secret", "log_level": 0})
        producer.produce("payments", b"paid", on_delivery=lambda err, msg: delivered.append(err))
        assert producer.flush(30) == 0 and delivered == [None]
        alice = subprocess.run([sys.executable, "-m", "kwire", "acls", "-b", m.group(1), "--username", "alice",
                                "--password", "alice-secret", "list"], capture_output=True, text=True, timeout=60,
                               check=False)
        assert alice.returncode == 2 and "CLUSTER_AUTHORIZATION_FAILED (as principal User:alice)" in alice.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)

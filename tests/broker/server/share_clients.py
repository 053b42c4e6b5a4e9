"""Real share consumers driven step by step from a test: the Java KafkaShareConsumer (kafka-clients
4.3, through java/ShareDriver.java) and confluent-kafka's ShareConsumer (in this process)."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

from kwire.conformance.paths import java_lib_dir

DRIVER = Path(__file__).parent / "java" / "ShareDriver.java"


@dataclass(frozen=True, slots=True)
class Delivered:
    partition: int
    offset: int
    delivery_count: int
    value: str


def java_command() -> list[str]:
    java = shutil.which("java")
    jars = sorted(java_lib_dir().glob("*.jar"))
    if java is None or not jars:
        pytest.skip("java or the kafka-clients jars are not installed (tools/install_clients.sh java)")
    return [java, "-cp", ":".join(map(str, jars)), str(DRIVER)]


class JavaShareConsumer:
    """One KafkaShareConsumer in a JVM; each method is one driver command, answered in order."""

    def __init__(self, bootstrap: str, group: str, mode: str = "explicit", **config: Any) -> None:
        args = [f"{k.replace('_', '.')}={v}" for k, v in config.items()]
        self.proc = subprocess.Popen([*java_command(), bootstrap, group, mode, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines: Queue[str | None] = Queue()
        self.async_commits: list[str] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    def command(self, line: str, timeout_s: float = 60.0) -> list[str]:
        """Send one command; its output lines up to "ok" (AssertionError on "error ...")."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        out: list[str] = []
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                got = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                raise AssertionError(f"{line!r}: no answer in {timeout_s}s; stderr: {self.stderr[-20:]}") from None
            if got is None:
                raise AssertionError(f"{line!r}: the JVM exited; stderr: {self.stderr[-30:]}")
            if got == "ok":
                return out
            if got.startswith("error "):
                raise AssertionError(f"{line!r}: {got}")
            if got.startswith("async-committed"):
                self.async_commits.append(got)
            else:
                out.append(got)

    def subscribe(self, topic: str) -> None:
        self.command(f"subscribe {topic}")

    def poll(self, ms: int = 500) -> list[Delivered]:
        out = []
        for line in self.command(f"poll {ms}"):
            _, p, o, n, v = line.split(" ", 4)
            out.append(Delivered(int(p), int(o), int(n), v))
        return out

    def poll_until(self, count: int, timeout_s: float = 60.0) -> list[Delivered]:
        """Poll until ``count`` records came (or fail after ``timeout_s``)."""
        got: list[Delivered] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"got {len(got)} of {count} records: {got}; stderr: {self.stderr[-10:]}")
            got += self.poll(500)
        return got

    def ack(self, r: Delivered, kind: str) -> None:
        self.command(f"ack {r.partition} {r.offset} {kind}")

    def commit(self) -> list[str]:
        return self.command("commit")

    def commit_async(self) -> None:
        self.command("commitasync")

    def lock_timeout_ms(self) -> int:
        return int(self.command("locktimeout")[0].split()[1])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.command("close", timeout_s=60)
            finally:
                self.proc.wait(timeout=60)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


JS_DRIVER = Path(__file__).parent / "js" / "share_driver.cjs"


class KafkatsShareConsumer:
    """@kafkats/client's ShareConsumer (ShareFetch/ShareAcknowledge v2) in node: each delivered
    record waits in its handler for the test's verdict (renew, ack, release, reject)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        import os

        from kwire.conformance.paths import node_modules_dir

        node = shutil.which("node")
        modules = node_modules_dir()
        if node is None or not (modules / "@kafkats" / "client" / "package.json").is_file():
            pytest.skip("node or @kafkats/client is not installed (tools/install_clients.sh js)")
        self.proc = subprocess.Popen([node, str(JS_DRIVER), bootstrap, group, topic], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                     env={**os.environ, "KWIRE_NODE_MODULES": str(modules)})
        self.lines: Queue[str | None] = Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, prefix: str, timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                got = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                raise AssertionError(f"no {prefix!r} line in {timeout_s}s; output: {self.seen[-20:]}") from None
            if got is None:
                raise AssertionError(f"node exited waiting for {prefix!r}; output: {self.seen[-20:]}")
            self.seen.append(got)
            if got.startswith(prefix):
                return got
            if got.startswith(("fatal", "error")):
                raise AssertionError(got)

    def next_record(self) -> Delivered:
        _, p, o, n, v = self.expect("rec ").split(" ", 4)
        return Delivered(int(p), int(o), int(n), v)

    def verdict(self, action: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(action + "\n")
        self.proc.stdin.flush()
        self.expect(f"done {action}")

    def lock_timeout_ms(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write("lock\n")
        self.proc.stdin.flush()
        return int(self.expect("lock ").split()[1])

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.expect("closed", timeout_s=30)
            finally:
                self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

"""Share consumers (KIP-932) driven step by step: one child program per consumer, speaking lines.

Every share driver (Java ``java/ShareDriver.java``, confluent-kafka ``_share_driver.py``,
@kafkats/client ``js/share_driver.cjs``) reads one command per stdin line and answers with its
output lines, then ``ok`` (or ``error CLASS MESSAGE``):

``subscribe TOPIC`` · ``poll MS`` (prints ``rec PARTITION OFFSET DELIVERYCOUNT VALUE`` per record) ·
``ack PARTITION OFFSET ACCEPT|RELEASE|REJECT|RENEW`` · ``commit`` (prints ``committed PARTITION
RESULT``) · ``commitasync`` (results come later as ``async-committed ...`` lines) ·
``locktimeout`` (prints ``lock MS``, -1 where the client does not tell) · ``close``.

A test holds records between polls, acknowledges any of them later, and can kill the process
mid-batch; the broker sees exactly what a real application would make the client send.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, Queue

from kwire.conformance import paths
from kwire.errors import ConformanceError

__all__ = ["Delivered", "ShareMember", "share_command", "SHARE_CLIENTS"]

HERE = Path(__file__).parent
# Clients with a share consumer: name -> what it needs.
SHARE_CLIENTS = ("java", "confluent_kafka", "kafkats")


@dataclass(frozen=True, slots=True)
class Delivered:
    partition: int
    offset: int
    delivery_count: int
    value: str


def share_command(client: str, bootstrap: str, group: str, *, mode: str = "explicit",
                  config: dict[str, object] | None = None) -> tuple[list[str], dict[str, str] | None]:
    """The argv and extra environment of ``client``'s share driver. ``mode`` (explicit or implicit
    acknowledgement) and ``config`` (client properties) are for the Java driver.

    Raises:
        ConformanceError: the client has no share consumer, or it is not installed here.
    """
    if client == "java":
        java = shutil.which("java")
        jars = sorted(paths.java_lib_dir().glob("*.jar"))
        if java is None or not jars:
            raise ConformanceError("java or the kafka-clients jars are not installed (tools/install_clients.sh java)")
        return [java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", ":".join(map(str, jars)),
                str(HERE / "java" / "ShareDriver.java"), bootstrap, group, mode,
                *(f"{k}={v}" for k, v in (config or {}).items())], None
    if client == "confluent_kafka":
        try:
            import confluent_kafka
        except ImportError:
            raise ConformanceError("confluent-kafka is not installed (tools/install_clients.sh python)") from None
        if not hasattr(confluent_kafka, "ShareConsumer"):
            raise ConformanceError("this confluent-kafka has no ShareConsumer (2.16 or later)")
        return [sys.executable, "-m", "kwire.conformance.clients._share_driver", bootstrap, group], None
    if client == "kafkats":
        node = shutil.which("node")
        modules = paths.node_modules_dir()
        if node is None or not (modules / "@kafkats" / "client" / "package.json").is_file():
            raise ConformanceError("node or @kafkats/client is not installed (tools/install_clients.sh js)")
        return [node, str(HERE / "js" / "share_driver.cjs"), bootstrap, group], {"KWIRE_NODE_MODULES": str(modules)}
    raise ConformanceError(f"{client} has no share consumer")


class ShareMember:
    """One share consumer in its own process; each method is one driver command."""

    def __init__(self, client: str, bootstrap: str, group: str, *, mode: str = "explicit",
                 config: dict[str, object] | None = None) -> None:
        argv, env = share_command(client, bootstrap, group, mode=mode, config=config)
        self.client = client
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, env={**os.environ, **(env or {})})
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
        """Send one command; its output lines up to ``ok``.

        Raises:
            ConformanceError: the driver answered ``error ...``, exited, or said nothing in time.
        """
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise ConformanceError(f"{self.client} {line!r}: the driver is gone ({exc})") from None
        out: list[str] = []
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                got = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                raise ConformanceError(f"{self.client} {line!r}: no answer in {timeout_s:.0f}s; "
                                       f"stderr: {self.stderr[-10:]}") from None
            if got is None:
                raise ConformanceError(f"{self.client} {line!r}: the driver exited; stderr: {self.stderr[-20:]}")
            if got == "ok":
                return out
            if got.startswith("error "):
                raise ConformanceError(f"{self.client} {line!r}: {got}")
            if got.startswith("async-committed"):
                self.async_commits.append(got)
            else:
                out.append(got)

    def subscribe(self, topic: str) -> None:
        self.command(f"subscribe {topic}")

    def poll(self, ms: int = 500) -> list[Delivered]:
        out = []
        for line in self.command(f"poll {ms}"):
            _, p, o, n, *v = line.split(" ", 4)
            out.append(Delivered(int(p), int(o), int(n), v[0] if v else ""))
        return out

    def poll_until(self, count: int, timeout_s: float = 60.0) -> list[Delivered]:
        """Poll until ``count`` records came.

        Raises:
            ConformanceError: fewer arrived within ``timeout_s``.
        """
        got: list[Delivered] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < count:
            if time.monotonic() > deadline:
                raise ConformanceError(f"{self.client}: {len(got)} of {count} records in {timeout_s:.0f}s: {got}")
            got += self.poll(500)
        return got

    def ack(self, r: Delivered, kind: str) -> None:
        self.command(f"ack {r.partition} {r.offset} {kind}")

    def commit(self) -> list[str]:
        """commitSync; one ``committed PARTITION RESULT`` line per partition (none where the client
        acknowledges as it goes)."""
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
                self.kill()

    def kill(self) -> None:
        """End the process at once, as a crash would (its connections drop)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

"""Child processes that speak JSON lines, read with deadlines instead of sleeps.

Every client program (Java, node, the Python runner, the mock) writes one JSON object
per stdout line. A reader thread per pipe feeds a queue, so the parent waits on
``queue.get(timeout=...)`` against a deadline and never blocks past it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kwire.errors import ConformanceError

__all__ = ["JsonLineProcess", "read_json_line", "run_json_command"]

Event = dict[str, Any]

# stderr lines kept for error messages; clients can be chatty.
_STDERR_TAIL = 40
_EOF = object()


def read_json_line(proc: subprocess.Popen[str], timeout_s: float) -> Event | None:
    """Read one JSON line from ``proc.stdout`` within ``timeout_s``; None on EOF or timeout.

    For short handshakes only (a thread is left behind on timeout); long-lived children
    use ``JsonLineProcess``.
    """
    box: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    out = proc.stdout
    threading.Thread(target=lambda: box.put(out.readline()), daemon=True).start()
    try:
        line = box.get(timeout=timeout_s)
    except queue.Empty:
        return None
    if not line:
        return None
    try:
        parsed = json.loads(line)
    except ValueError:
        return {"raw": line}
    return parsed if isinstance(parsed, dict) else {"raw": line}


@dataclass(slots=True)
class JsonLineProcess:
    """A running client program: JSON lines out, JSON lines in, killed on close."""

    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    label: str = ""
    _proc: subprocess.Popen[str] | None = field(default=None, repr=False)
    _events: queue.Queue[object] = field(default_factory=queue.Queue, repr=False)
    _stderr: deque[str] = field(default_factory=lambda: deque(maxlen=_STDERR_TAIL), repr=False)
    _non_json: deque[str] = field(default_factory=lambda: deque(maxlen=_STDERR_TAIL), repr=False)

    def start(self) -> JsonLineProcess:
        """Spawn the program with its stdio piped."""
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        try:
            self._proc = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=self.cwd,
                # Own process group, so close() can kill a JVM's or node's helpers too.
                start_new_session=True,
            )
        except OSError as exc:
            raise ConformanceError(f"{self.label or self.argv[0]}: cannot start: {exc}") from exc
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()
        return self

    def _pump_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                parsed = json.loads(line)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                self._events.put(parsed)
            else:
                # Stray library logging on stdout; kept for diagnostics only.
                self._non_json.append(line)
        self._events.put(_EOF)

    def _pump_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line.rstrip())

    def send(self, obj: Mapping[str, Any]) -> None:
        """Write one JSON line to the program's stdin."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise ConformanceError(f"{self.label}: not started")
        try:
            proc.stdin.write(json.dumps(obj) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise ConformanceError(f"{self.label}: stdin closed ({self.diagnostics()})") from exc

    def close_stdin(self) -> None:
        """Signal end of commands (programs treat EOF as 'stop')."""
        proc = self._proc
        if proc is not None and proc.stdin is not None and not proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()

    def next_event(self, deadline: float) -> Event | None:
        """The next event before ``deadline`` (time.monotonic()); None on timeout.

        Raises ConformanceError when the program exited without another event.
        """
        remaining = deadline - time.monotonic()
        try:
            item = self._events.get(timeout=max(remaining, 0.0))
        except queue.Empty:
            return None
        if item is _EOF:
            # Keep EOF visible to later callers.
            self._events.put(_EOF)
            raise ConformanceError(f"{self.label}: exited ({self.diagnostics()})")
        assert isinstance(item, dict)
        return item

    def wait_for(self, match: Callable[[Event], bool], deadline: float, *, what: str) -> Event:
        """Return the first event satisfying ``match``; raise on timeout, exit or error event.

        Non-matching events are dropped.
        """
        while True:
            ev = self.next_event(deadline)
            if ev is None:
                raise ConformanceError(f"{self.label}: timed out waiting for {what} ({self.diagnostics()})")
            if ev.get("event") == "error":
                raise ConformanceError(f"{self.label}: {ev.get('error')}: {ev.get('message')}")
            if match(ev):
                return ev

    def returncode(self) -> int | None:
        """Exit status, or None while running."""
        return None if self._proc is None else self._proc.poll()

    def diagnostics(self) -> str:
        """Exit status plus the tail of stderr and stray stdout, for error messages."""
        rc = self.returncode()
        tail = list(self._stderr)[-8:] + list(self._non_json)[-4:]
        return f"rc={rc}; " + " | ".join(tail)

    def kill(self) -> int | None:
        """Kill the process group at once, as a crash would (no EOF on stdin first)."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
        rc = proc.wait()
        self.close_stdin()
        return rc

    def close(self, grace_s: float = 5.0) -> int | None:
        """Close stdin, wait up to ``grace_s``, then kill the process group."""
        proc = self._proc
        if proc is None:
            return None
        self.close_stdin()
        try:
            return proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            return proc.wait()

    def __enter__(self) -> JsonLineProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close(grace_s=2.0)


def run_json_command(
    argv: Sequence[str],
    command: Mapping[str, Any],
    timeout_s: float,
    *,
    env: Mapping[str, str] | None = None,
    label: str = "",
) -> list[Event]:
    """Run a one-shot client command: send ``command``, collect events until ``done``.

    Raises ConformanceError on an ``error`` event, an exit before ``done`` or the timeout
    (the process is killed then).
    """
    deadline = time.monotonic() + timeout_s
    events: list[Event] = []
    with JsonLineProcess(argv, env=env, label=label or argv[0]) as proc:
        proc.send(command)
        while True:
            try:
                ev = proc.next_event(deadline)
            except ConformanceError as exc:
                raise ConformanceError(f"{exc} after {len(events)} events") from exc
            if ev is None:
                raise ConformanceError(
                    f"{proc.label}: timed out after {timeout_s:.0f}s ({len(events)} events; {proc.diagnostics()})"
                )
            kind = ev.get("event")
            if kind == "error":
                raise ConformanceError(
                    f"{proc.label}: {ev.get('error')}: {ev.get('message')} ({proc.diagnostics()})"
                )
            if kind == "done":
                return events
            events.append(ev)

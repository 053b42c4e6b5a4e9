"""Share consumers (KIP-932) driven step by step over the JSON-lines driver protocol.

Every share consumer, built-in or outside, is a driver program that answers
``{"op": "share_consumer", ...}`` (docs/driver-protocol.md): it creates the consumer, says
``ready``, then takes one command per stdin line and ends each with ``{"event": "ok", "op"}`` or
``{"event": "failed", "op", "error", "message"}``:

``subscribe`` (topics) · ``poll`` (``share_record`` events, each with topic, partition, offset,
key, value, headers and delivery count) · ``acknowledge`` (topic, partition, offset, type
ACCEPT|RELEASE|REJECT|RENEW) · ``commit`` (one ``committed`` event per partition: error or null)
· ``commit_async`` (results come later as ``async_committed`` events) · ``lock_timeout``
(``{"event": "lock_timeout", "ms"}``, null where the client does not tell) · ``close``.

The built-in share drivers are programs of their own (Java ``java/ShareDriver.java``,
confluent-kafka ``_share_driver.py``, @kafkats/client ``js/share_driver.cjs``); an outside client's
driver is its ``--client-command``. Which program an adapter runs, and what it can do, come from
the adapter (``ClientAdapter.share_argv`` and the driver's ``describe`` answer), so a scenario
never names a client.

``ShareMember`` is what scenarios and tests hold: it keeps the records a poll returned, can
acknowledge any of them later, and can be killed mid-batch; the broker sees exactly what a real
application would make the client send.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kwire.conformance.clients._proc import Event, JsonLineProcess
from kwire.errors import ConformanceError

if TYPE_CHECKING:
    from kwire.conformance.clients.base import ClientAdapter

__all__ = [
    "ACK_TYPES",
    "AsyncCommit",
    "CommitResult",
    "Delivered",
    "ShareMember",
    "register_adapter",
    "share_adapter",
    "share_command",
    "SHARE_CLIENTS",
]

# The built-in clients with a share consumer (kept for callers that list them; scenarios ask the
# adapter's capabilities instead).
SHARE_CLIENTS = ("java", "confluent_kafka", "kafkats")
ACK_TYPES = ("ACCEPT", "RELEASE", "REJECT", "RENEW")
# Adapters known by name beyond the built-in ones (``--client-command`` drivers), so a
# ``ShareMember(name, ...)`` reaches the same program as the adapter.
_REGISTERED: dict[str, ClientAdapter] = {}


@dataclass(frozen=True, slots=True)
class Delivered:
    """One record a share consumer's poll returned."""

    partition: int
    offset: int
    delivery_count: int
    value: str
    topic: str = ""
    key: bytes | None = field(default=None, compare=False)
    headers: tuple[tuple[str, bytes | None], ...] = field(default=(), compare=False)
    raw_value: bytes | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class CommitResult:
    """One partition's result of commitSync: ``error`` is None on success, else the client's error kind."""

    topic: str
    partition: int
    error: str | None
    message: str = ""

    def line(self) -> str:
        """The legacy ``committed PARTITION RESULT`` form."""
        return f"committed {self.partition} {self.error or 'ok'}"


@dataclass(frozen=True, slots=True)
class AsyncCommit:
    """An acknowledgement commit the client reported later (commitAsync, or acks sent as made)."""

    topic: str
    partition: int
    offsets: tuple[int, ...]
    error: str | None

    def line(self) -> str:
        """The legacy ``async-committed PARTITION:[OFFSETS]`` form."""
        return f"async-committed {self.partition}:{list(self.offsets)}" + (f" error {self.error}" if self.error else "")


def register_adapter(adapter: ClientAdapter) -> None:
    """Make ``adapter`` reachable by its name (a ``--client-command`` driver)."""
    _REGISTERED[adapter.name] = adapter


def share_adapter(client: str | ClientAdapter) -> ClientAdapter:
    """The adapter behind a client name (built-in or registered) or the adapter itself."""
    if not isinstance(client, str):
        return client
    if client in _REGISTERED:
        return _REGISTERED[client]
    from kwire.conformance.clients import get_adapter

    return get_adapter(client)


def share_command(client: str | ClientAdapter, bootstrap: str = "", group: str = "", *, mode: str = "explicit",
                  config: dict[str, object] | None = None) -> tuple[list[str], dict[str, str] | None]:
    """The argv and extra environment of ``client``'s share driver (``bootstrap``, ``group``,
    ``mode`` and ``config`` travel in the ``share_consumer`` command, not on the command line).

    Raises:
        ConformanceError: the client has no share consumer, or it is not installed here.
    """
    adapter = share_adapter(client)
    reason = adapter.lacks("share_consumer")
    if reason is not None:
        raise ConformanceError(reason)
    if mode == "implicit" and (why := adapter.lacks("share_implicit")) is not None:
        raise ConformanceError(why)
    argv = adapter.share_argv()
    assert argv is not None  # lacks() said it has one
    return argv, adapter.share_env()


def _unhex(s: str | None) -> bytes | None:
    return None if s is None else bytes.fromhex(s)


class ShareMember:
    """One share consumer in its own driver process; each method is one driver command."""

    def __init__(self, client: str | ClientAdapter, bootstrap: str, group: str, *, mode: str = "explicit",
                 config: dict[str, object] | None = None, ready_timeout_s: float = 60.0) -> None:
        adapter = share_adapter(client)
        argv, env = share_command(adapter, bootstrap, group, mode=mode, config=config)
        self.adapter = adapter
        self.client = adapter.name
        self.group = group
        self.topics: list[str] = []
        self.async_results: list[AsyncCommit] = []
        self.async_commits: list[str] = []  # the same, as legacy lines
        self.last_commit: list[CommitResult] = []
        self.last_lock_timeout_ms: int | None = None
        self.closed = False
        self.proc = JsonLineProcess(argv, env=env, label=f"{adapter.name} share consumer").start()
        try:
            self.proc.send({"op": "share_consumer", "bootstrap": bootstrap, "group_id": group, "ack_mode": mode,
                            "config": {k: v for k, v in (config or {}).items()},
                            "timeout_ms": 600_000})
            deadline = time.monotonic() + ready_timeout_s
            while True:
                ev = self._next(deadline, "ready")
                if ev.get("event") == "ready":
                    break
        except BaseException:
            self.proc.close(grace_s=0)
            raise

    # --- the protocol ---------------------------------------------------------------------------
    def _next(self, deadline: float, what: str) -> Event:
        try:
            ev = self.proc.next_event(deadline)
        except ConformanceError as exc:
            raise ConformanceError(f"{self.client} {what}: the driver exited ({self.proc.diagnostics()})") from exc
        if ev is None:
            raise ConformanceError(f"{self.client} {what}: no answer in time ({self.proc.diagnostics()})")
        kind = ev.get("event")
        if kind == "error":
            raise ConformanceError(f"{self.client} {what}: {ev.get('error')}: {ev.get('message')}")
        if kind == "async_committed":
            res = AsyncCommit(str(ev.get("topic") or ""), int(ev.get("partition", -1)),
                              tuple(int(o) for o in ev.get("offsets") or ()), ev.get("error"))
            self.async_results.append(res)
            self.async_commits.append(res.line())
        elif kind == "closed":
            self.closed = True
        return ev

    def request(self, command: dict[str, Any], timeout_s: float = 60.0) -> tuple[list[Event], Event]:
        """Send one command; its events up to ``ok`` and the ``ok`` event itself.

        Raises:
            ConformanceError: the driver answered ``failed``, exited, or said nothing in time.
        """
        op = str(command["op"])
        try:
            self.proc.send(command)
        except ConformanceError as exc:
            raise ConformanceError(f"{self.client} {op}: the driver is gone ({exc})") from None
        out: list[Event] = []
        deadline = time.monotonic() + timeout_s
        while True:
            ev = self._next(deadline, op)
            kind = ev.get("event")
            if kind == "ok":
                return out, ev
            if kind == "failed":
                raise ConformanceError(f"{self.client} {op}: {ev.get('error')} {ev.get('message') or ''}".rstrip())
            if kind != "async_committed":
                out.append(ev)

    # --- what scenarios call --------------------------------------------------------------------
    def subscribe(self, topic: str, *more: str) -> None:
        self.topics = [topic, *more]
        self.request({"op": "subscribe", "topics": self.topics})

    def poll(self, ms: int = 500) -> list[Delivered]:
        events, ok = self.request({"op": "poll", "timeout_ms": ms}, timeout_s=ms / 1000 + 60)
        if ok.get("acquisition_lock_timeout_ms") is not None:
            self.last_lock_timeout_ms = int(ok["acquisition_lock_timeout_ms"])
        out = []
        for ev in events:
            if ev.get("event") != "share_record":
                continue
            value = _unhex(ev.get("value"))
            out.append(Delivered(
                int(ev["partition"]), int(ev["offset"]), int(ev.get("delivery_count", -1) if
                                                              ev.get("delivery_count") is not None else -1),
                (value or b"").decode(errors="replace"), str(ev.get("topic") or (self.topics or [""])[0]),
                _unhex(ev.get("key")), tuple((str(k), _unhex(v)) for k, v in ev.get("headers") or ()), value))
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
        """acknowledge(record, kind) with kind ACCEPT, RELEASE, REJECT or RENEW."""
        if kind not in ACK_TYPES:
            raise ConformanceError(f"unknown acknowledge type {kind!r}")
        self.request({"op": "acknowledge", "topic": r.topic or (self.topics or [""])[0], "partition": r.partition,
                      "offset": r.offset, "type": kind})

    def commit_results(self, timeout_s: float = 60.0) -> list[CommitResult]:
        """commitSync: one result per partition (none where the client acknowledges as it goes)."""
        events, _ = self.request({"op": "commit"}, timeout_s)
        self.last_commit = [CommitResult(str(e.get("topic") or ""), int(e.get("partition", -1)), e.get("error"),
                                         str(e.get("message") or ""))
                            for e in events if e.get("event") == "committed"]
        return self.last_commit

    def commit(self) -> list[str]:
        """commitSync as ``committed PARTITION RESULT`` lines (RESULT ``ok`` or the error kind)."""
        return [r.line() for r in self.commit_results()]

    def commit_async(self) -> None:
        self.request({"op": "commit_async"})

    def lock_timeout_ms(self) -> int:
        """The acquisition lock timeout the client reports; -1 where it does not tell."""
        events, _ = self.request({"op": "lock_timeout"})
        got = next((e.get("ms") for e in events if e.get("event") == "lock_timeout"), None)
        return -1 if got is None else int(got)

    def close(self, timeout_s: float = 60.0) -> None:
        """close(): the client sends its last acknowledgements and leaves; the process ends."""
        if self.proc.returncode() is None and not self.closed:
            try:
                with contextlib.suppress(ConformanceError):
                    self.proc.send({"op": "close"})
                deadline = time.monotonic() + timeout_s
                while not self.closed:
                    ev = self._next(deadline, "close")
                    if ev.get("event") == "failed":
                        raise ConformanceError(f"{self.client} close: {ev.get('error')} {ev.get('message')}")
            finally:
                self.kill()

    def kill(self) -> None:
        """End the process at once, as a crash would (its connections drop)."""
        self.proc.kill()

"""Child program that drives the ``kcat`` CLI (Debian's, librdkafka 2.0.2) over the JSON-lines protocol.

``python -m kwire.conformance.clients._kcat_driver < command.json``

kcat has no per-record API, so:

* produce: consecutive records sharing partition, headers and null-ness of the value
  go to one ``kcat -P`` run; keys and values are framed with delimiters that must not
  occur in the data (``-K``/``-D``); ``-Z`` turns empty values into NULL. Headers come
  from ``-H name=value`` arguments, so they are text without NULL values. kcat prints
  no delivery reports, so ``produced`` events carry ``offset: null``.
* consume: ``-f '%p %o %K %S %h\\n%k%s\\n'`` prints lengths before the raw key and
  value bytes, so binary data is read back exactly.
* producer (long-lived): one ``kcat -P -E -v -v`` fed ``key:value\n`` lines, so keys and
  values are text without those delimiters. kcat reads stdin in 128-byte ``fread``s and
  hands on a record only once 128 more bytes have arrived, so the driver insists on lines
  of exactly ``STREAM_LINE`` bytes, which then stream one per read. ``-v -v`` makes kcat
  print a delivery report per record, from which come ``produced`` events with ``seq:
  null`` (a report names partition and offset only); kcat serves those reports when it
  reads the next record or at EOF, so they arrive late.
* member: ``kcat -G`` (balanced consumer) with the ``assigned:``/``revoked:`` lines of
  its stderr as assignment events; stop is SIGTERM, on which kcat commits and leaves.
  kcat auto-commits every 100 ms and on revoke/close, so a reported record is
  committed before its partition changes owner.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

KEY_DELIM = b"\x1f\x1eKWK\x1e\x1f"  # no NUL: kcat reads -K/-D as C strings
MSG_DELIM = b"\x1e\x1fKWM\x1f\x1e"
FORMAT = "%p %o %K %S %h\\n%k%s\\n"
SESSION_TIMEOUT_MS = 6000
STREAM_LINE = 128  # kcat's stdin read size (input.c: read_size)
HEARTBEAT_INTERVAL_MS = 500
_DELIVERED_RE = re.compile(r"Message delivered to partition (-?\d+) \(offset (-?\d+)\)")
_DELIVERY_FAILED = "Delivery failed for message"
_ASSIGN_RE = re.compile(r"rebalanced .*: (assigned|revoked): (.*)$")
_TP_RE = re.compile(r"\[(\d+)\]")


class KcatError(Exception):
    """kcat exited non-zero or printed something unparsable."""


def emit(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _unhex(s: str | None) -> bytes | None:
    return None if s is None else bytes.fromhex(s)


def _escape(delim: bytes) -> str:
    # kcat parses \xNN escapes in -K/-D arguments.
    return "".join(f"\\x{b:02x}" for b in delim)


def _kcat() -> str:
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        raise KcatError("kcat is not installed")
    return path


def _config_args(cmd: dict[str, Any]) -> list[str]:
    out = []
    for k, v in (cmd.get("config") or {}).items():
        out += ["-X", f"{k}={v}"]
    return out


def produce(cmd: dict[str, Any]) -> None:
    timeout_s = cmd["timeout_ms"] / 1000
    deadline = time.monotonic() + timeout_s
    records = cmd["records"]
    i = 0
    while i < len(records):
        first = records[i]
        run_key = (first.get("partition"), json.dumps(first.get("headers") or []), first.get("value") is None)
        j = i
        payload = bytearray()
        while j < len(records):
            r = records[j]
            if (r.get("partition"), json.dumps(r.get("headers") or []), r.get("value") is None) != run_key:
                break
            key, value = _unhex(r.get("key")), _unhex(r.get("value")) or b""
            for part in (key or b"", value):
                if KEY_DELIM in part or MSG_DELIM in part:
                    raise KcatError("record data contains kcat's framing delimiter")
            if key is not None:
                payload += key + KEY_DELIM
            payload += value + MSG_DELIM
            j += 1
        argv = [
            _kcat(),
            "-b",
            cmd["bootstrap"],
            "-P",
            "-t",
            cmd["topic"],
            "-K",
            _escape(KEY_DELIM),
            "-D",
            _escape(MSG_DELIM),
        ]
        argv += ["-z", cmd.get("compression", "none"), "-X", f"acks={cmd.get('acks', -1)}"]
        argv += ["-X", f"message.timeout.ms={int(cmd['timeout_ms'])}"]
        if run_key[0] is not None:
            argv += ["-p", str(run_key[0])]
        if run_key[2]:
            argv.append("-Z")
        for name, val in first.get("headers") or []:
            if val is None:
                raise KcatError("kcat cannot send a header with a NULL value")
            argv += ["-H", f"{name}={bytes.fromhex(val).decode()}"]
        argv += _config_args(cmd)
        res = subprocess.run(
            argv, input=bytes(payload), capture_output=True, timeout=max(deadline - time.monotonic(), 1)
        )
        if res.returncode != 0 or b"ERROR" in res.stderr:
            raise KcatError(f"kcat -P exited {res.returncode}: {res.stderr.decode(errors='replace').strip()}")
        for _ in range(i, j):
            emit(event="produced", partition=run_key[0], offset=None)
        i = j


def producer(cmd: dict[str, Any]) -> None:
    argv = [_kcat(), "-b", cmd["bootstrap"], "-P", "-E", "-v", "-v", "-t", cmd["topic"], "-K", ":"]
    argv += ["-z", cmd.get("compression", "none"), "-X", f"acks={cmd.get('acks', -1)}"]
    argv += ["-X", f"message.timeout.ms={int(cmd['timeout_ms'])}"] + _config_args(cmd)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    err = proc.stderr

    def watch_stderr() -> None:
        for raw in err:
            line = raw.decode(errors="replace").rstrip()
            m = _DELIVERED_RE.search(line)
            if m:
                emit(event="produced", seq=None, partition=int(m.group(1)), offset=int(m.group(2)))
            elif _DELIVERY_FAILED in line:
                emit(event="produce_failed", seq=None, message=line)

    reader = threading.Thread(target=watch_stderr, daemon=True)
    reader.start()
    lifetime = threading.Timer(cmd["timeout_ms"] / 1000, proc.terminate)
    lifetime.start()
    emit(event="ready")
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            c = json.loads(line)
            if c.get("op") == "stop":
                break
            out = bytearray()
            for r in c.get("records") or ():
                key, value = _unhex(r.get("key")), _unhex(r.get("value"))
                if key is None or value is None or r.get("headers") or r.get("partition") is not None:
                    raise KcatError("kcat's streaming producer takes text keys and values only")
                if b":" in key or b"\n" in key or b"\n" in value:
                    raise KcatError("record data contains kcat's streaming delimiters")
                line = key + b":" + value + b"\n"
                if len(line) != STREAM_LINE:
                    raise KcatError(f"kcat streams only {STREAM_LINE}-byte key:value lines, not {len(line)}")
                out += line
            proc.stdin.write(bytes(out))
            proc.stdin.flush()
        proc.stdin.close()  # EOF: kcat flushes, waits for every delivery report and exits
        rc = proc.wait()
        reader.join()
    finally:
        lifetime.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if rc != 0:
        raise KcatError(f"kcat -P exited {rc}")
    emit(event="closed")


def _parse_headers(text: str) -> list[list[str | None]]:
    out: list[list[str | None]] = []
    if not text:
        return out
    for item in text.split(","):
        name, eq, val = item.partition("=")
        out.append([name, val.encode().hex() if eq else None])
    return out


def read_records(stream: IO[bytes]) -> Iterator[dict[str, Any]]:
    """Parse kcat's FORMAT output into record events."""
    while True:
        line = stream.readline()
        if not line:
            return
        head = line.rstrip(b"\n").decode()
        fields = head.split(" ", 4)
        part, off, klen, vlen = (int(x) for x in fields[:4])
        key = stream.read(max(klen, 0)) if klen >= 0 else None
        value = stream.read(max(vlen, 0)) if vlen >= 0 else None
        stream.read(1)  # the newline after the payload
        yield {
            "event": "record",
            "partition": part,
            "offset": off,
            "key": None if key is None else key.hex(),
            "value": None if value is None else value.hex(),
            "headers": _parse_headers(fields[4] if len(fields) > 4 else ""),
        }


def consume(cmd: dict[str, Any]) -> None:
    timeout_s = cmd["timeout_ms"] / 1000
    start = "beginning" if cmd.get("from_beginning", True) else "end"
    argv = [_kcat(), "-b", cmd["bootstrap"], "-c", str(cmd["count"]), "-f", FORMAT, "-q"]
    if cmd.get("group_id"):
        argv += [
            "-G",
            cmd["group_id"],
            "-X",
            f"auto.offset.reset={'earliest' if start == 'beginning' else 'latest'}",
        ]
        argv += [
            "-X",
            f"session.timeout.ms={SESSION_TIMEOUT_MS}",
            "-X",
            f"heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}",
        ]
        argv += _config_args(cmd) + [cmd["topic"]]
    else:
        argv += ["-C", "-t", cmd["topic"], "-o", start] + _config_args(cmd)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Fewer records than asked is not an error: stop kcat at the deadline.
    timer = threading.Timer(timeout_s, proc.terminate)
    timer.start()
    try:
        assert proc.stdout is not None
        for ev in read_records(proc.stdout):
            emit(**ev)
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def member(cmd: dict[str, Any]) -> None:
    # -u: unbuffered stdout, or records sit in kcat's stdio buffer.
    argv = [_kcat(), "-b", cmd["bootstrap"], "-G", cmd["group_id"], "-u", "-f", FORMAT]
    argv += ["-X", "auto.offset.reset=earliest", "-X", f"session.timeout.ms={SESSION_TIMEOUT_MS}"]
    argv += ["-X", f"heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}", "-X", "auto.commit.interval.ms=100"]
    argv += _config_args(cmd) + [cmd["topic"]]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    owned: set[int] = set()

    def watch_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            m = _ASSIGN_RE.search(raw.decode(errors="replace").rstrip())
            if not m:
                continue
            parts = {int(p) for p in _TP_RE.findall(m.group(2))}
            if m.group(1) == "assigned":
                owned.update(parts)
            else:
                owned.difference_update(parts)
            emit(event="assignment", partitions=sorted(owned))

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() and json.loads(line).get("op") == "stop":
                break
        proc.send_signal(signal.SIGTERM)

    threading.Thread(target=watch_stderr, daemon=True).start()
    threading.Thread(target=watch_stdin, daemon=True).start()
    lifetime = threading.Timer(cmd["timeout_ms"] / 1000, proc.terminate)
    lifetime.start()
    emit(event="ready")
    assert proc.stdout is not None
    for ev in read_records(proc.stdout):
        emit(**ev)
    proc.wait()
    lifetime.cancel()
    emit(event="closed")


def main() -> int:
    """Run the command on stdin."""
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print("usage: python -m kwire.conformance.clients._kcat_driver < command.json")
        return 0
    try:
        cmd = json.loads(sys.stdin.readline())
        {"produce": produce, "consume": consume, "member": member, "producer": producer}[cmd["op"]](cmd)
        if cmd["op"] not in ("member", "producer"):
            emit(event="done")
        return 0
    except Exception as exc:  # noqa: BLE001 - every failure goes to the parent as an event
        emit(event="error", error=type(exc).__name__, message=str(exc))
        return 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)

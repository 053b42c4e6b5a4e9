"""confluent-kafka's ShareConsumer driven line by line over stdin, the share protocol every share
driver speaks (``kwire/conformance/clients/share.py``).

``python -m kwire.conformance.clients._share_driver BOOTSTRAP GROUP``

Commands: ``subscribe TOPIC`` | ``poll MS`` | ``ack PARTITION OFFSET TYPE`` | ``commit`` |
``commitasync`` | ``locktimeout`` | ``close``; each answered by its output lines and ``ok`` (or
``error CLASS MESSAGE``). ``poll`` prints ``rec PARTITION OFFSET DELIVERYCOUNT VALUE`` per record.
"""

from __future__ import annotations

import sys
import time
from typing import Any


def main() -> int:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    bootstrap, group = sys.argv[1], sys.argv[2]
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit", "log_level": 3})
    held: dict[tuple[Any, Any], Any] = {}
    commits: list[str] = []

    def on_commit(offsets: Any, err: Any) -> None:
        # (acknowledged offsets by partition, the error or None)
        done = " ".join(f"{tp.partition}:{sorted(o)}" for tp, o in (offsets or {}).items())
        commits.append(f"async-committed {done}" + (f" error {err}" if err else ""))

    if hasattr(c, "set_acknowledgement_commit_callback"):
        c.set_acknowledgement_commit_callback(on_commit)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "subscribe":
                c.subscribe([cmd[1]])
            elif cmd[0] == "poll":
                deadline = time.monotonic() + int(cmd[1]) / 1000
                got = False
                while not got and time.monotonic() < deadline:
                    for m in c.poll(max(0.0, deadline - time.monotonic())) or []:
                        if m.error() is not None:
                            continue
                        got = True
                        held[(m.partition(), m.offset())] = m
                        value = (m.value() or b"").decode(errors="replace")
                        print(f"rec {m.partition()} {m.offset()} {m.delivery_count()} {value}")
            elif cmd[0] == "ack":
                kind = getattr(AcknowledgeType, cmd[3])
                c.acknowledge(held[(int(cmd[1]), int(cmd[2]))], kind)
            elif cmd[0] == "commit":
                for tp, err in (c.commit_sync() or {}).items():
                    result = "ok" if err is None and tp.error is None else type(err or tp.error).__name__
                    print(f"committed {tp.partition} {result}")
            elif cmd[0] == "commitasync":
                c.commit_async()
            elif cmd[0] == "locktimeout":
                print("lock -1")  # not exposed by this client
            elif cmd[0] == "close":
                c.close()
                print("ok", flush=True)
                return 0
            else:
                raise ValueError(f"unknown command {cmd[0]}")
            for done in commits:
                print(done)
            commits.clear()
            print("ok", flush=True)
        except Exception as exc:  # noqa: BLE001 - every failure goes to the parent as a line
            print(f"error {type(exc).__name__} {exc}".replace("\n", " "), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

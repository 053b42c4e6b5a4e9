"""``kwire broker``: run a mock Kafka cluster until Ctrl-C / SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=9092, help="port of the first broker (0: any free port)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--brokers", type=int, default=1, help="number of brokers (consecutive ports)")
    p.add_argument("--data-dir", help="keep partitions in Kafka's segment format under DIR")
    p.add_argument("--sasl", metavar="USER:PASSWORD", action="append",
                   help="require SASL (PLAIN, SCRAM-SHA-256/512) with this user; repeatable")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], help="a broker config setting")
    p.add_argument("--topic", metavar="NAME[:PARTITIONS]", action="append", default=[], help="create a topic")
    p.add_argument("--quiet", action="store_true", help="do not log connections")
    p.add_argument("--record", metavar="FILE|DIR",
                   help="record every request and response; written when the broker stops: FILE.pcapng as a "
                        "capture Wireshark and tshark open (kwire decode --pcap reads it), else DIR of request "
                        "fixtures that kwire replay takes")


def run(args: argparse.Namespace) -> int:
    from kwire.cli import CliError
    from kwire.control import Broker, BrokerConfig, SaslConfig

    settings = {}
    for item in args.set:
        if "=" not in item:
            raise CliError(f"--set takes KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        settings[k] = v
    sasl = None
    if args.sasl:
        users = {}
        for item in args.sasl:
            if ":" not in item:
                raise CliError(f"--sasl takes USER:PASSWORD, got {item!r}")
            u, pw = item.split(":", 1)
            users[u] = pw
        sasl = SaslConfig(users=users)
    config = BrokerConfig(brokers=args.brokers, host=args.host, port=args.port, data_dir=args.data_dir,
                          sasl=sasl, settings=settings, log_connections=not args.quiet)

    def line(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)

    topics = [_topic_spec(spec) for spec in args.topic]
    broker = Broker(config, on_line=line).start()
    if args.record:
        broker.start_recording()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        for name, parts in topics:
            _ensure_topic(broker, name, parts)
        print(f"kwire broker: bootstrap servers {broker.bootstrap}", flush=True)
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        recorded = broker.recorded() if args.record else None
        broker.stop()
        if recorded is not None:
            print(f"kwire broker: {_save_recording(recorded, args.record)}", file=sys.stderr, flush=True)
        print("kwire broker: stopped", file=sys.stderr, flush=True)
    return 0


def _topic_spec(spec: str) -> tuple[str, int]:
    """NAME[:PARTITIONS] -> (name, partitions), checked before the broker starts."""
    from kwire.cli import CliError

    name, sep, parts = spec.partition(":")
    if not name:
        raise CliError(f"--topic takes NAME[:PARTITIONS], got {spec!r}")
    if not sep:
        return name, 1
    try:
        count = int(parts)
    except ValueError:
        raise CliError(f"--topic {spec!r}: PARTITIONS must be a whole number, got {parts!r}") from None
    if count < 1:
        raise CliError(f"--topic {spec!r}: PARTITIONS must be at least 1")
    return name, count


def _ensure_topic(broker: Any, name: str, partitions: int) -> None:
    """Create the topic, or accept it as it is when a restored data dir already has it."""
    from kwire.cli import CliError

    have = broker.call(lambda: len(t.partitions) if (t := broker.core.cluster.topics.get(name)) else None)
    if have is None:
        broker.create_topic(name, partitions)
    elif have != partitions:
        raise CliError(f"--topic {name}:{partitions}: the topic already exists with {have} partition(s)")


def _save_recording(exchanges: list[Any], target: str) -> str:
    """Write the recording as pcapng (a ``.pcapng`` name) or as replayable request fixtures (a directory)."""
    from pathlib import Path

    if target.endswith(".pcapng"):
        from kwire.capture.writer import write_exchanges_pcapng

        packets = write_exchanges_pcapng(exchanges, target, comment="kwire broker --record")
        return f"recorded {len(exchanges)} exchanges ({packets} packets) to {target}"
    from kwire.recording import export_exchanges

    paths = export_exchanges(exchanges, Path(target))
    return f"recorded {len(exchanges)} exchanges as {len(paths)} fixtures in {target}"

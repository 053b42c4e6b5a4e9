"""``kwire broker``: run a mock Kafka cluster until Ctrl-C / SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Any

from kwire.cli._numbers import BROKERS, LISTEN_PORT

EXAMPLES = """examples:
  kwire broker                                         one broker on 127.0.0.1:9092
  kwire broker --port 0 --ready-file ready.json        any free port; the address lands in ready.json
  kwire broker --brokers 3 --topic orders:6            three brokers, a 6-partition topic
  kwire broker --data-dir ./kafka-data                 keep logs, offsets and share state across restarts
  kwire broker --set share.version=1 -v                share groups without the DLQ; a line per request
  kwire broker --host 0.0.0.0 --advertised-host kwire  in a container
  kwire broker --record traffic.pcapng                 the traffic as a capture when the broker stops
  kwire broker --tls                                   PLAINTEXT on 9092 and SSL on 9093 (a throwaway CA, path printed)
  kwire broker --tls --sasl alice:secret               SASL_PLAINTEXT on 9092 and SASL_SSL on 9093
  TLS as in server.properties (a PEM keystore and trust store, client certificates required):
  kwire broker --set listeners=PLAINTEXT://:9092,SSL://:9093 --set ssl.keystore.type=PEM \\
      --set ssl.keystore.location=broker.pem --set ssl.client.auth=required \\
      --set ssl.truststore.type=PEM --set ssl.truststore.location=ca.pem
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = "Run a mock Kafka cluster until Ctrl-C or SIGTERM."
    p.epilog = EXAMPLES
    p.add_argument("--port", type=LISTEN_PORT, default=9092, help="port of the first broker; 0: any free port (default: 9092)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--advertised-host", metavar="HOST",
                   help="host name clients are given in Metadata (default: --host)")
    p.add_argument("--brokers", type=BROKERS, default=1, help="number of brokers on consecutive ports (default: 1)")
    p.add_argument("--data-dir", help="keep partitions in Kafka's segment format, offsets and state under DIR "
                                      "(default: in memory only)")
    p.add_argument("--sasl", metavar="USER:PASSWORD", action="append",
                   help="require SASL with this user (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; OAUTHBEARER takes "
                        "unsecured JWS tokens and needs no user); repeatable")
    p.add_argument("--tls", action="store_true",
                   help="add a TLS listener on the next port: SSL (SASL_SSL with --sasl) beside PLAINTEXT "
                        "(SASL_PLAINTEXT); without ssl.keystore.location a throwaway CA is made and its file printed")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="a broker config setting, e.g. transaction.version=1; repeatable")
    p.add_argument("--topic", metavar="NAME[:PARTITIONS]", action="append", default=[],
                   help="create a topic (1 partition unless given); repeatable")
    p.add_argument("--ready-file", metavar="PATH",
                   help="once listening, write {\"bootstrap\": ..., \"pid\": ..., \"listeners\": {NAME: ...}, "
                        "\"ca_file\": ...} to PATH (atomically)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="one line per request: broker, connection, api and version, client id, correlation id, "
                        "error codes, latency on the broker clock")
    p.add_argument("--quiet", action="store_true", help="do not log connections")
    p.add_argument("--record", metavar="FILE|DIR",
                   help="record every request and response; written when the broker stops: FILE.pcapng as a "
                        "capture Wireshark and tshark open (kwire decode --pcap reads it; each request and answer "
                        "at its real time in µs, so latency is real; addresses synthetic: 127.0.0.1:40000+"
                        "connection id to 9092+broker), "
                        "else DIR of request fixtures that kwire replay takes")


def run(args: argparse.Namespace) -> int:
    from kwire.cli import CliError
    from kwire.control import Broker, BrokerConfig, SaslConfig

    if args.port and args.port + args.brokers - 1 > 65535:
        raise CliError(f"--port {args.port} with --brokers {args.brokers}: the last broker's port would be "
                       f"{args.port + args.brokers - 1}, above 65535")
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
    if args.tls:
        if "listeners" in settings:
            raise CliError("--tls adds a listener to the default one; with --set listeners=... name the SSL "
                           "listener there instead")
        plain, tls = ("SASL_PLAINTEXT", "SASL_SSL") if sasl is not None else ("PLAINTEXT", "SSL")
        settings["listeners"] = f"{plain}://:{args.port},{tls}://:{args.port + 1 if args.port else 0}"
    if args.data_dir and os.path.exists(args.data_dir) and not os.path.isdir(args.data_dir):
        raise CliError(f"--data-dir {args.data_dir} is not a directory")
    if args.data_dir:
        try:  # here, so a path that cannot be a directory is named by its option
            os.makedirs(args.data_dir, exist_ok=True)
        except OSError as exc:
            raise CliError(f"--data-dir {args.data_dir}: cannot create it ({exc.strerror or exc})") from None
    config = BrokerConfig(brokers=args.brokers, host=args.host, port=args.port, data_dir=args.data_dir,
                          sasl=sasl, settings=settings, log_connections=not args.quiet,
                          advertised_host=args.advertised_host)

    def line(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)

    topics = [_topic_spec(spec) for spec in args.topic]
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    stats_wanted = threading.Event()
    if hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, lambda *_: stats_wanted.set())
    broker = None
    interrupted = False
    try:
        broker = Broker(config, on_line=line).start()
        if args.record:
            broker.start_recording()
        if args.verbose:
            _log_requests(broker, keep=bool(args.record))
        restored = _restore_summary(broker) if args.data_dir else None  # before --topic adds any
        for name, parts in topics:
            _ensure_topic(broker, name, parts)
        listeners = broker.listeners
        if args.ready_file:
            _write_ready(args.ready_file, broker.bootstrap, listeners, broker.ca_file)
        # The ready line comes first: scripts read the address from the first line.
        print(f"kwire broker: bootstrap servers {broker.bootstrap}", flush=True)
        if len(listeners) > 1 or next(iter(listeners)) != "PLAINTEXT":
            for name, servers in listeners.items():
                print(f"kwire broker: listener {name} {servers}", flush=True)
        if broker.ca_file is not None:
            print(f"kwire broker: TLS CA certificate {broker.ca_file} (clients: ssl.ca.location={broker.ca_file}; "
                  f"Java: ssl.truststore.type=PEM ssl.truststore.location={broker.ca_file})", flush=True)
        if restored is not None:
            print(f"kwire broker: {restored}", flush=True)
        while not done.wait(0.2):
            if stats_wanted.is_set():
                stats_wanted.clear()
                for text in _stats_lines(broker):
                    print(f"kwire broker: {text}", flush=True)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if broker is not None:
            recorded = broker.recorded() if args.record else None
            broker.stop()
            if recorded is not None:
                print(f"kwire broker: {_save_recording(recorded, args.record)}", file=sys.stderr, flush=True)
        if broker is not None or interrupted:  # a failed start says its cause in one line, nothing more
            print("kwire broker: stopped", file=sys.stderr, flush=True)
    return 0


def _stats_lines(broker: Any) -> list[str]:
    """SIGUSR1: KIP-1191's dead-letter metrics per share group, and the transaction coordinator's counts."""

    def run() -> list[str]:
        core = broker.core
        out = []
        share = core.subsystems.share_groups
        for group, st in sorted((share.dlq.stats if share else {}).items()):
            failures = ", ".join(f"{n} x {cause}" for cause, n in st.failures.items()) or "none"
            out.append(f"dlq group {group}: records written {st.records_written}, produce requests "
                       f"{st.produce_requests}, failed produce requests {st.failed_produce_requests}, "
                       f"not written: {failures}")
        txn = core.subsystems.transactions
        if txn is not None:
            s = txn.statistics()
            out.append(f"transactions: {s.transactional_ids} transactional ids {s.by_state}, "
                       f"{s.pending_markers} markers pending")
        return out or ["nothing to report yet"]

    return list(broker.call(run))


def _write_ready(path: str, bootstrap: str, listeners: dict[str, str] | None = None,
                 ca_file: str | None = None) -> None:
    import json
    import os

    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"bootstrap": bootstrap, "pid": os.getpid(), "listeners": listeners or {}, "ca_file": ca_file}, f)
    os.replace(tmp, path)


def _restore_summary(broker: Any) -> str:
    """What a data dir brought back: topics, partitions, records, groups, transactional ids, share state."""

    def run() -> str:
        core = broker.core
        topics = [t for t in core.cluster.topics.values() if not t.internal]
        parts = sum(len(t.partitions) for t in topics)
        records = sum(p.log.log_end_offset - p.log.log_start_offset for t in topics for p in t.partitions)
        groups = len(core.subsystems.offsets.groups())
        txn = core.subsystems.transactions
        share = core.subsystems.share_groups
        if not topics and not core.subsystems.offsets.groups():
            return f"data dir {core.config.data_dir}: nothing to restore, starting afresh"
        return (f"restored {len(topics)} topics, {parts} partitions, {records} offsets of records, committed "
                f"offsets of {groups} groups, {len(txn.transactions) if txn else 0} transactional ids, "
                f"{len(share.partitions) if share else 0} share partitions from {core.config.data_dir}")

    return str(broker.call(run))


def _log_requests(broker: Any, *, keep: bool) -> None:
    """-v: a line per answered request (recording on; without --record nothing is kept)."""

    def on_answer(ex: Any) -> None:
        from kwire.protocol.registry import api_info

        codes = ",".join(sorted(set(error_names(ex.response, broker.core.error_code_name)))) or "-"
        latency = (ex.response_at_ms or ex.at_ms) - ex.at_ms
        print(f"{time.strftime('%H:%M:%S')} broker {ex.broker_id} conn {ex.conn_id} "
              f"{api_info(ex.api_key).name} v{ex.api_version} client {ex.client_id!r} corr {ex.correlation_id} "
              f"errors {codes} {latency} ms", flush=True)

    class _Forget(list):  # type: ignore[type-arg]
        def append(self, item: Any) -> None:  # -v alone keeps nothing
            pass

    def install() -> None:
        if not keep:
            broker.core.recording = _Forget()
        broker.core.on_answer = on_answer

    broker.call(install)


def error_names(msg: Any, name_of: Any) -> list[str]:
    """Every non-zero ``*ErrorCode`` field of a response, at any depth (AddPartitionsToTxn's
    PartitionErrorCode, ShareAcknowledge's AcknowledgeErrorCode, ...), as ``name_of(code)``."""
    out: list[str] = []

    def walk(m: Any) -> None:
        for f in getattr(type(m), "_fields", ()):
            v = getattr(m, f.attr, None)
            if f.name.endswith("ErrorCode"):
                if v:
                    out.append(name_of(v))
            elif isinstance(v, list):
                for item in v:
                    if hasattr(type(item), "_fields"):
                        walk(item)
            elif hasattr(type(v), "_fields"):
                walk(v)

    walk(msg)
    return out


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
    if not 1 <= count <= 2**31 - 1:
        raise CliError(f"--topic {spec!r}: PARTITIONS must be at least 1 and at most {2**31 - 1}")
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

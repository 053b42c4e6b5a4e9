"""``kwire dlq``: look into dead-letter topics and replay them.

``kwire dlq inspect (--bootstrap HOST:PORT | --data-dir DIR) TOPIC [--json]`` prints one row per
record: where it came from (topic, partition, offset, group), its delivery count and error, read
from KIP-1191's ``__dlq.errors.*`` headers or the Kafka Connect, Spring Kafka and ``x-original-*``
conventions. ``kwire dlq replay --bootstrap HOST:PORT TOPIC (--to-original | --to TOPIC)
[--group G] [--source-topic T] [--error TEXT] [--dry-run]`` re-produces them without their DLQ
headers, once (see ``kwire.dlq_tools``).
"""

from __future__ import annotations

import argparse
import json
import sys

from kwire.cli._security import add_security_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    ins = sub.add_parser("inspect", help="list a dead-letter topic's records and where they came from")
    src = ins.add_mutually_exclusive_group(required=True)
    src.add_argument("--bootstrap", "-b", metavar="HOST:PORT[,...]", help="read from a live cluster")
    src.add_argument("--data-dir", metavar="DIR", help="read a broker's data dir (Kafka's log layout)")
    ins.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    ins.add_argument("topic", help="the dead-letter topic")
    add_security_arguments(ins)
    rep = sub.add_parser("replay", help="re-produce dead letters to their original topic (idempotent)")
    rep.add_argument("--bootstrap", "-b", required=True, metavar="HOST:PORT[,...]")
    dest = rep.add_mutually_exclusive_group(required=True)
    dest.add_argument("--to-original", action="store_true", help="back to each record's original topic and partition")
    dest.add_argument("--to", metavar="TOPIC", help="to this topic (partition: original partition modulo its count)")
    rep.add_argument("--group", help="only records of this group (KIP-1191 group, Connect connector, Spring group)")
    rep.add_argument("--source-topic", help="only records that came from this topic")
    rep.add_argument("--error", metavar="TEXT", help="only records whose error contains TEXT")
    rep.add_argument("--dry-run", action="store_true", help="say what would be produced, produce nothing")
    rep.add_argument("--allow-empty", action="store_true",
                     help="also replay records without key and value (a DLQ that did not copy the payload: "
                          "errors.deadletterqueue.copy.record.enable=false); skipped by default")
    rep.add_argument("topic", help="the dead-letter topic")
    add_security_arguments(rep)


def run(args: argparse.Namespace) -> int:
    from kwire import dlq_tools
    from kwire.cli._security import client_security

    if args.action == "inspect":
        if args.data_dir:
            letters = list(dlq_tools.read_data_dir(args.data_dir, args.topic))
        else:
            from kwire.client import WireClient

            with WireClient(args.bootstrap, client_id="kwire-dlq", security=client_security(args)) as client:
                letters = list(dlq_tools.read_cluster(client, args.topic))
        if args.json:
            for d in letters:
                sys.stdout.write(json.dumps(d.as_dict()) + "\n")
            return 0
        from kwire.cli._io import print_table

        print_table(["partition", "offset", "convention", "from topic", "from partition", "from offset", "group",
                     "deliveries", "error"],
                    [[d.dlq_partition, d.dlq_offset, d.convention, d.source_topic or "-",
                      "-" if d.source_partition is None else d.source_partition,
                      "-" if d.source_offset is None else d.source_offset, d.group or "-",
                      "-" if d.delivery_count is None else d.delivery_count, d.error or ""] for d in letters])
        return 0
    from kwire.client import WireClient

    def keep(d: dlq_tools.DeadLetter) -> bool:
        return ((args.group is None or d.group == args.group)
                and (args.source_topic is None or d.source_topic == args.source_topic)
                and (args.error is None or args.error in (d.error or "")))

    with WireClient(args.bootstrap, client_id="kwire-dlq", security=client_security(args)) as client:
        letters = list(dlq_tools.read_cluster(client, args.topic))
        result = dlq_tools.replay(client, letters, to_topic=args.to, keep=keep, dry_run=args.dry_run,
                                  allow_empty=args.allow_empty)
    verb = "would produce" if args.dry_run else "produced"
    for topic, partition, d in result.planned:
        print(f"{verb} {d.dlq_topic}/{d.dlq_partition}/{d.dlq_offset} -> {topic}-{partition}")
    count = len(result.planned) if args.dry_run else result.produced
    print(f"replay: {verb} {count}, already replayed {result.skipped_already}, "
          f"no original topic {result.skipped_unknown}, no payload {result.skipped_no_payload}", file=sys.stderr)
    if result.skipped_no_payload:
        print(f"replay: {result.skipped_no_payload} dead letters carry no key and no value (the DLQ did not copy "
              "them: errors.deadletterqueue.copy.record.enable=false) and were not replayed; --allow-empty "
              "replays them as empty records", file=sys.stderr)
    return 0

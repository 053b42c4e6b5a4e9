"""Write docs/group-configs.md from kwire's config data: every group config, and the broker and topic
configs of share groups and their dead-letter queues.

  python tools/gen_config_docs.py           write the page
  python tools/gen_config_docs.py --check   exit 1 if the committed page differs from a fresh one

The rows come from the ConfigDefs in ``kwire/broker/core/configs.py`` (``GROUP_CONFIGS``,
``ALL_BROKER_CONFIGS``, ``TOPIC_CONFIGS``): name, type, default, range (min/max, choices, the broker
keys that bound a group override, with their defaults) and documentation. A config added there
appears here on the next run; ``KWIRE_DOES`` only adds, per name, what kwire does with it and the
broker-semantics rule that says so (a config without an entry shows its own documentation).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kwire.broker.core.configs import (  # noqa: E402
    ALL_BROKER_CONFIGS,
    GROUP_CONFIGS,
    TOPIC_CONFIGS,
    ConfigDef,
)

OUT = ROOT / "docs" / "group-configs.md"

# What kwire does with a config, by name (rule ids: /work/shared/reference/broker-semantics.md).
KWIRE_DOES: dict[str, str] = {
    "share.record.lock.duration.ms": "How long a fetched record stays ACQUIRED before it is AVAILABLE again, on the "
                                     "broker clock (AQ-12); a RENEW acknowledgement starts a new lock of this length.",
    "share.delivery.count.limit": "The delivery at which a released or expired record is archived instead of "
                                  "made available again (AQ-11); archived at the limit, it goes to the DLQ if set.",
    "share.partition.max.record.locks": "The most in-flight records a share partition acquires; ShareFetch "
                                        "acquires no more past it (AQ-2).",
    "share.auto.offset.reset": "Where a share partition starts when the group has no start offset: latest, "
                               "earliest or by_duration:<ISO-8601> (ST-6).",
    "share.isolation.level": "read_committed acquires only up to the last stable offset and skips aborted "
                             "records (AQ-9).",
    "share.renew.acknowledge.enable": "false: ShareFetch/ShareAcknowledge with RENEW are refused (RN-6).",
    "share.session.timeout.ms": "A share member without a heartbeat for this long is removed and its records "
                                "released (HB-5).",
    "share.heartbeat.interval.ms": "The interval ShareGroupHeartbeat tells members to heartbeat at (HB-5).",
    "errors.deadletterqueue.topic.name": "Non-empty: records a consumer REJECTs or that reach the delivery limit "
                                         "are written to this topic (DLQ-1); `__` names are refused (DLQ-2).",
    "errors.deadletterqueue.copy.record.enable": "true: the dead-letter record carries the original key and "
                                                 "value (DLQ-8).",
    "consumer.session.timeout.ms": "The session timeout of the group's KIP-848 consumer members.",
    "consumer.heartbeat.interval.ms": "The heartbeat interval ConsumerGroupHeartbeat tells members.",
    "group.share.record.lock.duration.ms": "The lock duration of groups without their own (AQ-12).",
    "group.share.delivery.count.limit": "The delivery count limit of groups without their own (AQ-11).",
    "group.share.partition.max.record.locks": "The in-flight limit of groups without their own (AQ-2).",
    "group.share.max.share.sessions": "Share sessions per broker; a new one past it is refused (SS-1).",
    "group.share.max.size": "Members per share group; one more is refused with GROUP_MAX_SIZE_REACHED (HB-3).",
    "group.share.session.timeout.ms": "The session timeout of groups without their own (HB-5).",
    "group.share.heartbeat.interval.ms": "The heartbeat interval of groups without their own (HB-5).",
    "share.version": "0 turns share groups off (the APIs answer UNSUPPORTED_VERSION, SG-2); 1 share groups; "
                     "2 also dead-letter queues (SG-1).",
    "errors.deadletterqueue.topic.name.prefix": "A group's DLQ topic must always start with it, and also be "
                                                "opted in (errors.deadletterqueue.group.enable=true) or be "
                                                "auto-created (DLQ-5); empty: no restriction on the name.",
    "errors.deadletterqueue.auto.create.topics.enable": "true: a missing DLQ topic is created on the first "
                                                        "dead letter (DLQ-5, DLQ-6).",
    "errors.deadletterqueue.group.enable": "true: share groups may write dead letters to this topic (DLQ-5).",
}


def _share_broker(name: str) -> bool:
    return name.startswith(("group.share.", "errors.deadletterqueue.")) or name == "share.version"


def _range(d: ConfigDef, brokers: dict[str, ConfigDef]) -> str:
    parts = []
    if d.min_value is not None and d.max_value is not None:
        parts.append(f"{d.min_value}–{d.max_value}")
    elif d.min_value is not None:
        parts.append(f"≥ {d.min_value}")
    elif d.max_value is not None:
        parts.append(f"≤ {d.max_value}")
    if d.choices:
        parts.append(", ".join(f"`{c}`" for c in d.choices))
    if d.bounds is not None:
        lo, hi = (brokers.get(k) for k in d.bounds)
        span = f"{lo.default}–{hi.default}" if lo is not None and hi is not None else "the broker's bounds"
        parts.append(f"within {span} (broker `{d.bounds[0]}`, `{d.bounds[1]}`)")
    if d.type == "boolean":
        parts.append("`true`, `false`")
    return "; ".join(parts) or "-"


def _does(d: ConfigDef) -> str:
    text = KWIRE_DOES.get(d.name) or d.doc or "-"
    if not d.acted_on:
        text = "Stored and reported; kwire does not act on it."
    if d.synonyms:
        text += " Unset, the broker's " + ", ".join(f"`{s}`" for s in d.synonyms) + " applies."
    return text.replace("|", "\\|")


def _default(d: ConfigDef) -> str:
    return "`\"\"`" if d.default == "" else ("-" if d.default is None else f"`{d.default}`")


def _table(defs: list[ConfigDef], scope: str, brokers: dict[str, ConfigDef]) -> list[str]:
    lines = ["| config | scope | type | default | range | what kwire does with it |",
             "| --- | --- | --- | --- | --- | --- |"]
    for d in sorted(defs, key=lambda d: d.name):
        lines.append(f"| `{d.name}` | {scope}{' (read-only)' if d.read_only else ''} | {d.type} | {_default(d)} | "
                     f"{_range(d, brokers)} | {_does(d)} |")
    return lines


def render() -> str:
    brokers = dict(ALL_BROKER_CONFIGS)
    group = list(GROUP_CONFIGS.values())
    share_group = [d for d in group if d.name.startswith(("share.", "errors.deadletterqueue."))]
    other_group = [d for d in group if d not in share_group]
    share_broker = [d for n, d in brokers.items() if _share_broker(n)]
    dlq_topic = [d for n, d in TOPIC_CONFIGS.items() if n.startswith("errors.deadletterqueue.")]
    out = [
        "# Group configs (share groups and dead-letter queues)",
        "",
        "Generated by `tools/gen_config_docs.py` from kwire's config data (`kwire/broker/core/configs.py`); "
        "do not edit by hand (`python tools/gen_config_docs.py --check` fails on a stale page).",
        "",
        "A group config is set on a GROUP resource (IncrementalAlterConfigs; `kwire configs --group NAME "
        "--alter --add-config KEY=VALUE`, confluent-kafka's `AdminClient.incremental_alter_configs`, Java's "
        "`Admin.incrementalAlterConfigs`) and applies at once. Unset, a group config takes the broker's value. "
        "A share group's override must lie within the broker's min/max keys for it (Kafka's GroupConfig); "
        "outside them it is refused with INVALID_CONFIG. The broker keys are set at start "
        "(`kwire broker --set KEY=VALUE`) or, in kwire, with IncrementalAlterConfigs on the broker resource "
        "(Kafka reads most of them only at start-up). How to set them: [the guide](guide.md#share-group-configs).",
        "",
        "## Share-group and dead-letter configs of a group",
        "",
        *_table(share_group, "group", brokers),
        "",
        "## Broker configs of share groups and dead-letter queues",
        "",
        *_table(share_broker, "broker", brokers),
        "",
        "## Topic configs of dead-letter queues",
        "",
        *_table(dlq_topic, "topic", brokers),
        "",
    ]
    if other_group:
        out += ["## Other group configs", "", *_table(other_group, "group", brokers), ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed page is stale")
    args = ap.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python tools/gen_config_docs.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

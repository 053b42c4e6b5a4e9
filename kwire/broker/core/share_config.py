"""The share-group settings one group runs with (broker `group.share.*` defaults, `share.*` group
overrides), as one typed snapshot the share partition, sessions and group read.

Rules: section 1.10 of broker-semantics (AQ-2, AQ-9, AQ-11, AQ-12, ST-6, RN-6, HB-5, SS-1). Group
overrides are bounded by the broker's min/max keys when they are set (``ConfigDef.bounds`` in
``configs.py``); here they are only read.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

# The ISO duration and ST-6 checks are config validators (configs.py); re-exported here.
from kwire.broker.core.configs import ResourceType, check_auto_offset_reset, parse_iso_duration_ms

if TYPE_CHECKING:
    from kwire.broker.core.configs import ConfigStore

__all__ = [
    "ShareConfig", "AutoOffsetReset", "IsolationLevel", "share_config", "parse_iso_duration_ms",
    "check_auto_offset_reset",
    "DEFAULT_RECORD_LOCK_DURATION_MS", "DEFAULT_DELIVERY_COUNT_LIMIT", "DEFAULT_PARTITION_MAX_RECORD_LOCKS",
    "DEFAULT_MAX_SHARE_SESSIONS", "DEFAULT_GROUP_MAX_SIZE", "DEFAULT_SESSION_TIMEOUT_MS",
    "DEFAULT_HEARTBEAT_INTERVAL_MS", "DEFAULT_AUTO_OFFSET_RESET", "DEFAULT_ASSIGNMENT_INTERVAL_MS",
]

DEFAULT_RECORD_LOCK_DURATION_MS = 30_000  # AQ-12: group.share.record.lock.duration.ms
DEFAULT_DELIVERY_COUNT_LIMIT = 5  # AQ-11: group.share.delivery.count.limit
DEFAULT_PARTITION_MAX_RECORD_LOCKS = 2000  # AQ-2: group.share.partition.max.record.locks
DEFAULT_MAX_SHARE_SESSIONS = 2000  # SS-1: group.share.max.share.sessions
DEFAULT_GROUP_MAX_SIZE = 200  # HB-3: group.share.max.size
DEFAULT_SESSION_TIMEOUT_MS = 45_000  # HB-5: group.share.session.timeout.ms
DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000  # HB-5: group.share.heartbeat.interval.ms
DEFAULT_AUTO_OFFSET_RESET = "latest"  # ST-6
DEFAULT_ASSIGNMENT_INTERVAL_MS = 1000  # HB-4: group.share.assignment.interval.ms


class AutoOffsetReset(Enum):
    """`share.auto.offset.reset` (ST-6)."""

    EARLIEST = "earliest"
    LATEST = "latest"
    BY_DURATION = "by_duration"


class IsolationLevel(Enum):
    """`share.isolation.level` (AQ-9)."""

    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"


@dataclass(slots=True, frozen=True)
class ShareConfig:
    """The effective share settings of one group (group override, else the broker's value)."""

    record_lock_duration_ms: int = DEFAULT_RECORD_LOCK_DURATION_MS
    delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT
    partition_max_record_locks: int = DEFAULT_PARTITION_MAX_RECORD_LOCKS
    auto_offset_reset: AutoOffsetReset = AutoOffsetReset.LATEST
    auto_offset_reset_duration_ms: int = 0  # by_duration only
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    renew_acknowledge_enable: bool = True  # RN-6
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    group_max_size: int = DEFAULT_GROUP_MAX_SIZE
    max_share_sessions: int = DEFAULT_MAX_SHARE_SESSIONS
    share_version: int = 2  # SG-1: 1 = share groups, 2 = also the dead-letter queue
    assignment_interval_ms: int = DEFAULT_ASSIGNMENT_INTERVAL_MS  # HB-4
    initialize_delay_ms: int = 0  # HB-6: kwire.share.initialize.delay.ms


def share_config(store: ConfigStore, group_id: str) -> ShareConfig:
    """Read a group's effective share settings from the broker and group configs."""
    over = store.overrides.get((ResourceType.GROUP, group_id), {})

    def broker(key: str) -> str:
        return store.get(ResourceType.BROKER, "", key) or ""

    def pick(group_key: str, broker_key: str) -> str:
        return over[group_key] if group_key in over else broker(broker_key)

    reset = over.get("share.auto.offset.reset", DEFAULT_AUTO_OFFSET_RESET)
    duration = 0
    if reset.startswith(AutoOffsetReset.BY_DURATION.value + ":"):
        duration = parse_iso_duration_ms(reset.split(":", 1)[1])
        mode = AutoOffsetReset.BY_DURATION
    else:
        mode = AutoOffsetReset(reset)
    return ShareConfig(
        record_lock_duration_ms=int(pick("share.record.lock.duration.ms", "group.share.record.lock.duration.ms")),
        delivery_count_limit=int(pick("share.delivery.count.limit", "group.share.delivery.count.limit")),
        partition_max_record_locks=int(
            pick("share.partition.max.record.locks", "group.share.partition.max.record.locks")),
        auto_offset_reset=mode,
        auto_offset_reset_duration_ms=duration,
        isolation_level=IsolationLevel(over.get("share.isolation.level", IsolationLevel.READ_UNCOMMITTED.value)),
        renew_acknowledge_enable=over.get("share.renew.acknowledge.enable", "true") == "true",
        session_timeout_ms=int(pick("share.session.timeout.ms", "group.share.session.timeout.ms")),
        heartbeat_interval_ms=int(pick("share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms")),
        group_max_size=int(broker("group.share.max.size")),
        max_share_sessions=int(broker("group.share.max.share.sessions")),
        share_version=int(broker("share.version")),
        assignment_interval_ms=int(pick("share.assignment.interval.ms", "group.share.assignment.interval.ms")),
        initialize_delay_ms=int(broker("kwire.share.initialize.delay.ms")),
    )

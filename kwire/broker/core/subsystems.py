"""The coordinators a BrokerCore carries: a typed registry, installed in one place.

Each subsystem is plain synchronous state that subclasses ``Subsystem`` and overrides the hooks
it needs; the base's hooks do nothing. The core calls them on every installed subsystem, in
install order:

``on_disconnect(conn_id)``                a client connection closed
``on_topic_created(topic)``               after its partitions exist (and got ``on_partition_created``)
``on_partition_created(partition)``       CreateTopics, CreatePartitions, restore
``on_topic_deleted(topic)``               after the cluster dropped it and its configs
``on_metadata_changed()``                 configs, log start offsets or leader epochs moved
``on_close()``                            the broker stops (release files, cancel timers)

Handlers reach a subsystem by attribute (``core.subsystems.fetch_sessions``), never by a
string. ``BrokerCore`` creates them (``_init_subsystems``); this module only holds them, so it
sits below the core. SASL (``BrokerConfig.sasl``) and persistence (``BrokerConfig.data_dir``) are optional;
storage comes last so that restoring the data dir reaches every other subsystem's hooks.
``transactions`` (the transaction coordinator), ``share_groups`` (the share coordinator) and
``share_sessions`` (its session cache) are always installed; transaction.version and
share.version gate them per request.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

# The base class and hook protocol live with the narrow core context, below every subsystem
# (kwire/broker/core/context.py); re-exported here, where subsystems have always found them.
from kwire.broker.core.context import Persistence, Subsystem, SubsystemHooks

if TYPE_CHECKING:
    from kwire.broker.core.acl import Authorizer
    from kwire.broker.core.fetch_sessions import FetchSessionCache
    from kwire.broker.core.group_table import GroupTable
    from kwire.broker.core.log_cleaner import LogCleaner
    from kwire.broker.core.offsets import OffsetStore
    from kwire.broker.core.producer_ids import ProducerIdManager
    from kwire.broker.core.quotas import ClientQuotas
    from kwire.broker.core.retention import LogRetention
    from kwire.broker.core.sasl import SaslAuthority
    from kwire.broker.core.scram_credentials import ScramCredentialStore
    from kwire.broker.core.share_coordinator import ShareCoordinator, ShareSessions
    from kwire.broker.core.txn_coordinator import TransactionCoordinator

__all__ = ["Persistence", "Subsystem", "SubsystemHooks", "Subsystems"]


class Subsystems:
    """The core's subsystems, one typed attribute each; ``installed()`` lists the present ones."""

    __slots__ = ("producer_ids", "fetch_sessions", "offsets", "groups", "retention", "cleaner", "scram_credentials",
                 "sasl", "transactions", "share_groups", "share_sessions", "extra", "storage", "acl", "quotas")

    def __init__(self, producer_ids: ProducerIdManager, fetch_sessions: FetchSessionCache, offsets: OffsetStore,
                 groups: GroupTable, retention: LogRetention, scram_credentials: ScramCredentialStore) -> None:
        self.producer_ids = producer_ids
        self.fetch_sessions = fetch_sessions
        self.offsets = offsets
        self.groups = groups
        self.retention = retention
        self.cleaner: LogCleaner | None = None  # log compaction (cleanup.policy=compact)
        self.scram_credentials = scram_credentials  # with or without SASL: the SCRAM credential APIs
        self.sasl: SaslAuthority | None = None
        self.transactions: TransactionCoordinator | None = None
        # The share-group coordinator and its share-session cache (KIP-932).
        self.share_groups: ShareCoordinator | None = None
        self.share_sessions: ShareSessions | None = None
        # Subsystems without a slot of their own (a test's listener, an embedding's plug-in).
        self.extra: list[SubsystemHooks] = []
        self.storage: Persistence | None = None  # the data dir (storage.Storage), installed last
        self.acl: Authorizer | None = None  # the ACLs and StandardAuthorizer (always installed)
        self.quotas: ClientQuotas | None = None  # client quotas and their sensors (always installed)

    def installed(self) -> Iterator[SubsystemHooks]:
        """Every present subsystem in hook order: the fixed slots, the extras, storage last."""
        yield self.producer_ids
        yield self.fetch_sessions
        yield self.offsets
        yield self.groups
        yield self.retention
        if self.cleaner is not None:
            yield self.cleaner
        yield self.scram_credentials
        for sub in (self.sasl, self.transactions, self.share_groups, self.share_sessions, self.acl,
                    self.quotas):
            if sub is not None:
                yield sub
        yield from self.extra
        if self.storage is not None:
            yield self.storage

    def add(self, sub: SubsystemHooks) -> None:
        """Install a subsystem that has no slot of its own; it gets every hook from now on."""
        self.extra.append(sub)

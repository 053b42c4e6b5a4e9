"""The coordinators a BrokerCore carries, installed in one place.

Each subsystem is plain synchronous state with optional hooks the core calls:
``on_disconnect(conn_id)``, ``on_topic_created(topic)``, ``on_topic_deleted(topic)``,
``on_partition_created(partition)``, ``on_metadata_changed()`` (configs, log start offsets,
leader epochs moved: persistence re-saves) and ``on_close()`` (the broker stops).

SASL (``BrokerConfig.sasl``) and persistence (``BrokerConfig.data_dir``) are subsystems too;
storage is installed last so that restoring the data dir reaches every other subsystem's hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import BrokerCore

__all__ = ["install"]


def install(core: BrokerCore) -> None:
    from kwire.broker.core.fetch_sessions import FetchSessionCache
    from kwire.broker.core.groups import GroupCoordinator
    from kwire.broker.core.offsets import OffsetStore
    from kwire.broker.core.producer_ids import ProducerIdManager
    from kwire.broker.core.retention import LogRetention

    core.subsystems["producer_ids"] = ProducerIdManager()
    core.subsystems["fetch_sessions"] = FetchSessionCache()
    core.subsystems["offsets"] = OffsetStore()
    core.subsystems["groups"] = GroupCoordinator(core)
    core.subsystems["retention"] = LogRetention(core)
    from kwire.broker.core.scram_credentials import ScramCredentialStore

    scram = ScramCredentialStore(core.config.sasl, core.rng)
    core.subsystems["scram_credentials"] = scram
    if core.config.sasl is not None:
        from kwire.broker.core.sasl import SaslAuthority

        core.subsystems["sasl"] = SaslAuthority(core.config.sasl, core.rng, scram.get)
    if core.config.data_dir is not None:
        from kwire.broker.core.storage import Storage

        storage = Storage(core, core.config.data_dir)
        core.subsystems["storage"] = storage
        storage.restore()

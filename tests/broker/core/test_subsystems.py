"""The typed subsystem registry: attributes per subsystem, no-op hooks, every hook reaching every
installed subsystem, and docs that name the hooks the core really calls."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from kwire.broker.config import SaslConfig
from kwire.broker.core.cluster import Partition, Topic
from kwire.broker.core.fetch_sessions import FetchSessionCache
from kwire.broker.core.group_table import GroupTable
from kwire.broker.core.offsets import OffsetStore
from kwire.broker.core.producer_ids import ProducerIdManager
from kwire.broker.core.retention import LogRetention
from kwire.broker.core.sasl import SaslAuthority
from kwire.broker.core.scram_credentials import ScramCredentialStore
from kwire.broker.core.share_coordinator import ShareCoordinator
from kwire.broker.core.storage import Storage
from kwire.broker.core.subsystems import Subsystem
from kwire.broker.core.txn_coordinator import TransactionCoordinator
from tests.broker.helpers import make_core

HOOKS = ["on_disconnect", "on_topic_created", "on_partition_created", "on_topic_deleted", "on_metadata_changed",
         "on_close"]
DOCS = Path(__file__).resolve().parents[3] / "docs" / "design.md"


class Recorder(Subsystem):
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def on_disconnect(self, conn_id: int) -> None:
        self.calls.append(("on_disconnect", conn_id))

    def on_topic_created(self, topic: Topic) -> None:
        self.calls.append(("on_topic_created", topic.name))

    def on_partition_created(self, partition: Partition) -> None:
        self.calls.append(("on_partition_created", (partition.topic, partition.index)))

    def on_topic_deleted(self, topic: Topic) -> None:
        self.calls.append(("on_topic_deleted", topic.name))

    def on_metadata_changed(self) -> None:
        self.calls.append(("on_metadata_changed", None))

    def on_close(self) -> None:
        self.calls.append(("on_close", None))


def test_each_subsystem_has_its_typed_attribute() -> None:
    core, _ = make_core()
    subs = core.subsystems
    assert isinstance(subs.producer_ids, ProducerIdManager)
    assert isinstance(subs.fetch_sessions, FetchSessionCache)
    assert isinstance(subs.offsets, OffsetStore)
    assert isinstance(subs.groups, GroupTable)
    assert isinstance(subs.retention, LogRetention)
    assert isinstance(subs.scram_credentials, ScramCredentialStore)  # the SCRAM APIs work without SASL too
    assert subs.sasl is None and subs.storage is None
    assert isinstance(subs.share_groups, ShareCoordinator) and subs.share_sessions is subs.share_groups.sessions
    assert isinstance(subs.transactions, TransactionCoordinator)
    assert all(isinstance(s, Subsystem) for s in subs.installed())


def test_optional_subsystems_are_installed_from_the_config_and_storage_comes_last(tmp_path: Path) -> None:
    core, _ = make_core(sasl=SaslConfig(mechanisms=("PLAIN",), users={"u": "p"}), data_dir=str(tmp_path))
    subs = core.subsystems
    assert isinstance(subs.sasl, SaslAuthority) and isinstance(subs.storage, Storage)
    extra = Recorder()
    subs.add(extra)
    order = list(subs.installed())
    assert order[-1] is subs.storage and order[-2] is extra
    assert order[:5] == [subs.producer_ids, subs.fetch_sessions, subs.offsets, subs.groups, subs.retention]
    core.close()


def test_every_hook_reaches_an_installed_subsystem() -> None:
    core, _ = make_core()
    rec = Recorder()
    core.subsystems.add(rec)
    conn = core.connect(1)
    core.create_topic("t", 2)
    core.create_partitions("t", 3)
    core.metadata_changed()
    core.delete_topic("t")
    core.disconnect(conn.conn_id)
    core.close()
    assert rec.calls == [
        ("on_partition_created", ("t", 0)), ("on_partition_created", ("t", 1)), ("on_topic_created", "t"),
        ("on_partition_created", ("t", 2)), ("on_metadata_changed", None), ("on_topic_deleted", "t"),
        ("on_disconnect", conn.conn_id), ("on_close", None)]


def test_the_base_hooks_do_nothing_so_a_subsystem_overrides_only_what_it_needs() -> None:
    class OnlyClose(Subsystem):
        closed = 0

        def on_close(self) -> None:
            OnlyClose.closed += 1

    core, _ = make_core()
    core.subsystems.add(OnlyClose())
    conn = core.connect(1)
    core.create_topic("t", 1)
    core.delete_topic("t")
    core.disconnect(conn.conn_id)
    core.close()
    assert OnlyClose.closed == 1
    assert sorted(n for n, f in inspect.getmembers(Subsystem, inspect.isfunction) if n.startswith("on_")) == sorted(HOOKS)


def test_the_design_doc_names_the_hooks_the_core_calls() -> None:
    """docs/design.md once named ``metadata_changed``/``close`` while the core called ``on_...``."""
    text = DOCS.read_text()
    section = text[text.index("Subsystems live in"):]
    section = section[: section.index("\n\n")]
    named = re.findall(r"`(on_\w+|\w+_changed|close)\b", section)
    assert sorted(named) == sorted(HOOKS)

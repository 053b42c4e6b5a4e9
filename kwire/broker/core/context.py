"""The narrow view of the broker a subsystem holds, below the core and every subsystem.

A subsystem (retention, the log cleaner, ...) is given the ``CoreContext`` it uses, not the
whole ``BrokerCore``: the broker clock, deadlines, configs and cluster, and the notifications it
sends back. ``BrokerCore`` implements the protocol; this module imports nothing of the core, so
the core sits above its subsystems (no import circle through ``broker_core``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kwire.broker.config import BrokerConfig
    from kwire.broker.core.cluster import Cluster, Partition, Topic
    from kwire.broker.core.configs import ConfigStore
    from kwire.broker.core.deadlines import Deadlines
    from kwire.clock import Clock

__all__ = ["ConnView", "CoreContext", "Persistence", "RequestView", "Subsystem", "SubsystemHooks"]


class CoreContext(Protocol):
    """What a subsystem reads of the broker and the notifications it sends it."""

    @property
    def clock(self) -> Clock: ...
    @property
    def deadlines(self) -> Deadlines: ...
    @property
    def configs(self) -> ConfigStore: ...
    @property
    def cluster(self) -> Cluster: ...
    @property
    def config(self) -> BrokerConfig: ...

    def metadata_changed(self) -> None:
        """Configs, log start offsets or leader epochs moved (persistence hears of it)."""
        ...

    def log_compacted(self, partition: Partition) -> None:
        """The cleaner rewrote ``partition``'s log (the data dir rewrites its files)."""
        ...


class ConnView(Protocol):
    """What a subsystem reads of a client connection (``broker_core.ConnInfo``)."""

    @property
    def conn_id(self) -> int: ...
    @property
    def peer(self) -> str: ...
    @property
    def principal(self) -> str: ...


class RequestView(Protocol):
    """What a subsystem reads of a request being handled (``broker_core.RequestContext``)."""

    @property
    def conn(self) -> ConnView: ...
    @property
    def api_key(self) -> int: ...
    @property
    def api_version(self) -> int: ...
    @property
    def correlation_id(self) -> int: ...
    @property
    def client_id(self) -> str | None: ...
    @property
    def request_size(self) -> int: ...
    @property
    def now_ms(self) -> int: ...


class SubsystemHooks(Protocol):
    """What the core calls on every installed subsystem (``Subsystem`` implements all as no-ops)."""

    def on_disconnect(self, conn_id: int) -> None: ...
    def on_topic_created(self, topic: Topic) -> None: ...
    def on_partition_created(self, partition: Partition) -> None: ...
    def on_topic_deleted(self, topic: Topic) -> None: ...
    def on_metadata_changed(self) -> None: ...
    def on_close(self) -> None: ...


class Subsystem:
    """Base of the core's subsystems: every hook is a no-op until a subclass overrides it."""

    __slots__ = ()

    def on_disconnect(self, conn_id: int) -> None:
        """A client connection closed."""

    def on_topic_created(self, topic: Topic) -> None:
        """A topic was created (its partitions already announced through ``on_partition_created``)."""

    def on_partition_created(self, partition: Partition) -> None:
        """A partition came into being (new topic, CreatePartitions, restore)."""

    def on_topic_deleted(self, topic: Topic) -> None:
        """A topic was deleted."""

    def on_metadata_changed(self) -> None:
        """Configs, log start offsets or leader epochs changed outside the topic hooks."""

    def on_close(self) -> None:
        """The broker stops."""


class Persistence(SubsystemHooks, Protocol):
    """What the core and the control API call on the data dir (``storage.Storage``) besides the hooks."""

    def on_log_compacted(self, partition: Partition, /) -> None:
        """The cleaner rewrote ``partition``'s log: rewrite its files."""
        ...

    def crash(self) -> None:
        """Drop open files without flushing, as a killed process would."""
        ...

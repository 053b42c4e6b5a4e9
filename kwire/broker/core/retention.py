"""Log retention: cleanup.policy=delete, as a Kafka broker's log manager applies it.

Theory of operation
-------------------
* Every ``log.retention.check.interval.ms`` of broker time (default 5 minutes, a deadline on
  the injected clock) each partition of a topic whose ``cleanup.policy`` includes ``delete``
  drops whole segments from its front (``PartitionLog.apply_retention``): those whose newest
  record is older than ``retention.ms`` (by record timestamp, against broker time), then while
  the partition stays at or above ``retention.bytes`` without them. The log start offset moves;
  fetches below it get OFFSET_OUT_OF_RANGE and ``earliest`` answers the new start, so a test
  that advances the clock sees exactly what a client sees when a real broker deletes data.
* Segments roll on append (``segment.bytes``, ``segment.ms``); the produce path calls
  ``roll_if_needed`` with the topic's configs. Compaction (``compact``) is the log cleaner's
  (``log_cleaner.py``); a ``compact,delete`` topic gets both.
* ``run`` does one pass now (the control API calls it too); persistence hears of moved log start
  offsets through ``metadata_changed``. Data-dir segment files are not shortened; a restart
  trims what lies below the saved log start offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.context import CoreContext, Subsystem

if TYPE_CHECKING:
    from kwire.broker.core.deadlines import Deadline

__all__ = ["LogRetention"]


class LogRetention(Subsystem):
    """The periodic retention pass over every partition log."""

    def __init__(self, core: CoreContext) -> None:
        self.core = core
        self._next: Deadline | None = None
        self.deleted_segments = 0
        self._schedule()

    def _schedule(self) -> None:
        interval = self.core.configs.get_int(ResourceType.BROKER, "", "log.retention.check.interval.ms")
        self._next = self.core.deadlines.at(self.core.clock.now_ms() + max(1, interval), self._due)

    def _due(self) -> None:
        self.run()
        self._schedule()

    def run(self) -> int:
        """One retention pass now; returns how many segments were deleted."""
        core = self.core
        configs = core.configs
        now = core.clock.now_ms()
        deleted = 0
        for name, topic in core.cluster.topics.items():
            policy = configs.get(ResourceType.TOPIC, name, "cleanup.policy") or ""
            if "delete" not in policy.split(","):
                continue
            retention_ms = configs.get_int(ResourceType.TOPIC, name, "retention.ms")
            retention_bytes = configs.get_int(ResourceType.TOPIC, name, "retention.bytes")
            if retention_ms < 0 and retention_bytes < 0:
                continue
            for p in topic.partitions:
                deleted += p.log.apply_retention(now, retention_ms, retention_bytes)
        if deleted:
            self.deleted_segments += deleted
            core.metadata_changed()
        return deleted

    def on_close(self) -> None:
        if self._next is not None:
            self._next.cancel()

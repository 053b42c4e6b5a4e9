"""Producer ids for idempotent producers (TX-1); transactional ids come with the transaction coordinator."""

from __future__ import annotations

from kwire.broker.core.context import Subsystem

__all__ = ["ProducerIdManager"]


class ProducerIdManager(Subsystem):
    """Hands out producer ids in increasing order, as the controller's block allocator does."""

    __slots__ = ("next_id",)

    def __init__(self, first: int = 1000) -> None:
        self.next_id = first

    def allocate(self) -> int:
        pid = self.next_id
        self.next_id += 1
        return pid

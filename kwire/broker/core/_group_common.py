"""What the classic and the KIP-848 group coordinators share: the error they raise, member
id generation on the injected RNG, and group-config lookups that fall back to the broker."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kwire.broker.core.configs import ResourceType
from kwire.errors import KafkaError

if TYPE_CHECKING:
    from kwire.broker.core.cluster import Rng
    from kwire.broker.core.configs import ConfigStore

__all__ = ["GroupDirectory", "GroupError", "GroupMigrationPort", "GroupStats", "java_uuid_string", "kafka_uuid_string", "broker_int", "group_int"]


class GroupError(KafkaError):
    """A group operation refused with a Kafka error code (answered in the response, never raised out)."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(code, message or None)


@dataclass(slots=True, frozen=True)
class GroupStats:
    """A frozen snapshot of one group (any type)."""

    group_id: str
    group_type: str
    state: str
    epoch: int  # classic: the generation; KIP-848 and share: the group epoch
    members: int
    waiting: int  # classic: answers not yet given (join/sync); KIP-848: members not yet reconciled


def java_uuid_string(rng: Rng) -> str:
    """``java.util.UUID.randomUUID().toString()`` on the core's RNG (classic member ids)."""
    n = rng.getrandbits(128)
    n = (n & ~(0xF000 << 64)) | (4 << 76)  # version 4
    n = (n & ~(0xC000 << 48)) | (0x8000 << 48)  # IETF variant
    return str(uuid.UUID(int=n))


def kafka_uuid_string(rng: Rng) -> str:
    """``org.apache.kafka.common.Uuid.randomUuid().toString()``: 22 url-safe base64 characters."""
    raw = rng.getrandbits(128).to_bytes(16, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def broker_int(configs: ConfigStore, key: str) -> int:
    return configs.get_int(ResourceType.BROKER, "", key)


def group_int(configs: ConfigStore, group_id: str, key: str, broker_key: str) -> int:
    """A group config (``consumer.session.timeout.ms``) when set on the group, else the broker's
    ``group.*`` value (GroupConfig falls back to GroupCoordinatorConfig upstream)."""
    over = configs.overrides.get((ResourceType.GROUP, group_id), {})
    if key in over:
        return int(over[key])
    return broker_int(configs, broker_key)


class GroupMigrationPort(Protocol):
    """The classic <-> consumer conversions (``group_migration.GroupMigration``) as the two group
    coordinators call them: they sit below it and never import it, nor each other."""

    def upgrade(self, classic_group: Any) -> Any:
        """A live classic group converted into a consumer group (GM-1)."""
        ...

    def maybe_downgrade(self, group: Any, leaving: list[Any]) -> bool:
        """Convert a consumer group back to classic if its last consumer-protocol member leaves."""
        ...

    def join(self, group: Any, req: Any, cb: Any) -> None: ...
    def sync(self, group: Any, generation_id: int, member_id: str, instance_id: str | None,
             protocol_type: str | None, protocol_name: str | None, cb: Any) -> None: ...
    def heartbeat(self, group: Any, generation_id: int, member_id: str, instance_id: str | None) -> int: ...
    def leave(self, group: Any, members: list[tuple[str, str | None]]) -> tuple[int, list[int]]: ...


class GroupDirectory(Protocol):
    """The group table (``group_table.GroupTable``) as a group coordinator uses it."""

    @property
    def groups(self) -> dict[str, Any]: ...
    @property
    def migration(self) -> GroupMigrationPort: ...

    def get(self, group_id: str) -> Any | None: ...
    def of_type(self, group_id: str, group_type: str) -> Any | None: ...
    def add(self, group: Any) -> None: ...
    def take_over(self, group_id: str) -> bool: ...

"""One adapter per real Kafka client, all behind ``ClientAdapter`` (see ``base``).

``all_adapters()`` lists them in the priority order of the conformance plan;
``get_adapter(name)`` picks one.
"""

from __future__ import annotations

from kwire.conformance.clients.base import (
    ALL_CODECS,
    ClientAdapter,
    GroupMember,
    GroupProtocol,
    Produced,
    ProduceResult,
    Record,
)
from kwire.conformance.clients.java import JavaAdapter
from kwire.conformance.clients.js import (
    ConfluentJsAdapter,
    KafkajsAdapter,
    KafkatsAdapter,
    PlatformaticAdapter,
)
from kwire.conformance.clients.kcat import KcatAdapter
from kwire.conformance.clients.python_clients import (
    AiokafkaAdapter,
    ConfluentKafkaAdapter,
    KafkaPythonAdapter,
)
from kwire.errors import ConformanceError

__all__ = [
    "ALL_CODECS",
    "ADAPTER_CLASSES",
    "AiokafkaAdapter",
    "ClientAdapter",
    "ConfluentJsAdapter",
    "ConfluentKafkaAdapter",
    "GroupMember",
    "GroupProtocol",
    "JavaAdapter",
    "KafkaPythonAdapter",
    "KafkajsAdapter",
    "KafkatsAdapter",
    "KcatAdapter",
    "PlatformaticAdapter",
    "Produced",
    "ProduceResult",
    "Record",
    "all_adapters",
    "get_adapter",
]

ADAPTER_CLASSES: tuple[type[ClientAdapter], ...] = (
    JavaAdapter,
    ConfluentKafkaAdapter,
    KafkatsAdapter,
    KafkaPythonAdapter,
    KafkajsAdapter,
    AiokafkaAdapter,
    KcatAdapter,
    PlatformaticAdapter,
    ConfluentJsAdapter,
)


def all_adapters() -> list[ClientAdapter]:
    """One instance of every adapter, installed or not."""
    return [cls() for cls in ADAPTER_CLASSES]


def get_adapter(name: str) -> ClientAdapter:
    """The adapter called ``name`` (e.g. ``"java"``, ``"confluent_kafka"``)."""
    for cls in ADAPTER_CLASSES:
        if cls.name == name:
            return cls()
    raise ConformanceError(f"unknown client {name!r}; known: {', '.join(c.name for c in ADAPTER_CLASSES)}")

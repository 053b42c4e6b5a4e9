"""Settings of a kwire broker cluster (what ``kwire broker`` flags and the pytest fixture set)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kwire.protocol.framing import DEFAULT_MAX_FRAME_BYTES

__all__ = ["BrokerConfig", "SaslConfig", "DEFAULT_HOST"]

DEFAULT_HOST = "127.0.0.1"


@dataclass(slots=True)
class SaslConfig:
    """SASL on the SASL listeners: the mechanisms offered and the users (name -> password; OAUTHBEARER
    takes unsecured JWS tokens and needs no user)."""

    mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
    users: dict[str, str] = field(default_factory=lambda: {"admin": "admin-secret"})
    scram_iterations: int = 4096


@dataclass(slots=True)
class BrokerConfig:
    """Cluster-wide settings. Ports: ``port`` for the first broker, then consecutive; 0 = any free port."""

    brokers: int = 1
    host: str = DEFAULT_HOST
    port: int = 0
    # The host clients are told (Metadata, FindCoordinator); None: ``host``. Bind 0.0.0.0 in a
    # container and advertise the name clients reach it by.
    advertised_host: str | None = None
    first_node_id: int = 1
    cluster_id: str | None = None
    data_dir: str | None = None
    max_request_bytes: int = DEFAULT_MAX_FRAME_BYTES  # socket.request.max.bytes
    sasl: SaslConfig | None = None
    # Kafka broker settings, as dotted keys (validated by the core's config definitions).
    settings: dict[str, str] = field(default_factory=dict)
    seed: int = 0  # seeds the core's RNG (ids, cluster id): same seed, same ids
    log_connections: bool = True

"""Adapters for the Python clients, run through the ``_pyrunner`` child program."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import sys
from typing import Any, ClassVar

from kwire.conformance.clients.base import ClientAdapter, Security, librdkafka_security

__all__ = ["ConfluentKafkaAdapter", "KafkaPythonAdapter", "AiokafkaAdapter"]


class _PythonAdapter(ClientAdapter):
    module: ClassVar[str]
    distribution: ClassVar[str]

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec(self.module) is None:
            return f"{self.distribution} is not installed (run tools/install_clients.sh python)"
        return None

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "kwire.conformance.clients._pyrunner", self.name]

    def version(self) -> str | None:
        """Installed distribution version."""
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None

    def installed_version(self) -> str:
        return self.version() or "?"


class ConfluentKafkaAdapter(_PythonAdapter):
    """confluent-kafka 2.16 (librdkafka 2.16): classic groups and KIP-848."""

    name = "confluent_kafka"
    module = "confluent_kafka"
    distribution = "confluent-kafka"
    supports_kip848 = True
    failover_config = {"enable.idempotence": True}
    failover_idempotent = True
    features = frozenset({"consume_positions"})

    def installed_version(self) -> str:
        import confluent_kafka

        return f"{self.version() or '?'} (librdkafka {confluent_kafka.libversion()[0]})"

    def share_argv(self) -> list[str] | None:
        """``_share_driver`` (confluent-kafka's ShareConsumer); its ``describe`` says what it lacks."""
        return [sys.executable, "-m", "kwire.conformance.clients._share_driver"]

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        return librdkafka_security(sec)


def _python_security(sec: Security, *, aiokafka: bool) -> dict[str, Any]:
    """kafka-python's and aiokafka's keyword names; the runner turns ``kwire_ssl_cafile`` into
    aiokafka's ssl_context and ``kwire_oauth_principal[_async]`` into a token provider object."""
    conf: dict[str, Any] = {"security_protocol": sec.protocol}
    if "SSL" in sec.protocol:
        conf["kwire_ssl_cafile" if aiokafka else "ssl_cafile"] = sec.ca_file
    if sec.mechanism == "OAUTHBEARER":
        conf.update({"sasl_mechanism": "OAUTHBEARER",
                     "kwire_oauth_principal_async" if aiokafka else "kwire_oauth_principal": sec.username})
    elif sec.mechanism is not None:
        conf.update({"sasl_mechanism": sec.mechanism, "sasl_plain_username": sec.username,
                     "sasl_plain_password": sec.password})
    return conf


@functools.cache
def _codecs_from(module: str) -> tuple[str, ...]:
    # kafka-python and aiokafka enable snappy/lz4/zstd only when their optional
    # libraries import; ask their own has_* probes.
    if importlib.util.find_spec(module) is None:
        return ("none",)
    codec = importlib.import_module(module)
    out = ["none"]
    for name in ("gzip", "snappy", "lz4", "zstd"):
        if getattr(codec, f"has_{name}")():
            out.append(name)
    return tuple(out)


class KafkaPythonAdapter(_PythonAdapter):
    """kafka-python 3.0 (pure Python; classic groups only)."""

    name = "kafka_python"
    module = "kafka"
    distribution = "kafka-python"
    failover_config = {"enable_idempotence": True}
    failover_idempotent = True
    read_committed_config = {"isolation_level": "read_committed"}
    no_share_consumer = "kafka-python 3.0 has no share consumer (KIP-932)"
    failover_no_live_read = (
        "kafka-python 3.0.12's fetcher marks a node as having a fetch in flight before send(), and "
        "send() raises UnknownBrokerIdError for a broker that just left the metadata (it is down): "
        "the mark is never cleared, so that broker is never fetched from again, even once it leads "
        "again (kafka/consumer/fetcher.py _send_fetches_async)"
    )

    @property
    def supported_codecs(self) -> tuple[str, ...]:  # type: ignore[override]
        """Probed on first use: importing the client is slow."""
        return _codecs_from("kafka.codec")

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        return _python_security(sec, aiokafka=False)


class AiokafkaAdapter(_PythonAdapter):
    """aiokafka 0.14 (asyncio; old protocol versions; classic groups only)."""

    name = "aiokafka"
    module = "aiokafka"
    distribution = "aiokafka"
    failover_config = {"enable_idempotence": True}
    failover_idempotent = True
    # aiokafka 0.14's offset reset retries ListOffsets at the old leader after
    # NOT_LEADER_OR_FOLLOWER without refreshing metadata (Fetcher._update_fetch_positions):
    # a partition whose leader moved between its metadata and its reset waits for the next
    # periodic refresh, 5 minutes by default.
    failover_consumer_config = {"metadata_max_age_ms": 1000}
    read_committed_config = {"isolation_level": "read_committed"}
    no_share_consumer = "aiokafka 0.14 has no share consumer (KIP-932)"

    @property
    def supported_codecs(self) -> tuple[str, ...]:  # type: ignore[override]
        """Probed on first use: importing the client is slow."""
        return _codecs_from("aiokafka.codec")

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        return _python_security(sec, aiokafka=True)

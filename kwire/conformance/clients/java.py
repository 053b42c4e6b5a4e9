"""Adapter for the official Java client (kafka-clients 4.3.0) via ``KwireJavaClient``."""

from __future__ import annotations

import shutil

from kwire.conformance import paths
from kwire.conformance.clients.base import ClientAdapter

__all__ = ["JavaAdapter"]


class JavaAdapter(ClientAdapter):
    """KafkaProducer / KafkaConsumer (classic and KIP-848 groups), every codec."""

    name = "java"
    supports_kip848 = True
    # Idempotence is Java's default (acks=all); explicit, since the scenario relies on it.
    failover_config = {
        "enable.idempotence": "true",
        "retry.backoff.max.ms": "1000",
        "reconnect.backoff.max.ms": "1000",
    }
    failover_idempotent = True

    def share_argv(self) -> list[str] | None:
        """``java/ShareDriver.java`` (a KafkaShareConsumer), run by the source launcher."""
        from pathlib import Path

        jars = sorted(paths.java_lib_dir().glob("*.jar"))
        return ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", ":".join(map(str, jars)),
                str(Path(__file__).parent / "java" / "ShareDriver.java")]

    def classpath(self) -> str:
        """The jars plus the compiled driver."""
        return f"{paths.java_lib_dir()}/*:{paths.java_classes_dir()}"

    def unavailable_reason(self) -> str | None:
        if shutil.which("java") is None:
            return "no java on PATH (install a JDK 17)"
        if not any(paths.java_lib_dir().glob("kafka-clients-*.jar")):
            return f"no kafka-clients jar in {paths.java_lib_dir()} (run tools/install_clients.sh java)"
        if not (paths.java_classes_dir() / "KwireJavaClient.class").is_file():
            return "KwireJavaClient is not compiled (run tools/install_clients.sh java)"
        return None

    def argv(self) -> list[str]:
        # Small heap and no JIT tiers beyond C1: start-up dominates these short runs.
        return ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", self.classpath(), "KwireJavaClient"]

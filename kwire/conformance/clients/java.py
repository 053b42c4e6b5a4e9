"""Adapter for the official Java client (kafka-clients 4.3.0) via ``KwireJavaClient``."""

from __future__ import annotations

import shutil
from typing import Any

from kwire.conformance import paths
from kwire.conformance.clients.base import ClientAdapter, Security

__all__ = ["JavaAdapter"]

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


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

    def installed_version(self) -> str:
        jars = sorted(paths.java_lib_dir().glob("kafka-clients-*.jar"))
        return jars[0].name[len("kafka-clients-"):-len(".jar")] if jars else "?"

    def share_argv(self) -> list[str] | None:
        """``java/ShareDriver.java`` (a KafkaShareConsumer), run by the source launcher."""
        from pathlib import Path

        return ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", self.classpath(),
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

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        """A PEM truststore (ssl.truststore.type=PEM, KIP-651) and the JAAS login of the mechanism;
        OAUTHBEARER with OAuthBearerUnsecuredLoginCallbackHandler (the module's default)."""
        if sec.mechanism == "OAUTHBEARER" and not any(paths.java_lib_dir().glob("jackson-databind-*.jar")):
            return (f"kafka-clients' unsecured OAUTHBEARER login parses its token with Jackson, and no "
                    f"jackson-databind jar is in {paths.java_lib_dir()} (ClassNotFoundException: "
                    f"com.fasterxml.jackson.databind.ObjectMapper; tools/install_clients.sh java copies "
                    f"jackson-databind, -core and -annotations there from the venv's pyspark)")
        conf: dict[str, Any] = {"security.protocol": sec.protocol}
        if "SSL" in sec.protocol:
            conf.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": sec.ca_file})
        if sec.mechanism == "OAUTHBEARER":
            conf.update({"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config":
                         "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                         f'unsecuredLoginStringClaim_sub="{sec.username}";'})
        elif sec.mechanism is not None:
            conf.update({"sasl.mechanism": sec.mechanism, "sasl.jaas.config":
                         f'{_LOGIN_MODULES[sec.mechanism]} required username="{sec.username}" '
                         f'password="{sec.password}";'})
        return conf

"""Adapter for kcat (Debian's 1.7.1 on librdkafka 2.0.2) via ``_kcat_driver``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Any

from kwire.conformance.clients.base import ClientAdapter, Security, librdkafka_security

__all__ = ["KcatAdapter"]


class KcatAdapter(ClientAdapter):
    """kcat: an older librdkafka's version mix; classic groups (-G)."""

    name = "kcat"
    # Headers come from -H name=value arguments: text only, no NULL values.
    binary_headers = False
    failover_config = {"enable.idempotence": "true"}
    failover_idempotent = True
    no_transactions = (
        "kcat -X transactional.id=… commits the whole run as one transaction at exit: it can neither "
        "abort nor interleave transactions (its commit is tested in tests/broker/server/"
        "test_transactions_real_clients.py)"
    )
    txn_commit_at_exit = True

    no_share_consumer = "kcat has no share consumer (KIP-932)"

    def installed_version(self) -> str:
        out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10).stdout
        first = next((ln for ln in out.splitlines() if ln.startswith("Version")), "?")
        version = first.removeprefix("Version ").split(" (")[0]
        return version + (f" (librdkafka {first.split('librdkafka ')[1].split()[0]})" if "librdkafka " in first else "")

    def unavailable_reason(self) -> str | None:
        if shutil.which("kcat") is None and shutil.which("kafkacat") is None:
            return "kcat is not installed (run tools/install_clients.sh kcat)"
        return None

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "kwire.conformance.clients._kcat_driver"]

    def security_config(self, sec: Security) -> dict[str, Any] | str:
        if sec.mechanism is not None and sec.mechanism.startswith("SCRAM"):
            return ("kcat 1.7.1's librdkafka 2.0.2 repeats the client nonce in SCRAM's client-final message "
                    "(r=<client nonce><client nonce><server nonce>), which Kafka's ScramSaslServer refuses as "
                    "kwire does: 'Invalid client nonce in the final client message.'")
        return librdkafka_security(sec)

"""A client-version matrix (``kwire conform --client NAME==VERSION``): each pinned release lives in
its own cached environment under the clients cache and runs as its own row, reporting the exact
version its driver imported."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kwire.cli import main
from kwire.cli.conform import split_pin
from kwire.conformance.clients import ConfluentKafkaAdapter, KafkajsAdapter
from kwire.conformance.clients.versions import pinned_adapter, pinned_dir
from kwire.errors import ConformanceError

PIN = "2.12.1"


def test_a_pin_splits_and_names_its_row_and_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KWIRE_CLIENTS_DIR", str(tmp_path))
    assert split_pin("confluent-kafka==2.12.1") == ("confluent-kafka", "2.12.1")
    assert split_pin("@kafkats/client") == ("@kafkats/client", None)
    a = pinned_adapter(ConfluentKafkaAdapter, PIN)
    # A name that is valid inside topic and group names; the driver still gets the client's own name.
    assert a.name == "confluent_kafka-2.12.1" and a.argv()[-1] == "confluent_kafka"
    assert pinned_dir("confluent_kafka", PIN) == tmp_path / "pip" / "confluent-kafka-2.12.1"
    env = a.env() or {}
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / "pip" / "confluent-kafka-2.12.1")
    assert "is not installed in" in (a.unavailable_reason() or "")
    js = pinned_adapter(KafkajsAdapter, "2.2.3")
    assert (js.env() or {})["KWIRE_NODE_MODULES"] == str(tmp_path / "npm" / "kafkajs-2.2.3" / "node_modules")
    with pytest.raises(ConformanceError, match="cannot be pinned"):
        pinned_dir("java", "4.2.0")


@pytest.mark.conformance
def test_two_releases_of_one_client_run_as_two_rows_with_their_exact_versions(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """confluent-kafka 2.12.1 (installed here by pip into its own environment) and the installed
    release side by side: the 2.12.1 driver really imports 2.12.1, and 2.12.1 skips the share
    scenario with its own reason (no ShareConsumer before 2.16)."""
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    cache = Path(os.environ.get("KWIRE_CONFORM_PIN_CACHE", tmp_path / "clients"))
    monkeypatch.setenv("KWIRE_CLIENTS_DIR", str(cache))
    report = tmp_path / "report"
    try:
        rc = main(["conform", "--client", f"confluent-kafka=={PIN}", "--client", "confluent-kafka",
                   "--scenario", "roundtrip", "--scenario", "share_commit", "--brokers", "1", "--report", str(report)])
    except SystemExit as exc:  # CliError: the package index cannot be reached from here
        pytest.skip(f"cannot install confluent-kafka {PIN}: {exc}")
    pinned = pinned_adapter(ConfluentKafkaAdapter, PIN)
    imported = subprocess.run([sys.executable, "-c", "import confluent_kafka; print(confluent_kafka.__file__)"],
                              capture_output=True, text=True, env={**os.environ, **(pinned.env() or {})}, check=True)
    assert imported.stdout.strip().startswith(str(pinned_dir("confluent_kafka", PIN)))
    rows = {(r["client"], r["scenario"]): r for r in json.loads((report / "results.json").read_text())["results"]}
    assert rows[("confluent_kafka-2.12.1", "roundtrip")]["outcome"] == "pass"
    assert rows[("confluent_kafka-2.12.1", "roundtrip")]["client_version"] == PIN
    assert rows[("confluent_kafka-2.12.1", "share_commit")]["outcome"] == "skip"
    assert rows[("confluent_kafka-2.12.1", "share_commit")]["reason"] == f"confluent-kafka {PIN} has no ShareConsumer " \
                                                                           "(2.16 or later)"
    installed = rows[("confluent_kafka", "roundtrip")]["client_version"]
    assert installed.startswith(importlib.metadata.version("confluent-kafka")) and rc == 0
    md = (report / "conformance.md").read_text()
    assert f"| confluent_kafka-2.12.1 | {PIN} |" in md

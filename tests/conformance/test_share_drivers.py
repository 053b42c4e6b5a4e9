"""Share consumers behind the JSON-lines driver protocol (docs/driver-protocol.md, op
``share_consumer``): the minimal example driver passes the share scenarios through
``--client-command`` and skips RENEW with the reason its describe gives; a deliberately broken
driver (RENEW of a record it does not hold, acknowledgements after close) trips the named client
rules CR-9 and CR-5 while its scenario itself goes through.

Upstream: KafkaShareConsumer (clients/src/main/java/org/apache/kafka/clients/consumer/), whose
contract the scenarios and rules encode; SharePartitionManager for the session close (SS-4, SS-5).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kwire.cli import main
from kwire.conformance.clients.command import command_adapter

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "share_driver.py"
BROKEN = Path(__file__).parent / "drivers" / "broken_share_driver.py"

pytestmark = pytest.mark.conformance


def _needs_share_consumer() -> None:
    ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed (tools/install_clients.sh python)")
    if not hasattr(ck, "ShareConsumer"):
        pytest.skip("this confluent-kafka has no ShareConsumer (2.16 or later)")


def _run(tmp_path: Path, driver: Path, *scenarios: str) -> tuple[int, dict[str, dict]]:
    report = tmp_path / "report"
    argv = ["conform", "--client-command", f"{sys.executable} {driver}", "--brokers", "1", "--report", str(report)]
    for s in scenarios:
        argv += ["--scenario", s]
    rc = main(argv)
    results = json.loads((report / "results.json").read_text())["results"]
    return rc, {r["scenario"]: r for r in results}


def test_the_example_driver_announces_its_share_capabilities_and_what_it_lacks() -> None:
    _needs_share_consumer()
    adapter = command_adapter(f"{sys.executable} {EXAMPLE}")()
    assert adapter.name == "example-share-confluent"
    assert adapter.lacks("share_consumer") is None
    assert adapter.lacks("share_implicit") is None
    assert "acquisition lock timeout" in (adapter.lacks("share_lock_timeout") or "")
    assert adapter.lacks("produce") == "the driver lacks produce"


@pytest.mark.rule("AK-12, SS-7")
def test_the_example_share_driver_passes_the_share_scenarios_and_skips_renew_with_its_reason(
        tmp_path: Path) -> None:
    """One code path: the scenarios drive the outside driver exactly as the built-in ones."""
    _needs_share_consumer()
    import confluent_kafka

    rc, got = _run(tmp_path, EXAMPLE, "share_exclusive", "share_commit", "share_lock_expiry", "renew_hold",
                   "roundtrip")
    for name in ("share_exclusive", "share_commit", "share_lock_expiry"):
        assert got[name]["outcome"] == "pass", got[name]
        assert got[name]["violations"] == [] and got[name]["recorded_frames"] > 0
    assert got["roundtrip"] == {**got["roundtrip"], "outcome": "skip", "reason": "the driver lacks consume, produce"}
    if hasattr(confluent_kafka.AcknowledgeType, "RENEW"):
        assert got["renew_hold"]["outcome"] == "pass", got["renew_hold"]
    else:
        assert got["renew_hold"]["outcome"] == "skip"
        assert "has no AcknowledgeType.RENEW (KIP-1222)" in got["renew_hold"]["reason"]
    assert rc == 0
    assert all(r["client_version"] == confluent_kafka.__version__ or r["client_version"]
               for r in got.values())


@pytest.mark.rule("SS-4, SS-5, RN-5")
def test_a_broken_share_driver_trips_the_named_client_rules(tmp_path: Path) -> None:
    """The broken driver holds a record by renewing it as renew_hold asks, so the scenario's own
    checks pass; its RENEW of offset 999 (never acquired) is CR-9, and the ACCEPT it sends after
    closing its share session is CR-9 (nothing is held after epoch -1) and CR-5 (no session)."""
    rc, got = _run(tmp_path, BROKEN, "renew_hold")
    cell = got["renew_hold"]
    assert rc == 1 and cell["outcome"] == "fail"
    assert cell["reason"].startswith("client rule violations: CR-5, CR-9")
    explanations = [(v["rule"], v["explanation"]) for v in cell["violations"]]
    assert any(rule == "CR-9" and "offsets 999-999 of partition 0 (type 4) that it does not hold" in why
               for rule, why in explanations), explanations
    assert any(rule == "CR-9" and "(type 1) that it does not hold" in why for rule, why in explanations), explanations
    assert any(rule == "CR-5" and "no open share session" in why or "before a ShareFetch" in why
               for rule, why in explanations), explanations
    # Each violation carries the decoded frames of the violating exchange.
    assert all(v["frames"] and v["frames"][-1]["api"] in ("ShareAcknowledge", "ShareFetch")
               for v in cell["violations"])
    html = (tmp_path / "report" / "report.html").read_text()
    assert 'id="broken-share--renew_hold--v1"' in html and "decoded request and response" in html

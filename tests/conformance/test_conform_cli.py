"""``kwire conform`` end to end: a driver plugged in with --client-command, every report of one
run, a client-rule violation failing its cell, and the HTML report opened by headless chromium.

Runs the example driver (kafka-python) against an in-process one-broker kwire cluster.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from kwire.cli import main
from kwire.cli.conform import CLIENT_ALIASES, resolve_client
from kwire.conformance.clients import ADAPTER_CLASSES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "conform_driver.py"
BAD = Path(__file__).parent / "drivers" / "reused_correlation_driver.py"

pytestmark = pytest.mark.conformance


def _needs_kafka_python() -> None:
    pytest.importorskip("kafka", reason="kafka-python is not installed (tools/install_clients.sh python)")


def test_install_names_and_internal_names_both_resolve() -> None:
    internal = {c.name for c in ADAPTER_CLASSES}
    assert set(CLIENT_ALIASES.values()) == internal
    assert resolve_client("@kafkats/client") == "kafkats" == resolve_client("kafkats")
    assert resolve_client("confluent-kafka") == "confluent_kafka" == resolve_client("confluent_kafka")


def test_list_prints_clients_scenarios_and_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "--list"]) == 0
    out = capsys.readouterr().out
    assert "@kafkats/client" in out and "roundtrip" in out and "CR-9" in out


def _conform(tmp_path: Path, driver: Path) -> tuple[int, Path]:
    report = tmp_path / "report"
    rc = main(["conform", "--client-command", f"{sys.executable} {driver}", "--scenario", "roundtrip",
               "--scenario", "consumer_group", "--brokers", "1", "--report", str(report)])
    return rc, report


def test_example_driver_passes_roundtrip_and_every_report_is_written(tmp_path: Path) -> None:
    _needs_kafka_python()
    rc, report = _conform(tmp_path, EXAMPLE)
    assert rc == 0
    suites = ET.parse(report / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["example-kafka-python"]
    cases = {c.get("name"): c for c in suites[0].findall("testcase")}
    assert set(cases) == {"roundtrip", "consumer_group"}
    assert cases["roundtrip"].find("failure") is None and cases["roundtrip"].find("skipped") is None
    assert cases["consumer_group"].find("skipped").get("message") == "the driver lacks member"
    results = json.loads((report / "results.json").read_text())
    [rt] = [r for r in results["results"] if r["scenario"] == "roundtrip"]
    assert rt["outcome"] == "pass" and rt["recorded_frames"] > 0 and rt["violations"] == []
    md = (report / "conformance.md").read_text()
    assert "| scenario | example-kafka-python |" in md and "| roundtrip | pass (" in md
    assert "example-kafka-python" in (report / "report.html").read_text()


def test_a_client_rule_violation_fails_the_cell_and_shows_in_every_report(tmp_path: Path) -> None:
    """CR-2 tripped by a driver that reuses a correlation id: the round trip itself succeeds."""
    _needs_kafka_python()
    rc, report = _conform(tmp_path, BAD)
    assert rc == 1
    results = json.loads((report / "results.json").read_text())
    [rt] = [r for r in results["results"] if r["scenario"] == "roundtrip"]
    assert rt["outcome"] == "fail" and rt["reason"].startswith("client rule violations: CR-2")
    [v] = rt["violations"]
    assert v["rule"] == "CR-2" and [f["api"] for f in v["frames"]] == ["ApiVersions", "ApiVersions"]
    failure = ET.parse(report / "junit.xml").getroot().find("testsuite/testcase[@name='roundtrip']/failure")
    assert failure is not None and failure.get("type") == "ClientRuleViolation"
    assert failure.get("message").startswith("CR-2 correlation id 7 was already used")
    assert "ApiVersions v3" in failure.text
    html = (report / "report.html").read_text()
    assert 'class="fail"' in html and "CR-2" in html
    _check_html_in_chromium(report / "report.html", tmp_path)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Rows of an 8-bit RGB/RGBA PNG (what chromium writes), unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = channels = 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, channels, rows


def _check_html_in_chromium(page: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (tools/install_clients.sh chromium)")
    shot = tmp_path / "report.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert "<table" in dom.stdout and "CR-2" in dom.stdout, dom.stderr[-2000:]
    subprocess.run([chromium, *flags, f"--screenshot={shot}", "--window-size=1000,700", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    width, channels, rows = _png_pixels(shot.read_bytes())
    colours = {bytes(row[i : i + 3]) for row in rows[::4] for i in range(0, width * channels, channels * 4)}
    # The failed cell is painted with its background (#fbd5d5).
    assert bytes.fromhex("fbd5d5") in colours


def test_without_rich_the_matrix_prints_plain_lines_and_skips_say_why(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """rich is an extra (kwire[conform]): without it the run still works, one line per cell; a
    client asked for by name that cannot run says why, not only in --report."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "rich" else real(name, *a))
    monkeypatch.setattr("kwire.conformance.clients.kcat.KcatAdapter.unavailable_reason",
                        lambda self: "kcat is not installed (test)")
    rc = main(["conform", "--client", "kcat", "--scenario", "roundtrip"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "[1/1] kcat / roundtrip: skip" in out
    assert "skip kcat / roundtrip: not installed: kcat is not installed (test)" in out
    assert out.strip().splitlines()[-1] == "conform: 0 passed, 0 failed, 1 skipped"


def test_when_stdout_is_not_a_terminal_the_matrix_prints_plain_lines_with_reasons(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI log gets one plain line per cell with its reason and the clients' versions, never a
    redrawn table whose columns squeeze names to ``cl…`` (rich is installed here; stdout is not a
    terminal under capsys)."""
    import importlib.util

    if importlib.util.find_spec("rich") is None:
        pytest.skip("rich is not installed: the plain path is the only one")
    monkeypatch.setattr("kwire.conformance.clients.kcat.KcatAdapter.unavailable_reason",
                        lambda self: "kcat is not installed (test)")
    rc = main(["conform", "--client", "kcat", "--scenario", "roundtrip", "--scenario", "share_exclusive"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "[1/2] kcat / roundtrip: skip (0.0s): not installed: kcat is not installed (test)" in out
    assert "[2/2] kcat / share_exclusive: skip (0.0s): not installed: kcat is not installed (test)" in out
    assert "clients: kcat not installed" in out
    assert "…" not in out and "┃" not in out

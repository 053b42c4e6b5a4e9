"""The conformance HTML report read as a person would: opened in headless chromium at a laptop's
1400 px, a full matrix (8 clients x 20 scenarios, long names and reasons) must fit without
horizontal overflow, show every client's version, show skip and failure reasons in the cells, and
link a failure to the decoded frames of the violating exchange. The measurements come from the
rendered layout (element boxes), not from the HTML text."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kwire.conformance.outputs import RunInfo, render_html
from kwire.conformance.rules import Frame, Violation
from kwire.conformance.scenarios import ScenarioResult
from kwire.protocol import request_class

CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")

CLIENTS = {"java": "4.3.0", "confluent_kafka": "2.16.1 (librdkafka 2.16.0)", "kafkats": "0.12.0",
           "kafka_python": "3.0.12", "kafkajs": "2.2.4", "aiokafka": "0.14.0",
           "kcat": "1.7.1 (librdkafka 2.0.2)", "example-share-confluent-with-a-long-name": "2.12.1"}
SCENARIOS = [f"scenario_with_a_long_name_{i:02d}" for i in range(18)] + ["share_empty_first_assignment",
                                                                         "renew_only_fetch"]

_MEASURE = """<script>
const m = {};
m.viewport = window.innerWidth;
m.docWidth = document.documentElement.scrollWidth;
const wrap = document.querySelector('.matrix-wrap').getBoundingClientRect();
m.wrapRight = wrap.right;
m.tableWidth = document.querySelector('table.matrix').getBoundingClientRect().width;
m.wrapScroll = document.querySelector('.matrix-wrap').scrollWidth - document.querySelector('.matrix-wrap').clientWidth;
m.overflowing = [...document.querySelectorAll('.matrix th, .matrix td')]
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.slice(0, 60));
m.headers = [...document.querySelectorAll('.matrix thead th')].map(e => e.innerText.replace(/\\s+/g, ' '));
m.why = [...document.querySelectorAll('td .why')].map(e => [e.getBoundingClientRect().height, e.innerText]);
m.sticky = getComputedStyle(document.querySelector('tbody th.scenario')).position;
m.failLink = document.querySelector('td.fail a').getAttribute('href');
const target = document.querySelector(m.failLink);
m.failTarget = target ? target.innerText : null;
const pre = document.createElement('pre'); pre.id = 'kwire-measure'; pre.textContent = JSON.stringify(m);
document.body.appendChild(pre);
</script>"""


def _results() -> list[ScenarioResult]:
    req = request_class(79).from_json({"GroupId": "sg", "MemberId": "m1", "ShareSessionEpoch": 3, "IsRenewAck": True,
                                       "Topics": []}, 2)
    frame = Frame(41, 1000, 1, 7, 79, 2, 12, "client", req)
    out = []
    for c, version in CLIENTS.items():
        for i, s in enumerate(SCENARIOS):
            if c == "java" and i == 3:
                r = ScenarioResult.failed(c, s, "client rule violations: CR-9 (1 in all)")
                r.violations = [Violation("CR-9", "A share consumer acknowledges only records it holds.",
                                          frame.connection, "member 'm1' acknowledged offsets 999-999", (frame,))]
            elif c == "kcat" and i % 2:
                r = ScenarioResult.skipped(c, s, "kcat has no share consumer (KIP-932); " + "a long reason " * 12)
            elif c == "kafkats" and i == 5:
                r = ScenarioResult.failed(c, s, "the competing consumer received [Delivered(partition=0, offset=0, "
                                                "delivery_count=2, value='slow')] while it was renewed")
            else:
                r = ScenarioResult.passed(c, s)
                r.elapsed_s = 12.3
            r.client_version = version
            out.append(r)
    return out


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium-headless-shell is not installed")
def test_the_report_fits_1400_px_and_shows_versions_reasons_and_frames(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    page = render_html(_results(), RunInfo("kwire conform --client java ...", "kwire (1 broker)",
                                           "2026-11-26 08:00:00 UTC", True))
    measured = tmp_path / "report.html"
    measured.write_text(page.replace("</body>", _MEASURE + "</body>"))
    dom = subprocess.run([CHROMIUM, "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,900",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", measured.as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="kwire-measure">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    m = json.loads(html.unescape(found.group(1)))
    assert m["viewport"] == 1400
    # Fits: no horizontal scrolling of the page or the matrix, no cell whose content spills.
    assert m["docWidth"] <= 1400 and m["wrapRight"] <= 1400 and m["wrapScroll"] <= 0, m
    assert m["overflowing"] == []
    # Scenarios are rows: the header is the clients, each with its exact version.
    assert m["headers"][0] == "scenario" and len(m["headers"]) == 1 + len(CLIENTS)
    for header, (client, version) in zip(m["headers"][1:], CLIENTS.items(), strict=True):
        assert client in header and version in header
    assert m["sticky"] == "sticky"
    # Reasons are in the cells, visible (a box with height), skips and failures alike.
    whys = [text for height, text in m["why"] if height > 0]
    assert len(whys) == len(m["why"]) == 10 + 1 + 1  # kcat skips every other scenario
    assert any(t.startswith("kcat has no share consumer") for t in whys)
    assert any("competing consumer received" in t for t in whys)
    # A failure links to its details, where the violating exchange is decoded.
    assert m["failLink"] == "#java--scenario_with_a_long_name_03"
    assert "CR-9" in m["failTarget"] and "#41 broker 1 connection 7 ShareAcknowledge v2" in m["failTarget"]
    assert "decoded request and response of #41" in m["failTarget"]

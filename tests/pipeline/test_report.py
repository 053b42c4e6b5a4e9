"""The HTML reports are self-contained and render in a real browser (Debian's headless chromium)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from kwire.pipeline import jobs

from .dlq_dirs import write_dlq_dirs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"
CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")


def _pixels(png: bytes) -> tuple[int, int, set[bytes]]:
    """Width, height and the distinct RGB(A) pixels of a non-interlaced 8-bit PNG (what chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = color = 0
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos : pos + 8])
        data = png[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            width, height, _depth, color = struct.unpack(">IIBB", data[:10])
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    bpp = 4 if color == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    seen: set[bytes] = set()
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        seen.update(bytes(line[i : i + 3]) for i in range(0, stride, bpp * 7))
        prev = line
    return width, height, seen


def _reports(tmp_path: Path) -> list[Path]:
    t = jobs.traffic_job([str(FIXTURES)], tmp_path / "t")
    d = jobs.dlq_job(write_dlq_dirs(tmp_path / "logs"), tmp_path / "d")
    assert t.report is not None and d.report is not None
    return [t.report, d.report]


def test_reports_are_self_contained_with_plots(tmp_path: Path) -> None:
    for report in _reports(tmp_path):
        page = report.read_text()
        assert page.count("<svg") >= 3
        assert not re.search(r"""(src|href)=["']?(https?:|//|file:)""", page)
        assert "<script" not in page


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium-headless-shell is not installed")
def test_reports_render_in_headless_chromium(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    for report in [blank, *_reports(tmp_path)]:
        shot = report.with_suffix(".png")
        subprocess.run([CHROMIUM, "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--screenshot={shot}",
                        "--window-size=900,1400", report.as_uri()], check=True, capture_output=True, timeout=120)
        width, height, colours = _pixels(shot.read_bytes())
        assert (width, height) == (900, 1400)
        if report is blank:
            assert len(colours) == 1  # nothing drawn: the baseline
        else:
            # text, table rules and both bar colours (#3b6fb6, #d9822b) were painted
            assert len(colours) > 20, report.name
            assert bytes.fromhex("3b6fb6") in colours, report.name
        dom = subprocess.run([CHROMIUM, "--no-sandbox", "--disable-gpu", "--dump-dom", report.as_uri()],
                             check=True, capture_output=True, text=True, timeout=120).stdout
        if report is not blank:
            assert "<svg" in dom and "<rect" in dom


# --- the traffic report tells the truth: a linear time axis, whole labels, real latency or a note ---

_MEASURE = """<script>
window.addEventListener('load', () => {
  const out = {overflow: [], ticks: [], columns: 0, labels: []};
  const svgs = [...document.querySelectorAll('svg')];
  for (const svg of svgs) {
    const w = svg.width.baseVal.value;
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBBox();
      if (b.x < 0 || b.x + b.width > w + 0.5) out.overflow.push(t.textContent);
      if (t.classList.contains('label')) out.labels.push(t.textContent);
    }
  }
  const time = document.querySelector('svg.columns');
  for (const t of time.querySelectorAll('text.tick')) out.ticks.push([t.getBBox().x, t.getBBox().width, t.textContent]);
  out.columns = time.querySelectorAll('rect').length;
  const pre = document.createElement('pre');
  pre.id = 'measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _recorded_with_gaps() -> list:
    """Real exchanges (ApiVersions, Metadata, ShareGroupHeartbeat v1) moved apart in wire time:
    0, 2, 3 and 400 ms, so most buckets in between are empty."""
    import dataclasses

    from kwire.client import WireClient
    from kwire.control import Broker, BrokerConfig
    from kwire.protocol.messages.metadata import MetadataRequest
    from kwire.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest

    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("t")
        b.start_recording()
        with WireClient(b.bootstrap) as c:
            c.request(MetadataRequest(topics=None))
            c.request(ShareGroupHeartbeatRequest(group_id="g", member_id="m" * 22, member_epoch=0,
                                                 subscribed_topic_names=["t"]), version=1)
            c.request(MetadataRequest(topics=None))
        recorded = b.recorded()
    assert [r.api_key for r in recorded] == [18, 3, 76, 3]
    base = recorded[0].at_us
    out = []
    for r, at_ms in zip(recorded, (0, 2, 3, 400), strict=True):
        latency = r.response_at_us - r.at_us
        out.append(dataclasses.replace(r, at_us=base + at_ms * 1000, response_at_us=base + at_ms * 1000 + latency))
    return out


def _measure(report: Path) -> dict:
    import json

    assert CHROMIUM is not None
    probe = report.with_name("probe.html")
    probe.write_text(report.read_text().replace("</body>", _MEASURE + "</body>"))
    dom = subprocess.run([CHROMIUM, "--no-sandbox", "--disable-gpu", "--dump-dom", probe.as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert m is not None, dom[-2000:]
    import html

    return json.loads(html.unescape(m.group(1)))


def test_time_axis_is_linear_with_empty_buckets() -> None:
    """Buckets between the first and last are drawn empty; the width comes from the caller (the
    whole capture), not from the first two non-empty buckets; no two ticks share a label."""
    from kwire.pipeline.report import _over_time

    ms = 1_000_000
    page = _over_time([(0, 3), (5 * ms, 1), (400 * ms, 2)], 1, "t", 5 * ms)
    assert page.count("<rect") == 81
    ticks = re.findall(r'class="tick"[^>]*>([^<]+)<', page)
    assert len(ticks) == len(set(ticks)) > 2
    assert ticks == sorted(ticks)
    assert "81 buckets of 5 ms" in page


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium-headless-shell is not installed")
def test_traffic_report_axis_labels_and_latency_in_chromium(tmp_path: Path) -> None:
    """Rendered in headless chromium: the time axis's ticks stand left to right in time order, each
    label unique and whole inside its picture, API labels keep name and version
    ("ShareGroupHeartbeat v1"), and a capture on the broker's ms clock says it has no latency."""
    import dataclasses

    from kwire.capture import write_exchanges_pcapng
    from kwire.pipeline.summary import time_bucket_ns

    recorded = _recorded_with_gaps()
    for name, exchanges in (("wire", recorded),
                            ("broker", [dataclasses.replace(r, at_us=None, response_at_us=None) for r in recorded])):
        (tmp_path / name).mkdir()
        cap = tmp_path / name / "traffic.pcapng"
        with open(cap, "wb") as f:
            write_exchanges_pcapng(exchanges, f, comment="kwire broker --record")
        res = jobs.traffic_job([str(cap)], tmp_path / name / "out")
        assert res.report is not None
        page = res.report.read_text()
        got = _measure(res.report)
        assert got["overflow"] == []
        xs = [x for x, _, _ in got["ticks"]]
        labels = [t for _, _, t in got["ticks"]]
        assert xs == sorted(xs) and len(set(labels)) == len(labels) == len(xs) > 1
        assert labels == sorted(labels)  # one day: the clock strings sort as times
        assert all(x + w <= nxt for (x, w, _), nxt in zip(got["ticks"], xs[1:], strict=False))  # no overlap
        if name == "wire":
            width = time_bucket_ns(0, 400_000_000)
            assert got["columns"] == 400_000_000 // width + 1  # every bucket of the 400 ms drawn
            assert "ShareGroupHeartbeat v1" in got["labels"]
            assert "latency-unknown" not in page
        else:
            assert "latency-unknown" in page and "broker clock in milliseconds" in page
            assert "ShareGroupHeartbeat v1" not in got["labels"]  # no latency chart to label
            assert any("ShareGroupHeartbeat v1" in label for label in got["labels"])  # the usage chart

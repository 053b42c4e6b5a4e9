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

"""Self-contained HTML reports (inline SVG, no scripts, no external files) for traffic and DLQ jobs."""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Sequence
from typing import Any

from kwire.pipeline.traffic import BROKER_CLOCK_ISSUE

__all__ = ["traffic_html", "dlq_html", "text_table"]

_STYLE = """
body{font-family:sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#eef}svg{background:#fafafa;border:1px solid #ddd}.bar{fill:#3b6fb6}.bar2{fill:#d9822b}
text{font-size:11px;fill:#222}.note{color:#666;font-size:12px}
"""


def _esc(v: Any) -> str:
    return html.escape("" if v is None else str(v))


def _table(rows: Sequence[dict[str, Any]], columns: Sequence[str], limit: int = 200) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_esc(r.get(c))}</td>" for c in columns) + "</tr>" for r in rows[:limit])
    more = f'<p class="note">{len(rows) - limit} more rows in the Parquet output</p>' if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


_CHAR_PX = 6.6  # an 11 px sans-serif character, generously: labels are sized to fit, never cut


def _text_px(text: str) -> int:
    return int(len(text) * _CHAR_PX) + 1


def _hbars(items: Sequence[tuple[str, float]], unit: str = "", css: str = "bar") -> str:
    """Horizontal bars, one per labelled value: whole labels in a column sized to the longest,
    each value printed just right of its bar, inside the picture."""
    if not items:
        return '<p class="note">no data</p>'
    top = max(v for _, v in items) or 1
    label_w = max(_text_px(label) for label, _ in items) + 10
    values = [f"{v:g}{unit}" for _, v in items]
    bar_w = 420
    width = label_w + bar_w + 10 + max(_text_px(t) for t in values) + 10
    h = 20 * len(items) + 10
    parts = [f'<svg width="{width}" height="{h}" role="img" class="hbars">']
    for i, ((label, v), text) in enumerate(zip(items, values, strict=True)):
        y = 5 + 20 * i
        w = max(1, int(bar_w * v / top))
        parts.append(f'<text class="label" x="5" y="{y + 13}">{_esc(label)}</text>'
                     f'<rect class="{css}" x="{label_w}" y="{y}" width="{w}" height="15"/>'
                     f'<text class="value" x="{label_w + w + 5}" y="{y + 13}">{_esc(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _columns(items: Sequence[tuple[str, float]], title: str) -> str:
    """Vertical bars over an ordered axis (time buckets, histogram bins), one per item, empty ones
    included; a label under every k-th bar, k chosen so that labels never overlap."""
    if not items:
        return '<p class="note">no data</p>'
    top = max(v for _, v in items) or 1
    n = len(items)
    bw = max(4, min(40, 700 // n))
    longest = max(_text_px(label) for label, _ in items)
    every = max(1, -(-(longest + 6) // bw))
    width = 60 + bw * n + longest
    parts = [f'<svg width="{width}" height="230" role="img" aria-label="{_esc(title)}" class="columns">']
    for i, (label, v) in enumerate(items):
        hgt = int(170 * v / top)
        x = 50 + i * bw
        parts.append(f'<rect class="bar" x="{x}" y="{190 - hgt}" width="{bw - 2}" height="{hgt}">'
                     f"<title>{_esc(label)}: {v:g}</title></rect>")
        if i % every == 0:
            parts.append(f'<text class="tick" x="{x}" y="205">{_esc(label)}</text>')
    parts.append(f'<text x="5" y="15">{top:g}</text><text x="5" y="190">0</text></svg>')
    return "".join(parts)


def _ts(ns: int | None, unit_ns: int = 1, step_ns: int | None = None) -> str:
    """UTC time; with ``step_ns`` (a chart's bucket width) as fine as the buckets need, so
    consecutive buckets never share a label."""
    if ns is None:
        return ""
    total_ns = ns * unit_ns
    t = _dt.datetime.fromtimestamp(total_ns // 1_000_000_000, tz=_dt.UTC).replace(
        microsecond=total_ns % 1_000_000_000 // 1000)
    if step_ns is None:
        return t.strftime("%Y-%m-%d %H:%M:%S")
    if step_ns < 1_000:
        return t.strftime("%H:%M:%S.%f") + f"{total_ns % 1000:03d}"
    if step_ns < 1_000_000:
        return t.strftime("%H:%M:%S.%f")
    if step_ns < 1_000_000_000:
        return t.strftime("%H:%M:%S.%f")[:-3]
    if step_ns < 60_000_000_000:
        return t.strftime("%H:%M:%S")
    if step_ns < 86_400_000_000_000:
        return t.strftime("%m-%d %H:%M")
    return t.strftime("%Y-%m-%d")


def _over_time(series: list[tuple[int, int]], unit_ns: int, title: str, bucket: int | None = None) -> str:
    """A column per time bucket from the first to the last, empty ones drawn, on a linear axis.

    ``bucket`` is the width the series was counted in (in the series' unit), chosen from the whole
    capture; without it, the narrowest gap between two buckets."""
    if not series:
        return _columns([], title)
    if bucket is None:
        gaps = [b - a for (a, _), (b, _) in zip(series, series[1:], strict=False) if b > a]
        bucket = min(gaps) if gaps else 1_000_000_000 // unit_ns
    counts = dict(series)
    first, last = series[0][0], series[-1][0]
    dense = [(b, counts.get(b, 0)) for b in range(first, last + 1, bucket)]
    cols = _columns([(_ts(b, unit_ns, bucket * unit_ns), float(c)) for b, c in dense], title)
    return cols + (f"<p class='note'>UTC, {_esc(_ts(first, unit_ns))} to {_esc(_ts(last, unit_ns))}; "
                   f"{len(dense)} buckets of {_duration(bucket * unit_ns)}.</p>")


def _duration(ns: int) -> str:
    for unit, size in (("d", 86_400_000_000_000), ("h", 3_600_000_000_000), ("min", 60_000_000_000),
                       ("s", 1_000_000_000), ("ms", 1_000_000), ("µs", 1000)):
        if ns >= size and ns % size == 0:
            return f"{ns // size} {unit}"
    return f"{ns} ns"


def _page(title: str, sections: list[str]) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_esc(title)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{_esc(title)}</h1>{''.join(sections)}</body></html>\n")


def traffic_html(summary: list[dict[str, Any]], series: list[tuple[int, int]], issues: dict[str, int],
                 *, bucket_ns: int | None = None, title: str = "kwire traffic report") -> str:
    """Exchanges over time, API version usage per client, latency per API, errors, capture issues."""
    usage = [(f"{r['client_id'] or '-'}{' [' + r['client_software_name'] + ']' if r['client_software_name'] else ''} "
              f"{r['api_name']} v{r['api_version']}", float(r["exchanges"])) for r in summary]
    lat: dict[str, list[int]] = {}
    for r in summary:
        if r["answered"]:
            s = lat.setdefault(f"{r['api_name'] or r['api_key']} v{r['api_version']}", [0, 0])
            s[0] += r["latency_us_sum"]
            s[1] += r["answered"]
    latency = sorted(((k, round(v[0] / v[1], 1)) for k, v in lat.items()), key=lambda kv: (-kv[1], kv[0]))
    rows = [dict(r, latency_us_avg=round(r["latency_us_sum"] / r["answered"], 1) if r["answered"] else None)
            for r in summary]
    cols = ["client_id", "client_software_name", "client_software_version", "api_name", "api_version", "exchanges",
            "answered", "with_errors", "latency_us_avg", "latency_us_max"]
    total = sum(r["exchanges"] for r in summary)
    if issues.get(BROKER_CLOCK_ISSUE):
        latency_chart = ("<p class='note latency-unknown'>No latency: this capture's timestamps are kwire's "
                         "broker clock in milliseconds (written by <code>kwire broker --record</code> without wire "
                         "times), so the time between a request and its response is not measured. The latency "
                         "columns below are artefacts of that clock. Record with a current kwire, or capture with "
                         "tcpdump, for real latency.</p>")
    else:
        latency_chart = _hbars(latency, css="bar2")
    sections = [
        f"<p>{total} exchanges, {len({r['client_id'] for r in summary})} client ids.</p>",
        "<h2>Exchanges over time</h2>", _over_time(series, 1, "exchanges over time", bucket_ns),
        "<h2>API version usage per client</h2>", _hbars(usage),
        "<h2>Mean latency per API and version (µs)</h2>", latency_chart,
        "<h2>Per client and API</h2>", _table(rows, cols),
        "<h2>Capture issues</h2>", _table([{"kind": k, "count": v} for k, v in sorted(issues.items())], ["kind", "count"]),
    ]
    return _page(title, sections)


def dlq_html(report: list[dict[str, Any]], histogram: dict[Any, int], series: list[tuple[int, int]],
             errors: list[tuple[str, int]], *, now_ms: int, bucket_ms: int | None = None,
             title: str = "kwire DLQ report") -> str:
    """Records over time, delivery-count histogram, errors, counts by origin and the replay plan;
    topics whose records carry no dead-letter headers are listed apart, once."""
    from kwire.pipeline.dlq import not_dlq_notes, split_not_dlq

    report, plain = split_not_dlq(report)
    oldest = min((r["oldest_timestamp_ms"] for r in report if r["oldest_timestamp_ms"] is not None), default=None)
    age = f"{(now_ms - oldest) / 3_600_000:.1f} h" if oldest is not None else "unknown"
    hist = [(str(k) if k is not None else "n/a", float(v))
            for k, v in sorted(histogram.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))]
    cols = ["topic", "original_topic", "original_partition", "group_id", "convention", "records",
            "oldest (UTC)", "min_delivery_count", "max_delivery_count"]
    by_origin = [dict(r, **{"oldest (UTC)": _ts(r["oldest_timestamp_ms"], 1_000_000)}) for r in report]
    plan = [dict(r, replay=_replay_range(r)) for r in report if r["original_topic"] is not None]
    sections = [
        f"<p>{sum(r['records'] for r in report)} records; oldest record is {age} old.</p>",
        "<h2>Records over time</h2>", _over_time(series, 1_000_000, "records over time", bucket_ms),
        "<h2>Delivery-count histogram</h2>", _columns(hist, "delivery count"),
        "<h2>By origin</h2>", _table(by_origin, cols),
        "<h2>Error messages</h2>", _hbars([(m, float(c)) for m, c in errors], css="bar2"),
        "<h2>Replay plan</h2>", _table(plan, ["original_topic", "original_partition", "group_id", "records", "replay"]),
    ]
    if plain:
        sections += ["<h2>Not dead-letter topics</h2>",
                     "<ul>" + "".join(f"<li>{_esc(n)}</li>" for n in not_dlq_notes([*report, *plain])) + "</ul>"]
    return _page(title, sections)


def _replay_range(r: dict[str, Any]) -> str:
    """Where the dead letters came from: a range of original offsets is not a list of them (the
    records in between were processed), so say how many of its offsets are dead letters."""
    lo, hi = r["min_original_offset"], r["max_original_offset"]
    where = f"{r['original_topic']}-{r['original_partition']}"
    if lo is None or hi is None:
        return f"{where}: original offsets unknown"
    span = hi - lo + 1
    if span == r["records"]:
        return f"{where} offsets {lo}..{hi} (every one)"
    return (f"{where}: {r['records']} dead letters between offsets {lo} and {hi} ({span} offsets); "
            "replay them one by one (kwire dlq replay), not the range")


def text_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], limit: int = 40) -> str:
    """A plain-text table for the terminal summary."""
    shown = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows[:limit]]
    widths = [max([len(c)] + [len(row[i]) for row in shown]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in shown]
    if len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more")
    return "\n".join(lines)

"""What one ``kwire conform`` run writes: JUnit XML, a self-contained HTML report, the Markdown
matrix and the results as JSON, all from the same ``ScenarioResult`` list.

JUnit: one ``testsuite`` per client, one ``testcase`` per scenario (CI systems show a client as
a suite). HTML: one file, inline CSS, no scripts or external resources, so it opens from a CI
artifact as it is. A failure shows the reason, then each client-rule violation with its rule id,
explanation and the decoded frames.
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kwire.conformance.scenarios import Outcome, ScenarioResult

__all__ = ["RunInfo", "render_html", "render_junit", "results_json", "write_reports"]


@dataclass(slots=True)
class RunInfo:
    """Provenance of a run, shown in every output."""

    command: str
    target: str
    started: str  # UTC, "YYYY-MM-DD HH:MM:SS UTC"
    rules_checked: bool


def _failure_text(r: ScenarioResult) -> str:
    parts = [r.reason] if r.reason else []
    parts += [v.format() for v in r.violations]
    return "\n\n".join(parts)


def render_junit(results: Sequence[ScenarioResult], info: RunInfo) -> str:
    """JUnit XML: ``testsuites`` > one ``testsuite`` per client > one ``testcase`` per scenario."""
    root = ET.Element("testsuites", name="kwire conform")
    clients = list(dict.fromkeys(r.client for r in results))
    for c in clients:
        mine = [r for r in results if r.client == c]
        suite = ET.SubElement(
            root, "testsuite", name=c, tests=str(len(mine)),
            failures=str(sum(r.outcome is Outcome.FAIL for r in mine)), errors="0",
            skipped=str(sum(r.outcome is Outcome.SKIP for r in mine)),
            time=f"{sum(r.elapsed_s for r in mine):.3f}", timestamp=info.started.replace(" UTC", "").replace(" ", "T"),
        )
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="target", value=info.target)
        ET.SubElement(props, "property", name="client_rules_checked", value=str(info.rules_checked).lower())
        version = next((r.client_version for r in mine if r.client_version), "")
        if version:
            ET.SubElement(props, "property", name="client_version", value=version)
        for r in mine:
            case = ET.SubElement(suite, "testcase", classname=f"kwire.conform.{c}", name=r.scenario,
                                 time=f"{r.elapsed_s:.3f}")
            if r.outcome is Outcome.FAIL:
                first = r.violations[0].rule_id + " " + r.violations[0].explanation if r.violations else r.reason
                el = ET.SubElement(case, "failure", message=first.splitlines()[0][:500] if first else "failed",
                                   type="ClientRuleViolation" if r.violations else "ScenarioFailure")
                el.text = _failure_text(r)
            elif r.outcome is Outcome.SKIP:
                ET.SubElement(case, "skipped", message=r.reason)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:16px 20px;color:#1d2430;background:#fff;max-width:100%}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:20px 0 8px}
.meta{color:#5b6472;margin-bottom:12px;overflow-wrap:anywhere}
.matrix-wrap{max-width:100%;overflow-x:auto;border:1px solid #c9ced6}
table.matrix{border-collapse:separate;border-spacing:0;width:100%;table-layout:fixed}
.matrix th,.matrix td{border-right:1px solid #c9ced6;border-bottom:1px solid #c9ced6;padding:5px 8px;
text-align:left;vertical-align:top;overflow-wrap:anywhere}
.matrix thead th{background:#eef1f5;position:sticky;top:0;z-index:2}
.matrix th.scenario{position:sticky;left:0;background:#eef1f5;z-index:1;width:210px;font-weight:600}
.matrix thead th.scenario{z-index:3}
.matrix .version{display:block;font-weight:400;color:#5b6472;font-size:12px}
.matrix .counts{display:block;font-weight:400;font-size:12px}
td.pass{background:#d9f2df;color:#14532d} td.fail{background:#fbd5d5;color:#7f1d1d}
td.skip{background:#f1f1f1;color:#6b7280}
td .outcome{font-weight:600} td.fail .outcome{font-weight:700}
td .why{display:-webkit-box;-webkit-line-clamp:3;-webkit-box-orient:vertical;overflow:hidden;font-size:12px}
.totals{font-weight:600}
details{margin:8px 0;border:1px solid #e5e7eb;border-radius:4px;padding:6px 10px;max-width:100%}
summary{cursor:pointer;font-weight:600} pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f8fa;
padding:8px;font-size:12px;max-width:100%} .rule{color:#7f1d1d;font-weight:700}
table.clients{border-collapse:collapse} .clients td,.clients th{border:1px solid #c9ced6;padding:4px 10px;text-align:left}
"""


def _anchor(*parts: object) -> str:
    return html.escape("--".join(str(p) for p in parts).replace(" ", "_"))


def _short(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(r: ScenarioResult | None) -> str:
    if r is None:
        return "<td></td>"
    label = r.outcome.value + (f" {r.elapsed_s:.1f}s" if r.outcome is not Outcome.SKIP else "")
    if r.violations:
        label += f" · {len(r.violations)} rule violation" + ("s" if len(r.violations) != 1 else "")
    out = f'<span class="outcome">{html.escape(label)}</span>'
    if r.outcome is not Outcome.PASS:
        why = r.reason or (r.violations[0].explanation if r.violations else "")
        out = (f'<a href="#{_anchor(r.client, r.scenario)}">{out}</a>'
               f'<span class="why" title="{html.escape(" ".join(why.split()))}">{html.escape(_short(why))}</span>')
    return f'<td class="{r.outcome.value}">{out}</td>'


def _frame_block(f: Any) -> str:
    """One frame of a violation: its summary line, then the whole decoded exchange."""
    whole = json.dumps(f.to_json(), indent=1, default=str)
    return (f"<pre>{html.escape(f.describe())}</pre>"
            f"<details><summary>decoded request and response of #{f.index}</summary>"
            f"<pre>{html.escape(whole)}</pre></details>")


def render_html(results: Sequence[ScenarioResult], info: RunInfo) -> str:
    """The whole report as one HTML document (no scripts, no external resources).

    Scenarios are rows and clients columns, so the page fits a laptop screen (1400 px) whatever the
    number of scenarios; the scenario column and the client header stay in view while scrolling.
    Every cell that is not a pass shows its reason and links to its details, where each
    client-rule violation shows the decoded frames of the violating exchange."""
    clients = list(dict.fromkeys(r.client for r in results))
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    by = {(r.client, r.scenario): r for r in results}
    versions = {r.client: r.client_version for r in results if r.client_version}
    counts = {o: sum(r.outcome is o for r in results) for o in Outcome}
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>kwire conform report</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>kwire conform: client conformance</h1>",
        f'<div class="meta">{html.escape(info.started)} · target: {html.escape(info.target)} · '
        f"client rules {'checked from recorded traffic' if info.rules_checked else 'not checked (target does not record)'}"
        f"<br><code>{html.escape(info.command)}</code></div>",
        f'<p class="totals">{counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed, '
        f"{counts[Outcome.SKIP]} skipped.</p>",
        '<div class="matrix-wrap"><table class="matrix"><thead><tr><th class="scenario">scenario</th>',
    ]
    for c in clients:
        mine = [r for r in results if r.client == c]
        tally = ", ".join(f"{n} {o.value}" for o in Outcome if (n := sum(r.outcome is o for r in mine)))
        out.append(f'<th class="client">{html.escape(c)}<span class="version">{html.escape(versions.get(c, "?"))}'
                   f'</span><span class="counts">{html.escape(tally)}</span></th>')
    out.append("</tr></thead><tbody>")
    for s in scenarios:
        out.append(f'<tr><th class="scenario">{html.escape(s)}</th>'
                   + "".join(_cell(by.get((c, s))) for c in clients) + "</tr>")
    out.append("</tbody></table></div>")
    out += ["<h2>Clients</h2>", '<table class="clients"><tr><th>client</th><th>version</th></tr>']
    out += [f"<tr><td>{html.escape(c)}</td><td>{html.escape(versions.get(c, '?'))}</td></tr>" for c in clients]
    out.append("</table>")
    notes = [r for r in results if r.outcome is not Outcome.PASS or r.violations]
    if notes:
        out.append("<h2>Details</h2>")
    for r in notes:
        out.append(f'<details id="{_anchor(r.client, r.scenario)}" {"open" if r.outcome is Outcome.FAIL else ""}>'
                   f"<summary>{html.escape(r.client)} / {html.escape(r.scenario)}: {r.outcome.value}</summary>")
        if r.reason:
            out.append(f"<p>{html.escape(r.reason)}</p>")
        for n, v in enumerate(r.violations, 1):
            out.append(f'<p id="{_anchor(r.client, r.scenario, f"v{n}")}"><span class="rule">{html.escape(v.rule_id)}'
                       f"</span> {html.escape(v.statement)}<br>"
                       f"on {html.escape(v.connection)}: {html.escape(v.explanation)}</p>")
            out += [_frame_block(f) for f in v.frames]
        out.append("</details>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def results_json(results: Sequence[ScenarioResult], info: RunInfo) -> str:
    rows: list[dict[str, Any]] = [
        {"client": r.client, "client_version": r.client_version, "scenario": r.scenario,
         "outcome": r.outcome.value, "reason": r.reason,
         "elapsed_s": round(r.elapsed_s, 3), "recorded_frames": r.recorded_frames,
         "violations": [v.to_json() for v in r.violations], "details": r.details}
        for r in results
    ]
    return json.dumps({"command": info.command, "target": info.target, "started": info.started,
                       "rules_checked": info.rules_checked, "results": rows}, indent=1, default=str) + "\n"


def write_reports(results: Sequence[ScenarioResult], info: RunInfo, directory: Path, markdown: str) -> list[Path]:
    """Write junit.xml, report.html, conformance.md and results.json into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "junit.xml": render_junit(results, info),
        "report.html": render_html(results, info),
        "conformance.md": markdown,
        "results.json": results_json(results, info),
    }
    written = []
    for name, text in files.items():
        p = directory / name
        p.write_text(text, encoding="utf-8")
        written.append(p)
    return written

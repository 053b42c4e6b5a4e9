"""Import Apache Kafka's JSON message specs into ``schemas/``.

Usage: python tools/import_schemas.py SPEC_DIR [--out schemas]

SPEC_DIR holds upstream's ``message/``, ``share-coordinator/``,
``transaction-coordinator/`` and ``group-coordinator/`` folders (and optionally a
``SOURCE.md`` naming the upstream commit). Only structural facts are kept: names,
types, versions, defaults, tags. Upstream prose (``about``) and ``//`` comments are
dropped. The output is deterministic: the same input always gives the same bytes.
Nothing at run or test time reads SPEC_DIR; ``schemas/`` is the project's own.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

SPEC_FOLDERS = ("message", "share-coordinator", "transaction-coordinator", "group-coordinator")

# Top-level keys kept, in output order. Unknown keys are reported and skipped, never fatal.
TOP_KEYS = (
    "apiKey",
    "type",
    "name",
    "validVersions",
    "flexibleVersions",
    "latestVersionUnstable",
    "listeners",
    "headerVersions",
    "fields",
    "commonStructs",
)
# Field keys kept, in output order.
FIELD_KEYS = (
    "name",
    "type",
    "versions",
    "nullableVersions",
    "taggedVersions",
    "tag",
    "default",
    "ignorable",
    "mapKey",
    "entityType",
    "flexibleVersions",
    "zeroCopy",
    "fields",
)
DROPPED_KEYS = {"about"}


def strip_comments(text: str) -> str:
    """Remove ``//`` comments, leaving ``//`` inside JSON strings (URLs in prose) alone."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
            out.append(c)
            i += 1
            continue
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _clean_fields(fields: list[dict[str, Any]], where: str, warnings: list[str]) -> list[dict[str, Any]]:
    cleaned = []
    for f in fields:
        out: dict[str, Any] = {}
        for key in FIELD_KEYS:
            if key not in f:
                continue
            if key == "fields":
                out["fields"] = _clean_fields(f["fields"], f"{where}.{f['name']}", warnings)
            else:
                out[key] = f[key]
        for key in f:
            if key not in FIELD_KEYS and key not in DROPPED_KEYS:
                warnings.append(f"{where}.{f.get('name')}: unknown field key {key!r} skipped")
        cleaned.append(out)
    return cleaned


def clean_spec(spec: dict[str, Any], where: str, warnings: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in TOP_KEYS:
        if key not in spec:
            continue
        if key == "fields":
            out["fields"] = _clean_fields(spec["fields"], spec["name"], warnings)
        elif key == "commonStructs":
            out["commonStructs"] = [
                {"name": cs["name"], "versions": cs.get("versions", "0+"),
                 "fields": _clean_fields(cs["fields"], f"{spec['name']}.{cs['name']}", warnings)}
                for cs in spec["commonStructs"]
            ]
        else:
            out[key] = spec[key]
    for key in spec:
        if key not in TOP_KEYS and key not in DROPPED_KEYS:
            warnings.append(f"{where}: unknown top-level key {key!r} skipped")
    out.setdefault("fields", [])
    return out


def upstream_commit(spec_dir: Path) -> str | None:
    source = spec_dir / "SOURCE.md"
    if not source.exists():
        return None
    m = re.search(r"\|\s*commit\s*\|\s*`([0-9a-f]{40})`", source.read_text())
    return m.group(1) if m else None


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=False, ensure_ascii=True) + "\n"


def import_specs(spec_dir: Path, out_dir: Path) -> list[str]:
    warnings: list[str] = []
    index = []
    for folder in SPEC_FOLDERS:
        src = spec_dir / folder
        if not src.is_dir():
            warnings.append(f"{src}: missing, skipped")
            continue
        dst = out_dir / folder
        dst.mkdir(parents=True, exist_ok=True)
        for old in dst.glob("*.json"):
            old.unlink()
        for path in sorted(src.glob("*.json")):
            try:
                spec = json.loads(strip_comments(path.read_text(encoding="utf-8")))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}: not valid JSON after stripping comments: {exc}") from exc
            cleaned = clean_spec(spec, f"{folder}/{path.name}", warnings)
            (dst / path.name).write_text(dump(cleaned), encoding="utf-8")
            index.append(f"{folder}/{path.name}")
    source = {
        "upstream": "apache/kafka",
        "commit": upstream_commit(spec_dir),
        "importer": "tools/import_schemas.py",
        "files": index,
    }
    (out_dir / "SOURCE.json").write_text(dump(source), encoding="utf-8")
    return warnings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec_dir", type=Path)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "schemas")
    args = ap.parse_args(argv)
    warnings = import_specs(args.spec_dir, args.out)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

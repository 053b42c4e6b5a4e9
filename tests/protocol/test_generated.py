"""The committed codec is exactly what the generator makes from schemas/, and schemas/ is
exactly what the importer makes from a spec folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_committed_codec_is_not_stale() -> None:
    proc = subprocess.run([sys.executable, "tools/gen_protocol.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _write(p: Path, text: str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_importer_keeps_structure_drops_prose_and_tolerates_unknowns(tmp_path: Path) -> None:
    spec = tmp_path / "specs"
    _write(spec / "SOURCE.md", "| commit | `" + "a" * 40 + "` |\n")
    _write(spec / "message" / "FooRequest.json", """// licence comment
{
  "apiKey": 999, "type": "request", "name": "FooRequest",
  // a comment with "quotes" and a URL http://x
  "validVersions": "0-1", "flexibleVersions": "1+", "futureKey": 1,
  "fields": [
    { "name": "Url", "type": "string", "versions": "0+", "default": "http://a//b", "about": "prose" },
    { "name": "Tagged", "type": "int32", "versions": "1+", "taggedVersions": "1+", "tag": 0, "newFieldKey": true }
  ]
}
""")
    _write(spec / "message" / "GoneRequest.json", '{"apiKey": 998, "type": "request", "name": "GoneRequest", '
                                                   '"validVersions": "none"}')
    out = tmp_path / "schemas"
    cmd = [sys.executable, str(ROOT / "tools" / "import_schemas.py"), str(spec), "--out", str(out)]
    first = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "unknown top-level key 'futureKey'" in first.stderr
    assert "unknown field key 'newFieldKey'" in first.stderr
    foo = json.loads((out / "message" / "FooRequest.json").read_text())
    assert foo["fields"][0] == {"name": "Url", "type": "string", "versions": "0+", "default": "http://a//b"}
    assert "futureKey" not in foo and "about" not in json.dumps(foo)
    gone = json.loads((out / "message" / "GoneRequest.json").read_text())
    assert gone["validVersions"] == "none" and gone["fields"] == []
    source = json.loads((out / "SOURCE.json").read_text())
    assert source["commit"] == "a" * 40
    before = {p: p.read_bytes() for p in out.rglob("*.json")}
    subprocess.run(cmd, capture_output=True, check=True)
    assert {p: p.read_bytes() for p in out.rglob("*.json")} == before  # deterministic


def test_schemas_record_the_upstream_commit() -> None:
    source = json.loads((ROOT / "schemas" / "SOURCE.json").read_text())
    assert source["commit"] == "d79bd502ec7fa49335afa422f442af80ed0ab8f6"
    assert len(source["files"]) == len(list((ROOT / "schemas").glob("*/*.json")))


def test_every_generated_file_is_marked_generated_in_gitattributes() -> None:
    """GitHub folds what tools/gen_protocol.py writes (linguist-generated); plain diffs still show it."""
    if not (ROOT / ".git").exists():
        import pytest

        pytest.skip("not a git checkout")
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_protocol
    finally:
        sys.path.remove(str(ROOT / "tools"))
    paths = sorted(f"kwire/protocol/{rel}" for rel in gen_protocol.generate())
    out = subprocess.run(["git", "check-attr", "--stdin", "linguist-generated", "diff"], cwd=ROOT, check=True,
                         input="\n".join(paths) + "\n", capture_output=True, text=True).stdout
    attrs: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        path, attr, value = line.rsplit(": ", 2)
        attrs.setdefault(path, {})[attr] = value
    assert {p for p in paths if attrs[p]["linguist-generated"] != "set"} == set()
    assert {p for p in paths if attrs[p]["diff"] == "unset"} == set()  # diffs stay visible
    assert "kwire/protocol/_index.py" in paths and any(p.startswith("kwire/protocol/data/") for p in paths)

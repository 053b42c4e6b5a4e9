"""``kwire records dump``: JSON lines per record or batch, --verify naming corrupt offsets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kwire.cli import main
from kwire.records import BatchBuilder, LegacyMessageSetBuilder, build_control_batch, write_segment
from kwire.records.control import ControlType


def _batch(base: int) -> bytes:
    b = BatchBuilder(base, producer_id=5, producer_epoch=1, base_sequence=base)
    b.append(b"hello", b"\xff\xfe", [("h", b"ok"), ("n", None)], 1000 + base)
    b.append(None, None, (), 2000 + base)
    return b.build()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    rc = main(["records", "dump", *argv])
    out, err = capsys.readouterr()
    return rc, [json.loads(line) for line in out.splitlines()], err


def test_dump_prints_one_json_line_per_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "raw.bin"
    path.write_bytes(_batch(0) + build_control_batch(ControlType.COMMIT, 5, 1, 3, base_offset=2, timestamp_ms=9))
    rc, lines, _ = _run(capsys, str(path))
    assert rc == 0 and len(lines) == 3
    first = lines[0]
    assert first["offset"] == 0 and first["timestamp"] == 1000
    assert first["key"] == {"hex": "fffe"} and first["value"] == "hello"
    assert first["headers"] == [["h", "ok"], ["n", None]]
    assert (first["producer_id"], first["producer_epoch"], first["base_sequence"]) == (5, 1, 0)
    assert lines[1]["key"] is None and lines[1]["value"] is None
    assert lines[2]["is_control"] and lines[2]["is_transactional"]
    assert lines[2]["control"] == {"type": "COMMIT", "coordinator_epoch": 3}


def test_dump_batches_and_partition_dirs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "t-0"
    write_segment(d, [_batch(0), _batch(2)])
    write_segment(d, [_batch(4)])
    rc, lines, _ = _run(capsys, str(d), "--batches")
    assert rc == 0 and [line["base_offset"] for line in lines] == [0, 2, 4]
    assert all("records" not in line and line["record_count"] == 2 for line in lines)
    rc, lines, _ = _run(capsys, str(d / "00000000000000000004.log"))
    assert [line["offset"] for line in lines] == [4, 5]


def test_dump_legacy_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = LegacyMessageSetBuilder(1, 2, base_offset=7)
    b.append(b"old", None, 5)
    path = tmp_path / "legacy.bin"
    path.write_bytes(b.build())
    rc, lines, _ = _run(capsys, str(path), "--verify")
    assert rc == 0 and lines[0]["offset"] == 7 and lines[0]["magic"] == 1


def test_verify_exits_nonzero_naming_the_corrupt_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = bytearray(_batch(2))
    bad[-3] ^= 0x10
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_batch(0) + bytes(bad) + _batch(4))
    rc, lines, err = _run(capsys, str(path), "--verify")
    assert rc == 1
    assert "offset 2" in err and "CRC" in err
    assert [line["offset"] for line in lines] == [0, 1, 4, 5]
    rc, lines, err = _run(capsys, str(path), "--verify", "--batches")
    assert rc == 1 and [line["crc_valid"] for line in lines] == [True, False, True]


def test_torn_tail_is_reported_not_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(_batch(0) + _batch(2)[:40])
    rc, lines, err = _run(capsys, str(path), "--verify")
    assert rc == 0 and len(lines) == 2 and "torn tail of 40 bytes" in err


def test_missing_path_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["records", "dump", str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err

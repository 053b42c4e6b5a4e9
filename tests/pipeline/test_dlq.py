"""DLQ records and report on the plain path, from directories kafka-python's builder wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwire.pipeline.dlq import dlq_report_rows, dlq_row, parse_dlq_headers
from kwire.pipeline.logs import iter_log_records, pack, plan_log_slices

from .dlq_dirs import CONVENTIONS, T0, write_dlq_dirs


@pytest.fixture()
def dlq_root(tmp_path: Path) -> Path:
    return write_dlq_dirs(tmp_path / "logs")


def _rows(root: Path, target: int = 1 << 20) -> list[dict]:
    slices, _ = plan_log_slices(root, target)
    return [dlq_row(r) for s in slices for r in iter_log_records(s)]


def test_every_convention_yields_the_original_coordinates(dlq_root: Path) -> None:
    rows = _rows(dlq_root)
    by = {c: [r for r in rows if r["topic"] == f"dlq.{c}"] for c in CONVENTIONS}
    for conv, rs in by.items():
        assert [r["convention"] for r in rs] == [conv] * 6
        assert [r["original_topic"] for r in rs] == ["payments"] * 6
        assert [r["original_partition"] for r in rs] == [i % 3 for i in range(6)]
        assert [r["original_offset"] for r in rs] == [1000 + i for i in range(6)]
        assert [r["offset"] for r in rs] == list(range(6))
        assert [r["timestamp_ms"] for r in rs] == [T0 + 60_000 * i for i in range(6)]
    assert [r["delivery_count"] for r in by["kip1191"]] == [1 + i % 4 for i in range(6)]
    assert [r["delivery_count"] for r in by["x-original"]] == list(range(6))
    assert {r["group_id"] for r in by["spring"]} == {"billing"}
    assert {r["error_class"] for r in by["connect"]} == {"org.apache.kafka.connect.errors.DataException"}
    assert {r["error_message"] for r in by["kip1191"]} == {"Offset rejected by client."}
    plain = [r for r in rows if r["topic"] == "dlq.plain"]
    assert [(r["convention"], r["original_topic"], r["headers"]) for r in plain] == [
        ("none", None, [{"key": "trace", "value": b"1"}])]


def test_a_torn_tail_is_reported_and_the_whole_batches_before_it_read(dlq_root: Path) -> None:
    slices, torn = plan_log_slices(dlq_root)
    assert [Path(t.path).parent.name for t in torn] == ["dlq.kip1191-0"]
    rows = [r for s in slices for r in iter_log_records(s)]
    assert len([r for r in rows if r["topic"] == "dlq.kip1191"]) == 6


def test_small_targets_cut_segments_at_batch_boundaries_without_changing_rows(dlq_root: Path) -> None:
    whole = _rows(dlq_root)
    slices, _ = plan_log_slices(dlq_root, 1)  # every batch its own slice
    assert len(slices) == 4 * 3 + 1
    assert len(pack(slices, 600)) > 1
    assert _rows(dlq_root, 1) == whole


def test_report_groups_by_origin_and_gives_the_replay_range(dlq_root: Path) -> None:
    report = dlq_report_rows(_rows(dlq_root))
    k = next(r for r in report if r["convention"] == "kip1191" and r["original_partition"] == 0)
    assert (k["records"], k["min_original_offset"], k["max_original_offset"]) == (2, 1000, 1003)
    assert (k["min_delivery_count"], k["max_delivery_count"], k["group_id"]) == (1, 4, "billing")
    assert sum(r["records"] for r in report) == 25


def test_spring_accepts_text_coordinates_too() -> None:
    got = parse_dlq_headers([("kafka_dlt-original-topic", b"t"), ("kafka_dlt-original-partition", b"12"),
                             ("kafka_dlt-original-offset", b"345")])
    assert (got["convention"], got["original_partition"], got["original_offset"]) == ("spring", 12, 345)


def test_transaction_markers_are_not_dead_letters(tmp_path: Path) -> None:
    """A transactional DLQ topic: 6 dead letters and 3 COMMIT markers (control batches, as Kafka's
    log holds them; RecordBatch.isControlBatch) give 6 dlq_records rows, not 9; a topic without
    DLQ headers is named once, apart, as not a dead-letter topic."""
    from kwire.pipeline import jobs

    from .dlq_dirs import write_txn_dlq_dir

    root = write_txn_dlq_dir(tmp_path / "logs")
    res = jobs.dlq_job(root, tmp_path / "out")
    assert res.tables["dlq_records"] == 6 + 2
    by_topic: dict[tuple[str, str], int] = {}
    for r in res.summary:
        by_topic[(r["topic"], r["convention"])] = by_topic.get((r["topic"], r["convention"]), 0) + r["records"]
    assert by_topic == {("dlq.txn", "kip1191"): 6, ("events", "none"): 2}
    assert res.notes == ["events: not a dead-letter topic (2 records, none with dead-letter headers)"]
    page = (tmp_path / "out" / "dlq_report.html").read_text()
    assert page.count("not a dead-letter topic") == 1
    assert "<p>6 records;" in page


def test_cli_lists_a_topic_without_dlq_headers_once_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kwire.cli import main

    from .dlq_dirs import write_txn_dlq_dir

    root = write_txn_dlq_dir(tmp_path / "logs")
    assert main(["pipeline", "dlq", str(root), "--out", str(tmp_path / "out"), "--engine", "local"]) == 0
    out = capsys.readouterr().out
    table = [line.split() for line in out.splitlines() if line.startswith(("dlq.txn", "events "))]
    assert [row[:2] for row in table] == [["dlq.txn", "payments"]] * 3
    assert sum(int(row[5]) for row in table) == 6
    assert [line for line in out.splitlines() if "events" in line] == [
        "events: not a dead-letter topic (2 records, none with dead-letter headers)"]

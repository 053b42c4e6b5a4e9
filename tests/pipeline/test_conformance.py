"""Client-behaviour rules over captured exchanges (plain path)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kwire.pipeline import jobs
from kwire.pipeline.conformance import check_rows
from kwire.pipeline.traffic import traffic_rows

from .bad_client import write_bad_client_capture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"


def test_real_clients_against_kwire_break_no_rule() -> None:
    rows, _ = traffic_rows([str(FIXTURES / "clients.pcapng")])
    assert check_rows(rows) == []


def test_each_rule_is_tripped_by_the_bad_client(tmp_path: Path) -> None:
    rows, _ = traffic_rows([str(write_bad_client_capture(tmp_path / "bad.pcapng"))])
    got = check_rows(rows)
    assert Counter(v["rule_id"] for v in got) == {"CR-1": 1, "CR-2": 1, "WIRE-1": 1, "WIRE-2": 1, "WIRE-3": 1}
    cr1 = next(v for v in got if v["rule_id"] == "CR-1")
    assert (cr1["api_key"], cr1["api_version"], cr1["correlation_id"]) == (3, 12, 2)
    assert "outside the advertised 0..5" in cr1["detail"]
    assert next(v for v in got if v["rule_id"] == "CR-2")["correlation_id"] == 7
    assert next(v for v in got if v["rule_id"] == "WIRE-1")["correlation_id"] == 8
    assert next(v for v in got if v["rule_id"] == "WIRE-2")["correlation_id"] == 9
    assert next(v for v in got if v["rule_id"] == "WIRE-3")["correlation_id"] == 99


def test_conformance_job_writes_violations_and_counts_them(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    write_bad_client_capture(tmp_path / "in" / "bad.pcapng")
    res = jobs.conformance_job([str(tmp_path / "in")], tmp_path / "out")
    assert res.tables == {"conformance_violations": 5}
    assert sum(r["violations"] for r in res.summary) == 5

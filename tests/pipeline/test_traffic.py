"""wire_exchanges rows on the plain path, from the committed captures."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kwire.pipeline.plan import expand_inputs, plan_captures
from kwire.pipeline.summary import time_bucket_ns, traffic_summary
from kwire.pipeline.traffic import traffic_rows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"


def test_rows_name_client_software_api_and_latency() -> None:
    rows, issues = traffic_rows([str(FIXTURES / "clients.pcapng")])
    assert issues == []
    assert Counter(r["decode_status"] for r in rows) == {"ok": 23}
    assert {r["client_software_name"] for r in rows} == {"kafka-python"}
    assert {r["client_id"] for r in rows} == {"fixture-producer", "fixture-consumer"}
    produce = [r for r in rows if r["api_name"] == "Produce"]
    assert len(produce) == 2 and all(r["error_code"] is None and r["error_codes"] == [] for r in produce)
    # the writer answers 200 µs after the request began (segments of one request are 1 ns apart)
    assert all(199 <= r["latency_us"] <= 200 for r in rows)
    assert all(r["request_size"] > 8 and r["response_size"] > 4 for r in rows)


def test_error_codes_inside_responses_are_collected() -> None:
    rows, _ = traffic_rows([str(FIXTURES / "clients.pcapng")])
    join = [r for r in rows if r["api_name"] == "JoinGroup"]
    # the first JoinGroup of a KIP-394 client is answered MEMBER_ID_REQUIRED (79)
    assert join[0]["error_code"] == 79 and join[0]["error_codes"] == [79]
    assert join[1]["error_code"] == 0


def test_mid_stream_connection_has_no_client_software_and_keeps_its_produce() -> None:
    rows, issues = traffic_rows([str(FIXTURES / "mid_stream.pcapng")])
    producer = [r for r in rows if r["conn_id"].startswith("127.0.0.1:40002")]
    assert [(r["api_name"], r["client_software_name"], r["decode_status"]) for r in producer] == [
        ("Produce", None, "ok")]
    assert {i["kind"] for i in issues} == {"mid_stream", "resync"}


def test_summary_counts_every_exchange_once() -> None:
    rows, _ = traffic_rows([str(FIXTURES / "clients.pcapng")])
    summary = traffic_summary(rows)
    assert sum(r["exchanges"] for r in summary) == 23
    assert sum(r["latency_us_sum"] for r in summary) == sum(r["latency_us"] for r in rows)


def test_planner_shards_a_big_capture_and_packs_small_ones(tmp_path: Path) -> None:
    paths = expand_inputs([str(FIXTURES)])
    assert [Path(p).name for p in paths] == ["clients.pcapng", "mid_stream.pcapng", "retransmission.pcapng",
                                             "torn_tail.pcapng"]
    assert len(plan_captures(paths, 1 << 30)) == 1
    one = plan_captures([paths[0]], 1 << 30, min_tasks=3)
    assert [t.pieces for t in one] == [((paths[0], k, 3),) for k in range(3)]
    # Every shard walks the whole file, so a big file gets the parallelism asked for, not one shard
    # per target_bytes (which would multiply the walks).
    assert [t.pieces for t in plan_captures([paths[0]], 10_000, min_tasks=2)] == [((paths[0], k, 2),) for k in range(2)]
    assert [t.pieces for t in plan_captures([paths[0]], 10_000)] == [((paths[0], 0, 1),)]
    # several files: shards in proportion to each big file's share of the input; small ones packed
    mixed = plan_captures(paths, 40_000, min_tasks=8)
    assert [t.pieces for t in mixed] == [
        *(((p, k, 3),) for p in paths[:3] for k in range(3)), ((paths[3], 0, 1),)]
    assert len(plan_captures(paths, 40_000, min_tasks=2)) == 4  # no file is worth a second walk


def test_time_buckets_are_round_and_bounded() -> None:
    assert time_bucket_ns(0, 59) == 1
    assert time_bucket_ns(0, 1000) == 20
    w = time_bucket_ns(10**18, 10**18 + 3_600 * 10**9)
    assert 3_600 * 10**9 // w < 60


def test_the_plain_traffic_job_streams_the_rows_it_would_have_listed(tmp_path: Path) -> None:
    """The job writes rows as they are decoded (nothing but the summary and the timestamps kept):
    what it writes, sums and counts is what the listed rows give."""
    import pyarrow.parquet as pq

    from kwire.pipeline.jobs import traffic_job

    paths = expand_inputs([str(FIXTURES)])
    rows, issues = traffic_rows(paths)
    res = traffic_job([str(FIXTURES)], tmp_path)
    written = pq.read_table(tmp_path / "wire_exchanges").to_pylist()
    assert written == rows and pq.read_table(tmp_path / "capture_issues").to_pylist() == issues
    assert res.tables == {"wire_exchanges": len(rows), "capture_issues": len(issues)}
    assert res.summary == traffic_summary(rows)

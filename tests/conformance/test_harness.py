"""Unit tests of the conformance harness itself (no broker, no network)."""

from __future__ import annotations

import io
import struct
import sys
from dataclasses import dataclass

import pytest

from kwire.conformance._fixup_proxy import encode_api_versions_v3, fix_response, produce_acks
from kwire.conformance.clients import ADAPTER_CLASSES, Record, all_adapters, get_adapter
from kwire.conformance.clients._kcat_driver import read_records
from kwire.conformance.clients._proc import JsonLineProcess, run_json_command
from kwire.conformance.clients.base import Ack, ProducerSession
from kwire.conformance.report import format_markdown, format_matrix
from kwire.conformance.scenarios import ClusterControl, Outcome, ScenarioResult
from kwire.conformance.scenarios.acl import denied_as
from kwire.conformance.scenarios.failover import _check_acks, _seq_of, failover, failover_records
from kwire.conformance.scenarios.roundtrip import roundtrip_records
from kwire.errors import ConformanceError


def test_record_wire_form_round_trips_binary_and_nulls() -> None:
    rec = Record(bytes(range(256)), None, (("h", b"\x00\xff"), ("n", None)), partition=1)
    ev = {"event": "record", "offset": 7, **rec.to_wire()}
    back = Record.from_wire(ev)
    assert back.content() == rec.content()
    assert (back.partition, back.offset) == (1, 7)


def test_roundtrip_records_cover_null_and_empty_keys_and_values() -> None:
    recs = roundtrip_records("x")
    assert any(r.key is None for r in recs) and any(r.key == b"" for r in recs)
    assert any(r.value is None for r in recs) and any(r.value == b"" for r in recs)
    text_only = roundtrip_records("x", binary_headers=False)
    assert all(v is not None and v.isascii() for r in text_only for _, v in r.headers)


def test_adapter_names_are_unique_and_lookup_works() -> None:
    names = [cls.name for cls in ADAPTER_CLASSES]
    assert len(names) == len(set(names))
    assert [a.name for a in all_adapters()] == names
    assert get_adapter("kcat").binary_headers is False
    with pytest.raises(ConformanceError):
        get_adapter("nope")


def test_api_versions_v3_answer_is_flexible_layout() -> None:
    body = encode_api_versions_v3(9, {18: (0, 4), 0: (3, 11)})
    corr, err, n = struct.unpack_from(">ihB", body)
    assert (corr, err, n) == (9, 0, 3)  # compact array: 2 entries + 1
    assert struct.unpack_from(">hhhB", body, 7) == (0, 3, 11, 0)
    assert body[-5:] == b"\x00\x00\x00\x00\x00"  # throttle 0, no tagged fields


def _produce_frame(version: int, acks: int) -> bytes:
    head = struct.pack(">hhih", 0, version, 1, 3) + b"cid"
    if version >= 9:
        return head + b"\x00" + b"\x00" + struct.pack(">h", acks)  # no tags, null txn id
    return head + struct.pack(">h", -1) + struct.pack(">h", acks)


@pytest.mark.parametrize("version", [3, 8, 9, 11])
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_acks_is_read_from_every_header_layout(version: int, acks: int) -> None:
    assert produce_acks(_produce_frame(version, acks)) == acks


def test_sync_group_error_with_null_assignment_gets_empty_bytes() -> None:
    frame = struct.pack(">iihi", 5, 0, 27, -1)
    fixed = fix_response(14, 3, frame)
    assert struct.unpack(">iihi", fixed) == (5, 0, 27, 0)
    assert fix_response(14, 0, frame) == frame  # v0 has another layout: untouched
    ok = struct.pack(">iihi", 5, 0, 0, -1)
    assert fix_response(14, 3, ok) == ok  # success responses pass through


def test_kcat_output_parser_reads_binary_payloads_by_length() -> None:
    out = b"0 5 2 3 a=x,b=\nk\nv\x00z\n1 6 -1 -1 \n\n"
    recs = list(read_records(io.BytesIO(out)))
    assert recs[0]["key"] == b"k\n".hex() and recs[0]["value"] == b"v\x00z".hex()
    assert recs[0]["headers"] == [["a", b"x".hex()], ["b", ""]]
    assert recs[1]["key"] is None and recs[1]["value"] is None and recs[1]["offset"] == 6


def test_run_json_command_kills_a_hung_program_at_the_timeout() -> None:
    argv = [sys.executable, "-c", "import sys; sys.stdin.readline(); import time; time.sleep(60)"]
    with pytest.raises(ConformanceError, match="timed out"):
        run_json_command(argv, {"op": "x"}, 0.5, label="hang")


def test_run_json_command_surfaces_error_events() -> None:
    code = "import sys, json; sys.stdin.readline(); print(json.dumps({'event': 'error', 'error': 'E', 'message': 'm'}))"
    with pytest.raises(ConformanceError, match="E: m"):
        run_json_command([sys.executable, "-c", code], {"op": "x"}, 10, label="err")


@pytest.mark.rule("ACL-3, ACL-10")
@pytest.mark.parametrize(("message", "kind"), [
    # What the clients reported when refused (the acl_principal scenario against kwire).
    ("java: TopicAuthorizationException: Not authorized to access topics: [t]", "topic"),
    ('confluent_kafka: KafkaException: KafkaError{code=TOPIC_AUTHORIZATION_FAILED,val=29,'
     'str="Broker: Topic authorization failed"}', "topic"),
    ("kafka_python: TopicAuthorizationFailedError: [Error 29] TopicAuthorizationFailedError: t", "topic"),
    ("kafkajs: KafkaJSNonRetriableError: Not authorized to access topics: [Topic authorization failed]", "topic"),
    ("platformatic: AggregateError: Received response with error while executing API Metadata(v12): "
     "Topic authorization failed.", "topic"),
    ("java: ClusterAuthorizationException: The producer is not authorized to do idempotent sends", "cluster"),
    ("x: KafkaError{code=CLUSTER_AUTHORIZATION_FAILED}", "cluster"),
    ("x: AuthorizationException: not authorized", "authorization"),
    ("kafkats: Error: Topic t not found", None),
    ("java: timed out after 20s", None),
])
def test_acl_scenario_tells_which_authorization_error_a_client_reported(message: str, kind: str | None) -> None:
    """ACL-3, ACL-10: the refused produce counts only as an authorization error (topic or cluster, as
    KafkaApis answers Metadata/Produce and InitProducerId), never as a missing topic or a timeout."""
    assert denied_as(message) == kind


def test_matrix_lists_reasons_as_notes() -> None:
    text = format_matrix(
        [
            ScenarioResult("java", "roundtrip", Outcome.PASS, elapsed_s=1.0),
            ScenarioResult("kcat", "roundtrip", Outcome.SKIP, "not installed"),
        ]
    )
    assert "pass 1.0s" in text and "skip [1]" in text and "[1] kcat / roundtrip: not installed" in text
    assert "1 passed, 0 failed, 1 skipped" in text


def test_failover_records_make_128_byte_kcat_lines_and_carry_their_sequence() -> None:
    recs = failover_records("kafka_python", 7, 3)
    assert [len(r.key or b"") + len(r.value or b"") + 2 for r in recs] == [128, 128, 128]
    assert [_seq_of(r.value, b"failover-kafka_python-") for r in recs] == [7, 8, 9]
    assert _seq_of(b"failover-other-0001-..", b"failover-kafka_python-") is None


def test_failover_ack_check_names_the_first_inconsistency() -> None:
    found = {(0, 0): 0, (0, 1): 1, (1, 0): 2}
    good = [Ack(0, 0, 0), Ack(1, 0, 1), Ack(2, 1, 0)]
    assert _check_acks(good, 3, found) is None
    assert "holds record 0" in (_check_acks([Ack(1, 0, 0), Ack(0, 0, 1), Ack(2, 1, 0)], 3, found) or "")
    assert "acknowledged twice" in (_check_acks([Ack(0, 0, 0), Ack(0, 0, 0), Ack(2, 1, 0)], 3, found) or "")
    assert "2 acknowledgements for 3" in (_check_acks(good[:2], 3, found) or "")
    # kcat: no record identity, but distinct positions of records of this run
    anonymous = [Ack(None, 0, 0), Ack(None, 0, 1), Ack(None, 1, 0)]
    assert _check_acks(anonymous, 3, found) is None
    assert "no record of this run" in (_check_acks([*anonymous[:2], Ack(None, 1, 5)], 3, found) or "")


@dataclass
class _WireOnly:
    name: str = "wire-only"

    def create_topic(self, topic: str, partitions: int) -> None:
        raise AssertionError("a skipped scenario must not create topics")


def test_failover_skips_on_a_wire_only_control_before_starting_the_client() -> None:
    assert not isinstance(_WireOnly(), ClusterControl)
    result = failover(get_adapter("confluent_kafka"), "127.0.0.1:1", _WireOnly())
    assert result.outcome is Outcome.SKIP and "wire-only" in result.reason


def test_producer_session_counts_acks_and_failures() -> None:
    session = ProducerSession("x", JsonLineProcess(["true"]))
    for ev in (
        {"event": "ready"},
        {"event": "produced", "seq": 0, "partition": 1, "offset": 5},
        {"event": "produce_failed", "seq": 1, "message": "boom"},
        {"event": "closed"},
    ):
        session._apply(ev)
    assert session.ready and session.closed
    assert session.acks == [Ack(0, 1, 5)] and session.failures == [(1, "boom")]
    with pytest.raises(ConformanceError, match="E: m"):
        session._apply({"event": "error", "error": "E", "message": "m"})


def test_markdown_matrix_has_provenance_table_notes_and_failover_guarantees() -> None:
    text = format_markdown(
        [
            ScenarioResult("kcat", "failover", Outcome.PASS, elapsed_s=1.0),
            ScenarioResult("kcat", "kip848_group", Outcome.SKIP, "kcat has no KIP-848 consumer"),
        ],
        target="test target",
        command="python -m kwire.conformance.report --kwire --markdown",
    )
    assert "Generated by `python -m kwire.conformance.report --kwire --markdown`" in text
    assert "| scenario | kcat |" in text  # scenarios are rows, clients columns
    assert "| failover | pass (1.0s) |" in text and "| kip848_group | skip [1] |" in text
    assert "1. **kcat / kip848_group**: kcat has no KIP-848 consumer" in text
    assert '| kcat | `{"enable.idempotence": "true"}` | exactly once, in order per partition | yes' in text
    assert "| kafkajs |" not in text  # only the clients that ran


def test_a_known_client_defect_is_named_in_a_failure_and_noticed_when_it_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An adapter's ``known_defects`` entry does not skip its scenario: a failure keeps ``fail`` with
    the defect named before what this run saw; a pass keeps ``pass`` and records that the listed
    defect did not show (the pytest cell, a strict xfail, then fails)."""
    from kwire.conformance import scenarios
    from kwire.conformance.clients.js import KafkajsAdapter

    class Defective(KafkajsAdapter):
        name = "defective"
        known_defects = {"roundtrip": "sends empty keys as NULL"}

        def unavailable_reason(self) -> str | None:
            return None

        def client_version(self) -> str:
            return "1.0"

    outcome = {"now": Outcome.FAIL}

    def fake(adapter: object, bootstrap: str, control: object) -> ScenarioResult:
        if outcome["now"] is Outcome.FAIL:
            return ScenarioResult.failed("defective", "roundtrip", "key b'' came back NULL")
        return ScenarioResult.passed("defective", "roundtrip")

    monkeypatch.setitem(scenarios.SCENARIOS, "roundtrip", fake)
    failed = scenarios.run_scenario("roundtrip", Defective(), "127.0.0.1:1", _WireOnly())
    assert failed.outcome is Outcome.FAIL
    assert failed.reason == "known defective defect: sends empty keys as NULL (this run: key b'' came back NULL)"
    outcome["now"] = Outcome.PASS
    passed = scenarios.run_scenario("roundtrip", Defective(), "127.0.0.1:1", _WireOnly())
    assert passed.outcome is Outcome.PASS
    assert passed.details["known_defect_not_seen"] == "sends empty keys as NULL"
    # Another scenario of the same client is untouched.
    monkeypatch.setitem(scenarios.SCENARIOS, "consumer_group", fake)
    outcome["now"] = Outcome.FAIL
    other = scenarios.run_scenario("consumer_group", Defective(), "127.0.0.1:1", _WireOnly())
    assert other.reason == "key b'' came back NULL"

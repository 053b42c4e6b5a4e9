"""kwire against kio and kafka-python: same values, same bytes, both ways.

For every (peer, api, version, kind) that both sides implement, Hypothesis draws kwire values
(``kwire.fuzz.strategies``), maps them into what the peer can represent (``Case.sanitize``,
each rule documented in the adapter), and checks that

* the peer's encoder writes exactly kwire's bytes,
* the peer decodes kwire's bytes to the same values (and, where the peer keeps them, the same
  unknown tagged fields),
* kwire decodes the peer's bytes to the same values.

A pair whose schemas differ at that version is skipped with the differences as the reason.
"""

from __future__ import annotations

import dataclasses

import pytest
from _peer_common import Case, at_defaults, lengthen, strip_unknown_tags
from _peer_kafka_python import build_plan as kp_build_plan
from _peer_kafka_python import kafka_python_cases
from _peer_kio import build_plan as kio_build_plan
from _peer_kio import kio_cases

from kwire.fuzz.strategies import message_strategy
from kwire.protocol._message import Message
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.share_fetch import ShareFetchRequest
from tests.hypothesis_support import run_examples

pytestmark = pytest.mark.differential

CASES: list[Case] = kio_cases() + kafka_python_cases()
EXAMPLES = 8
LONG_EXAMPLES = 2
DEFAULT_EXAMPLES = 2


def _param(c: Case) -> object:
    marks = [pytest.mark.skip(reason=c.skip_reason)] if c.skip_reason else []
    return pytest.param(c, id=c.id, marks=marks)


def _first_difference(ours: bytes, theirs: bytes) -> str:
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), min(len(ours), len(theirs)))
    lo = max(0, at - 8)
    return (f"first difference at byte {at} (kwire {len(ours)} bytes, peer {len(theirs)}): "
            f"kwire …{ours[lo:at + 8].hex()}… peer …{theirs[lo:at + 8].hex()}…")


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_same_bytes_and_values_as_peer(case: Case) -> None:
    assert case.sanitize is not None
    sanitize = case.sanitize
    run_examples(lambda value: _check(case, sanitize(value)), message_strategy(case.kwire_cls, case.version),
                 max_examples=EXAMPLES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_long_strings_bytes_and_arrays_match_peer(case: Case) -> None:
    """Lengths and counts past 127 (two-byte compact varints), which the drawn values never reach."""
    assert case.sanitize is not None
    sanitize = case.sanitize
    run_examples(lambda value: _check(case, sanitize(lengthen(value, case.version))),
                 message_strategy(case.kwire_cls, case.version), max_examples=LONG_EXAMPLES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_fields_at_defaults_match_peer(case: Case) -> None:
    """Scalars at their defaults (arrays kept): tagged fields at default stay unwritten, at any depth."""
    assert case.sanitize is not None
    sanitize = case.sanitize
    run_examples(lambda value: _check(case, sanitize(at_defaults(value, case.version))),
                 message_strategy(case.kwire_cls, case.version), max_examples=DEFAULT_EXAMPLES)


def _check(case: Case, value: Message) -> None:
    assert case.encode is not None and case.decode is not None
    v = case.version
    raw = value.encode(v)
    if case.keeps_unknown_tags:
        assert case.decode(raw) == value, "peer decodes kwire's bytes (with unknown tags) to other values"
        value = strip_unknown_tags(value, v)
        raw = value.encode(v)
    theirs = case.encode(value)
    assert theirs == raw, _first_difference(raw, theirs)
    assert case.decode(raw) == value, "peer decodes kwire's bytes to other values"
    assert case.kwire_cls.decode(theirs, v) == value, "kwire decodes the peer's bytes to other values"


def test_matrix_covers_both_peers_and_the_share_rpcs() -> None:
    runnable = {c.id for c in CASES if c.skip_reason is None}
    kio = [c for c in CASES if c.peer == "kio"]
    kafka_python = [c for c in CASES if c.peer == "kafka-python"]
    assert len(kio) >= 600 and len(kafka_python) >= 470
    for name in ("ShareFetchRequest", "ShareFetchResponse", "ShareAcknowledgeRequest", "ShareAcknowledgeResponse"):
        assert {f"kio-{name}-v1", f"kio-{name}-v2"} <= runnable
    assert {f"kafka-python-ProduceRequest-v{v}" for v in range(3, 14)} <= runnable
    assert {f"kafka-python-FetchResponse-v{v}" for v in range(4, 19)} <= runnable
    assert len({c.id for c in CASES}) == len(CASES)


def test_schema_comparison_reports_a_field_kio_lacks() -> None:
    """Pairing kwire's v2 layout with kio's v1 class names the v2-only fields."""
    import kio.schema.share_fetch.v1.request as kio_v1

    problems: list[str] = []
    kio_build_plan(ShareFetchRequest, kio_v1.ShareFetchRequest, 2, "ShareFetchRequest", problems, {})
    assert problems and "ShareAcquireMode" in problems[0] and "IsRenewAck" in problems[0]


def test_schema_comparison_reports_a_type_difference() -> None:
    """A kafka-python field whose type differs from kwire's is named with both types."""
    from kafka.protocol.consumer.fetch import FetchRequest as KpFetch

    fields = list(KpFetch._struct._fields)
    i = next(i for i, f in enumerate(fields) if f._name == "MaxWaitMs")
    changed = dict(fields[i]._json, type="int64")
    fields[i] = type(fields[i])(changed)
    problems: list[str] = []
    kp_build_plan(FetchRequest, tuple(fields), None, 12, "FetchRequest", problems)
    assert problems == ["FetchRequest.MaxWaitMs: kwire type int32, kafka-python type int64"]


def test_unknown_tags_are_stripped_at_every_depth() -> None:
    msg = ShareFetchRequest(
        topics=[ShareFetchRequest.FetchTopic(unknown_tagged_fields=[(9, b"x")])],  # type: ignore[attr-defined]
        unknown_tagged_fields=[(7, b"")],
    )
    clean = strip_unknown_tags(msg, 2)
    assert clean.unknown_tagged_fields is None
    assert clean.topics[0].unknown_tagged_fields is None
    assert dataclasses.replace(msg, unknown_tagged_fields=None, topics=clean.topics) == clean

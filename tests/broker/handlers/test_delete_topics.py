"""DeleteTopics through the core: by name and by id, duplicates, unknown topics, delete.topic.enable."""

from __future__ import annotations

import uuid

import pytest

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_topics import DeleteTopicsRequest
from kwire.protocol.messages.metadata import MetadataRequest
from tests.broker.helpers import CoreClient, make_core

ZERO = uuid.UUID(int=0)


def by_names(*names: str) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(topic_names=list(names), timeout_ms=1000)


def by_states(*states: tuple[str | None, uuid.UUID]) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=n, topic_id=t) for n, t in states],
                               timeout_ms=1000)


@pytest.mark.parametrize("version", [1, 4, 5])
def test_delete_by_name_removes_the_topic_and_unknown_names_are_unknown_topic(version: int) -> None:
    core, _ = make_core()
    core.create_topic("a", 2)
    c = CoreClient(core)
    resp = c.send(by_names("a", "missing"), version)
    got = {r.name: r.error_code for r in resp.responses}
    assert got == {"a": ErrorCode.NONE, "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert "a" not in core.cluster.topics
    if version >= 5:
        assert next(r for r in resp.responses if r.name == "missing").error_message
    meta = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="a")],
                                  allow_auto_topic_creation=False), 12)
    assert meta.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_v6_deletes_by_id_and_answers_with_name_and_id() -> None:
    core, _ = make_core()
    t = core.create_topic("a", 1)
    c = CoreClient(core)
    resp = c.send(by_states((None, t.topic_id), (None, uuid.UUID(int=7))), 6)
    first, second = resp.responses
    assert (first.name, first.topic_id, first.error_code) == ("a", t.topic_id, ErrorCode.NONE)
    assert (second.topic_id, second.error_code) == (uuid.UUID(int=7), ErrorCode.UNKNOWN_TOPIC_ID)
    assert not core.cluster.topics and t.topic_id not in core.cluster.topics_by_id


def test_v6_by_name_reports_the_deleted_topic_id() -> None:
    core, _ = make_core()
    t = core.create_topic("a", 1)
    resp = CoreClient(core).send(by_states(("a", ZERO)), 6)
    assert (resp.responses[0].error_code, resp.responses[0].topic_id) == (ErrorCode.NONE, t.topic_id)


def test_v6_name_and_id_together_or_neither_is_invalid_request() -> None:
    core, _ = make_core()
    t = core.create_topic("a", 1)
    resp = CoreClient(core).send(by_states(("a", t.topic_id), (None, ZERO)), 6)
    assert [r.error_code for r in resp.responses] == [ErrorCode.INVALID_REQUEST] * 2
    assert "a" in core.cluster.topics


def test_duplicate_names_are_invalid_request_and_nothing_is_deleted() -> None:
    core, _ = make_core()
    core.create_topic("a", 1)
    core.create_topic("b", 1)
    resp = CoreClient(core).send(by_names("a", "a", "b"), 5)
    assert [(r.name, r.error_code) for r in resp.responses] == [
        ("a", ErrorCode.INVALID_REQUEST), ("a", ErrorCode.INVALID_REQUEST), ("b", ErrorCode.NONE)]
    assert resp.responses[0].error_message == "Duplicate topic name."
    assert "a" in core.cluster.topics and "b" not in core.cluster.topics


def test_duplicate_ids_are_invalid_request() -> None:
    core, _ = make_core()
    t = core.create_topic("a", 1)
    resp = CoreClient(core).send(by_states((None, t.topic_id), (None, t.topic_id)), 6)
    assert [r.error_code for r in resp.responses] == [ErrorCode.INVALID_REQUEST] * 2
    assert "a" in core.cluster.topics


@pytest.mark.parametrize(("version", "code"), [(2, ErrorCode.INVALID_REQUEST), (3, ErrorCode.TOPIC_DELETION_DISABLED),
                                               (6, ErrorCode.TOPIC_DELETION_DISABLED)])
def test_delete_topic_enable_false_refuses_every_deletion(version: int, code: int) -> None:
    core, _ = make_core(settings={"delete.topic.enable": "false"})
    t = core.create_topic("a", 1)
    req = by_states((None, t.topic_id)) if version >= 6 else by_names("a")
    resp = CoreClient(core).send(req, version)
    assert resp.responses[0].error_code == code
    assert "a" in core.cluster.topics


def test_a_deleted_topic_can_be_created_again_with_a_new_id() -> None:
    core, _ = make_core()
    old = core.create_topic("a", 1)
    CoreClient(core).send(by_names("a"), 4)
    new = core.create_topic("a", 3)
    assert new.topic_id != old.topic_id and len(new.partitions) == 3


@pytest.mark.parametrize("version", [1, 4])
def test_a_null_among_the_topic_names_closes_the_connection_and_deletes_nothing(version: int) -> None:
    """Kafka's parser refuses a null array element before acting: nothing is deleted, the
    connection closes, and the broker keeps serving (it used to delete ``victim`` first)."""
    from kwire.protocol import encode_request

    core, _ = make_core()
    core.create_topic("victim", 1)
    raw = encode_request(by_names("victim", "kwire-null-probe"), version, correlation_id=7, client_id="t",
                         size_prefix=False)
    planted = b"\x11kwire-null-probe" if version >= 4 else b"\x00\x10kwire-null-probe"
    bad = raw.replace(planted, b"\x00" if version >= 4 else b"\xff\xff")
    assert bad != raw
    c = CoreClient(core)
    out = core.handle(c.conn, bad)
    assert out.kind == "close" and "non-nullable" in out.reason
    assert "victim" in core.cluster.topics
    other = CoreClient(core)
    assert other.send(MetadataRequest(topics=None), 12).topics[0].name == "victim"

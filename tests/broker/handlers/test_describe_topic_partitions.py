"""DescribeTopicPartitions (KIP-966) through the core: pagination by cursor, errors, replicas.

Relied on (Apache Kafka, read through the search tools): ``DescribeTopicPartitionsRequestHandler``
(all topics for an empty list, name order from the cursor topic, cursor checks, the limit
clamped to [1, max.request.partition.size.limit]) and ``KRaftMetadataCache.
getTopicMetadataForDescribeTopicResponse`` (NextCursor at a cut topic's next partition or the next
topic's partition 0; unknown topics answered only when named).
"""

from __future__ import annotations

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_topic_partitions import DescribeTopicPartitionsRequest as Req
from tests.broker.helpers import CoreClient, make_core


def _send(c: CoreClient, topics: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> object:
    return c.send(Req(topics=[Req.TopicRequest(name=t) for t in topics], response_partition_limit=limit,
                      cursor=None if cursor is None else Req.Cursor(topic_name=cursor[0], partition_index=cursor[1])),
                  0)


def _shape(resp: object) -> tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]:
    topics = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in resp.topics]  # type: ignore[attr-defined]
    nc = resp.next_cursor  # type: ignore[attr-defined]
    return topics, None if nc is None else (nc.topic_name, nc.partition_index)


def _client() -> CoreClient:
    core, _ = make_core(brokers=3)
    core.create_topic("b", 3, replication_factor=2)
    core.create_topic("a", 2, replication_factor=1)
    core.create_topic("c", 1, replication_factor=3)
    return CoreClient(core)


def test_all_topics_in_name_order_with_replicas_and_leaders() -> None:
    c = _client()
    resp = _send(c, [])
    assert _shape(resp) == ([("a", 0, [0, 1]), ("b", 0, [0, 1, 2]), ("c", 0, [0])], None)
    core = c.core
    for t in resp.topics:  # type: ignore[attr-defined]
        topic = core.cluster.topics[t.name]
        assert t.topic_id == topic.topic_id
        for p in t.partitions:
            kp = topic.partitions[p.partition_index]
            assert (p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.offline_replicas,
                    p.eligible_leader_replicas) == (kp.leader_id, kp.leader_epoch, kp.replicas, kp.replicas, [], [])


def test_the_partition_limit_cuts_with_a_cursor_and_the_cursor_resumes() -> None:
    c = _client()
    assert _shape(_send(c, [], limit=3)) == ([("a", 0, [0, 1]), ("b", 0, [0])], ("b", 1))
    assert _shape(_send(c, [], limit=3, cursor=("b", 1))) == ([("b", 0, [1, 2]), ("c", 0, [0])], None)
    # A limit reached exactly at a topic's end points at the next topic's first partition.
    assert _shape(_send(c, [], limit=2)) == ([("a", 0, [0, 1])], ("b", 0))
    # The limit is at least 1.
    assert _shape(_send(c, ["a"], limit=0)) == ([("a", 0, [0])], ("a", 1))


def test_named_topics_unknown_and_illegal_names_get_errors() -> None:
    c = _client()
    topics, cursor = _shape(_send(c, ["zz", "a", "bad name!"]))
    assert topics == [("a", 0, [0, 1]), ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION, []),
                      ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    assert cursor is None


def test_a_cursor_topic_missing_from_the_list_or_a_negative_partition_is_invalid_request() -> None:
    c = _client()
    assert _shape(_send(c, ["a", "c"], cursor=("b", 0)))[0] == [
        ("a", ErrorCode.INVALID_REQUEST, []), ("c", ErrorCode.INVALID_REQUEST, [])]
    assert _shape(_send(c, ["b"], cursor=("b", -1)))[0] == [("b", ErrorCode.INVALID_REQUEST, [])]


def test_a_down_leader_is_answered_as_no_leader_and_offline() -> None:
    c = _client()
    p = c.core.cluster.topics["c"].partitions[0]
    down = next(r for r in p.replicas if r != c.conn.broker_id)
    c.core.cluster.set_node_up(down, False)
    part = _send(c, ["c"]).topics[0].partitions[0]  # type: ignore[attr-defined]
    assert part.offline_replicas == [down] and down not in part.isr_nodes and part.replica_nodes == p.replicas

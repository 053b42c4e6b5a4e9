"""WriteTxnMarkers sent by a client: answered as a Kafka broker without an authorizer answers it
(every principal has CLUSTER_ACTION then): each marker goes through the leader's checks (TX-19)
and the partition log's one append path; what the checks refuse changes nothing."""

from __future__ import annotations

import pytest

from kwire.broker.core.broker_core import BrokerCore
from kwire.broker.core.log import AppendOrigin
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.messages.write_txn_markers import WriteTxnMarkersRequest
from kwire.protocol.registry import ApiKey
from tests.broker.helpers import CoreClient, batch, make_core

M = WriteTxnMarkersRequest


def markers(pid: int, epoch: int, commit: bool, parts: dict[str, list[int]], coordinator_epoch: int = 0,
            tv: int = 0) -> WriteTxnMarkersRequest:
    return M(markers=[M.WritableTxnMarker(producer_id=pid, producer_epoch=epoch, transaction_result=commit,
                                          topics=[M.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                                                  for t, ps in parts.items()],
                                          coordinator_epoch=coordinator_epoch, transaction_version=tv)])


def codes(resp) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for m in resp.markers for t in m.topics for p in t.partitions}


def open_txn(core: BrokerCore, pid: int = 7, epoch: int = 3, seq: int = 0) -> None:
    """A transactional batch at the leader, as one whose producer's coordinator lives elsewhere."""
    p = core.cluster.topics["t"].partitions[0]
    records = batch([b"v"], producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    p.log.append(bytearray(records), AppendOrigin.CLIENT, now_ms=core.clock.now_ms(), leader_epoch=p.leader_epoch)


def test_write_txn_markers_is_advertised_as_a_broker_does() -> None:
    core, _ = make_core()
    got = {k.api_key: (k.min_version, k.max_version) for k in CoreClient(core).send(ApiVersionsRequest(), 3).api_keys}
    assert got[ApiKey.WRITE_TXN_MARKERS] == (1, 2)


@pytest.mark.rule("TX-18, TX-20")
def test_a_client_marker_ends_the_open_transaction_at_the_leader() -> None:
    """TX-18: a COMMIT marker for the producer's open transaction is one control batch; the
    partition's LSO moves past it (TX-20)."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    open_txn(core)
    log = core.cluster.topics["t"].partitions[0].log
    assert log.last_stable_offset == 0
    resp = c.send(markers(7, 3, True, {"t": [0]}), 1)
    assert codes(resp) == {("t", 0): E.NONE}
    assert (log.last_stable_offset, log.high_watermark) == (2, 2) and log.batches[-1].is_control


@pytest.mark.rule("TX-19")
@pytest.mark.parametrize(("epoch", "coordinator_epoch", "tv", "code"), [
    (2, 0, 0, E.INVALID_PRODUCER_EPOCH),  # older than the producer's epoch
    (3, 0, 2, E.INVALID_PRODUCER_EPOCH),  # TV2: must be above the open transaction's epoch
])
def test_markers_the_leader_refuses_change_nothing(epoch: int, coordinator_epoch: int, tv: int, code: int) -> None:
    """TX-19: a stale marker is refused per partition and the log and its LSO stay as they were."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    open_txn(core)
    log = core.cluster.topics["t"].partitions[0].log
    resp = c.send(markers(7, epoch, False, {"t": [0]}, coordinator_epoch, tv), 2)
    assert codes(resp) == {("t", 0): code}
    assert (log.last_stable_offset, log.high_watermark, len(log.batches)) == (0, 1, 1)


@pytest.mark.rule("TX-19")
def test_an_older_coordinator_epoch_is_fenced() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    open_txn(core)
    assert codes(c.send(markers(7, 3, True, {"t": [0]}, coordinator_epoch=5), 1)) == {("t", 0): E.NONE}
    open_txn(core, seq=1)
    resp = c.send(markers(7, 3, True, {"t": [0]}, coordinator_epoch=4), 1)
    assert codes(resp) == {("t", 0): E.TRANSACTION_COORDINATOR_FENCED}


def test_unknown_partitions_and_other_leaders_get_their_codes() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 2)
    leaders = {p.index: p.leader_id for p in core.cluster.topics["t"].partitions}
    here = min(core.cluster.nodes)
    c = CoreClient(core, here)
    resp = c.send(markers(9, 0, True, {"t": [0, 1, 5], "nope": [0]}), 1)
    got = codes(resp)
    assert got[("t", 5)] == got[("nope", 0)] == E.UNKNOWN_TOPIC_OR_PARTITION
    for i in (0, 1):
        assert got[("t", i)] == (E.NONE if leaders[i] == here else E.NOT_LEADER_OR_FOLLOWER)

"""WriteTxnMarkers — key 27, v1–2 (KIP-98; v2 carries the TransactionVersion, KIP-890).

Behaviour: the request a transaction coordinator sends to partition leaders (TX-18). kwire's own
coordinator writes its markers inside the broker (``LogMarkerWriter``); this handler answers the
API when something else sends it, as a Kafka broker without an authorizer does (WriteTxnMarkers
needs CLUSTER_ACTION, which every principal has when no authorizer is configured): each marker
goes through the partition log's one append path with the leader's checks (TX-19: an older
producer epoch → INVALID_PRODUCER_EPOCH, a TV2 marker at the open transaction's epoch →
INVALID_PRODUCER_EPOCH, an older coordinator epoch → TRANSACTION_COORDINATOR_FENCED); an unknown
partition → UNKNOWN_TOPIC_OR_PARTITION, one this broker does not lead → NOT_LEADER_OR_FOLLOWER,
an offline log → KAFKA_STORAGE_ERROR. A marker with producer id -1 or epoch -1 that names a
partition the broker has fails the whole request with UNKNOWN_SERVER_ERROR on every partition
(Kafka's marker builder refuses it); any other producer id below -1 is written as given, a
control batch no producer state tracks (``hasProducerId`` is false), as Kafka writes it. A marker for a ``__consumer_offsets`` partition completes
the producer's staged offsets of the groups on that partition (the group coordinator's
``completeTransaction``).
Version notes: v0 was removed upstream; TransactionVersion (v2) decides the TV2 epoch rule.
Deviations: none; with no ACLs in kwire, there is no CLUSTER_AUTHORIZATION_FAILED case.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kwire.broker.core.txn_coordinator import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    OFFSETS_TOPIC,
    offsets_partition_for,
    txn_coordinator,
)
from kwire.broker.handlers._common import leader_error
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequest_WritableTxnMarker,
    WriteTxnMarkersResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.WRITE_TXN_MARKERS
VERSIONS = (1, 2)

R = WriteTxnMarkersResponse
log = logging.getLogger("kwire.broker")


def _offsets_marker(ctx: RequestContext, index: int, producer_id: int, commit: bool) -> int:
    store = ctx.core.subsystems.offsets
    coord = txn_coordinator(ctx.core)
    partitions = coord.settings().offsets_topic_partitions if coord is not None else 50
    if not 0 <= index < partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    for group in store.pending_groups():
        if offsets_partition_for(group, partitions) == index and producer_id in store.pending_producers(group):
            store.complete(group, producer_id, commit)
    return ErrorCode.NONE


def _one(ctx: RequestContext, marker: WriteTxnMarkersRequest_WritableTxnMarker, topic: str, index: int) -> int:
    if topic == OFFSETS_TOPIC:
        return _offsets_marker(ctx, index, marker.producer_id, marker.transaction_result)
    t = ctx.core.cluster.topics.get(topic)
    p = t.partitions[index] if t is not None and 0 <= index < len(t.partitions) else None
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    code = leader_error(ctx, p)
    if code:
        return code
    tv = marker.transaction_version if ctx.api_version >= 2 else 0
    try:
        p.log.append_marker(marker.producer_id, marker.producer_epoch, marker.transaction_result,
                            coordinator_epoch=marker.coordinator_epoch, now_ms=ctx.core.clock.now_ms(),
                            leader_epoch=p.leader_epoch, config=ctx.core.log_config(topic), transaction_version=tv)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE  # the log's append listeners wake waiting fetches


def _exists(ctx: RequestContext, topic: str, index: int) -> bool:
    if topic == OFFSETS_TOPIC:
        coord = txn_coordinator(ctx.core)
        return 0 <= index < (coord.settings().offsets_topic_partitions if coord is not None else 50)
    t = ctx.core.cluster.topics.get(topic)
    return t is not None and 0 <= index < len(t.partitions)


def handle(ctx: RequestContext, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    markers = []
    for m in req.markers:
        if (m.producer_id == NO_PRODUCER_ID or m.producer_epoch == NO_PRODUCER_EPOCH) and any(
                _exists(ctx, t.name, i) for t in m.topics for i in t.partition_indexes):
            # KafkaApis builds the marker batch (MemoryRecords.withEndTransactionMarker) for the
            # partitions it has; MemoryRecordsBuilder refuses producer id -1 or epoch -1 with an
            # IllegalArgumentException, and the request fails whole: every partition of every
            # marker UNKNOWN_SERVER_ERROR (WriteTxnMarkersRequest.getErrorResponse). Markers before
            # this one stay written.
            log.warning("WriteTxnMarkers: a marker with producer id %d epoch %d cannot be written; "
                        "answering UNKNOWN_SERVER_ERROR", m.producer_id, m.producer_epoch)
            return error_response(ctx, req, ErrorCode.UNKNOWN_SERVER_ERROR)
        topics = [R.WritableTxnMarkerTopicResult(name=t.name, partitions=[
            R.WritableTxnMarkerPartitionResult(partition_index=i, error_code=_one(ctx, m, t.name, i))
            for i in t.partition_indexes]) for t in m.topics]
        markers.append(R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=topics))
    return WriteTxnMarkersResponse(markers=markers)


def error_response(ctx: RequestContext, req: WriteTxnMarkersRequest, code: int) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(markers=[R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
        R.WritableTxnMarkerTopicResult(name=t.name, partitions=[
            R.WritableTxnMarkerPartitionResult(partition_index=i, error_code=code) for i in t.partition_indexes])
        for t in m.topics]) for m in req.markers])

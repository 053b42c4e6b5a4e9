"""Write the golden frames in ``fixtures/frames/`` without using kwire's encoder.

Every ``<case>.bin`` comes from somewhere other than kwire:

* ``hand``: assembled here field by field from ``schemas/message/*.json`` (``Layout`` below),
  with the annotated layout saved in the sidecar so a reviewer can check each field against
  the spec; then compared with kio's writer, which must produce the same bytes.
* ``kafka-python``: ``ApiMessage.encode`` of kafka-python 3.0.12 (whole frames:
  ``with_header`` + ``encode(header=True, framed=True)``); then compared with kio's writer
  where kio has that version.
* ``kio``: ``kio.serial.entity_writer`` of kio 0.6.5 (the messages kafka-python lacks).

Each value is written here in the JSON form (spec field names). kwire's ``from_json`` /
``to_json`` only fill in the fields a case leaves at their defaults, so the sidecar holds
exactly what ``to_json(version)`` prints; the tool checks that every value it was given
survives that unchanged. Record batches inside Produce/Fetch/ShareFetch are built by
kafka-python's ``DefaultRecordBatchBuilder``.

Usage: ``python tools/make_frame_fixtures.py`` (rewrites fixtures/frames/) or ``--check``
(exit 1 if a file on disk differs from what would be written).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "fixtures" / "frames"
# The peer adapters of the differential tests turn a value into kio / kafka-python objects.
sys.path.insert(0, str(ROOT / "tests" / "protocol" / "differential"))

from _peer_common import Case  # noqa: E402
from _peer_kafka_python import kafka_python_cases  # noqa: E402
from _peer_kio import kio_cases  # noqa: E402

from kwire.protocol.registry import api_info, request_header_version, response_header_version  # noqa: E402

JSON = dict[str, Any]

# ---------------------------------------------------------------------------------------------
# Hand assembly


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class Layout:
    """Bytes assembled field by field; each row says offset, bytes, spec path and meaning."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.rows: list[str] = []

    def put(self, path: str, data: bytes, what: str) -> None:
        shown = data.hex(" ") if len(data) <= 16 else f"{data[:12].hex(' ')} … ({len(data)} bytes)"
        self.rows.append(f"{len(self.buf):04x}  {shown:<50} {path}: {what}")
        self.buf += data

    def int8(self, path: str, v: int) -> None:
        self.put(path, struct.pack(">b", v), f"int8 {v}")

    def int16(self, path: str, v: int) -> None:
        self.put(path, struct.pack(">h", v), f"int16 {v}")

    def int32(self, path: str, v: int) -> None:
        self.put(path, struct.pack(">i", v), f"int32 {v}")

    def int64(self, path: str, v: int) -> None:
        self.put(path, struct.pack(">q", v), f"int64 {v}")

    def boolean(self, path: str, v: bool) -> None:
        self.put(path, b"\x01" if v else b"\x00", f"bool {str(v).lower()}")

    def uuid(self, path: str, v: str) -> None:
        self.put(path, uuid.UUID(v).bytes, f"uuid {v}")

    def compact_string(self, path: str, v: str | None) -> None:
        if v is None:
            self.put(path, _uvarint(0), "compact nullable string: null (length+1 = 0)")
            return
        data = v.encode()
        self.put(path, _uvarint(len(data) + 1) + data, f"compact string {v!r} (length+1 = {len(data) + 1})")

    def string(self, path: str, v: str | None) -> None:
        if v is None:
            self.put(path, struct.pack(">h", -1), "nullable string: null (int16 length -1)")
            return
        data = v.encode()
        self.put(path, struct.pack(">h", len(data)) + data, f"string {v!r} (int16 length {len(data)})")

    def compact_records(self, path: str, hexdata: str) -> None:
        data = bytes.fromhex(hexdata)
        self.put(path, _uvarint(len(data) + 1), f"compact records length+1 = {len(data) + 1}")
        if data:
            self.put(path, data, f"{len(data)} bytes of record batch")

    def compact_array(self, path: str, items: list[Any], each: Callable[[str, Any], None]) -> None:
        self.put(path, _uvarint(len(items) + 1), f"compact array, {len(items)} elements (N+1 = {len(items) + 1})")
        for i, item in enumerate(items):
            each(f"{path}[{i}]", item)

    def no_tags(self, path: str) -> None:
        self.put(f"{path}_tagged_fields" if path.endswith(".") else f"{path}._tagged_fields", b"\x00",
                 "tagged fields: count 0")

    def hex(self) -> bytes:
        return bytes(self.buf)


def _ack_batches(L: Layout, path: str, batches: list[JSON]) -> None:
    def batch(p: str, b: JSON) -> None:
        L.int64(f"{p}.FirstOffset", b["FirstOffset"])
        L.int64(f"{p}.LastOffset", b["LastOffset"])
        L.compact_array(f"{p}.AcknowledgeTypes", b["AcknowledgeTypes"],
                        lambda q, t: L.int8(q, t))  # 0 gap, 1 accept, 2 release, 3 reject, 4 renew
        L.no_tags(p)

    L.compact_array(path, batches, batch)


def _node_endpoints(L: Layout, path: str, nodes: list[JSON]) -> None:
    def node(p: str, n: JSON) -> None:
        L.int32(f"{p}.NodeId", n["NodeId"])
        L.compact_string(f"{p}.Host", n["Host"])
        L.int32(f"{p}.Port", n["Port"])
        L.compact_string(f"{p}.Rack", n["Rack"])
        L.no_tags(p)

    L.compact_array(path, nodes, node)


def _leader(L: Layout, path: str, leader: JSON) -> None:
    L.int32(f"{path}.LeaderId", leader["LeaderId"])
    L.int32(f"{path}.LeaderEpoch", leader["LeaderEpoch"])
    L.no_tags(path)


def hand_share_fetch_request(v: int, m: JSON) -> Layout:
    """ShareFetchRequest.json, versions 1-2, flexible 0+ (so every string/array is compact)."""
    L = Layout()
    L.compact_string("GroupId", m["GroupId"])
    L.compact_string("MemberId", m["MemberId"])
    L.int32("ShareSessionEpoch", m["ShareSessionEpoch"])
    L.int32("MaxWaitMs", m["MaxWaitMs"])
    L.int32("MinBytes", m["MinBytes"])
    L.int32("MaxBytes", m["MaxBytes"])
    L.int32("MaxRecords", m["MaxRecords"])  # 1+
    L.int32("BatchSize", m["BatchSize"])  # 1+
    if v >= 2:
        L.int8("ShareAcquireMode", m["ShareAcquireMode"])  # 2+: 0 batch_optimized, 1 record_limit
        L.boolean("IsRenewAck", m["IsRenewAck"])  # 2+

    def partition(p: str, part: JSON) -> None:
        L.int32(f"{p}.PartitionIndex", part["PartitionIndex"])  # PartitionMaxBytes is v0 only
        _ack_batches(L, f"{p}.AcknowledgementBatches", part["AcknowledgementBatches"])
        L.no_tags(p)

    def topic(p: str, t: JSON) -> None:
        L.uuid(f"{p}.TopicId", t["TopicId"])
        L.compact_array(f"{p}.Partitions", t["Partitions"], partition)
        L.no_tags(p)

    def forgotten(p: str, t: JSON) -> None:
        L.uuid(f"{p}.TopicId", t["TopicId"])
        L.compact_array(f"{p}.Partitions", t["Partitions"], lambda q, i: L.int32(q, i))
        L.no_tags(p)

    L.compact_array("Topics", m["Topics"], topic)
    L.compact_array("ForgottenTopicsData", m["ForgottenTopicsData"], forgotten)
    L.put("_tagged_fields", b"\x00", "tagged fields: count 0")
    return L


def hand_share_fetch_response(v: int, m: JSON) -> Layout:
    """ShareFetchResponse.json, versions 1-2 (the same layout: v2 only added the RENEW type)."""
    L = Layout()
    L.int32("ThrottleTimeMs", m["ThrottleTimeMs"])
    L.int16("ErrorCode", m["ErrorCode"])
    L.compact_string("ErrorMessage", m["ErrorMessage"])
    L.int32("AcquisitionLockTimeoutMs", m["AcquisitionLockTimeoutMs"])  # 1+

    def acquired(p: str, a: JSON) -> None:
        L.int64(f"{p}.FirstOffset", a["FirstOffset"])
        L.int64(f"{p}.LastOffset", a["LastOffset"])
        L.int16(f"{p}.DeliveryCount", a["DeliveryCount"])
        L.no_tags(p)

    def partition(p: str, d: JSON) -> None:
        L.int32(f"{p}.PartitionIndex", d["PartitionIndex"])
        L.int16(f"{p}.ErrorCode", d["ErrorCode"])
        L.compact_string(f"{p}.ErrorMessage", d["ErrorMessage"])
        L.int16(f"{p}.AcknowledgeErrorCode", d["AcknowledgeErrorCode"])
        L.compact_string(f"{p}.AcknowledgeErrorMessage", d["AcknowledgeErrorMessage"])
        _leader(L, f"{p}.CurrentLeader", d["CurrentLeader"])
        L.compact_records(f"{p}.Records", d["Records"])  # nullable only in v0
        L.compact_array(f"{p}.AcquiredRecords", d["AcquiredRecords"], acquired)
        L.no_tags(p)

    def topic(p: str, t: JSON) -> None:
        L.uuid(f"{p}.TopicId", t["TopicId"])
        L.compact_array(f"{p}.Partitions", t["Partitions"], partition)
        L.no_tags(p)

    L.compact_array("Responses", m["Responses"], topic)
    _node_endpoints(L, "NodeEndpoints", m["NodeEndpoints"])
    L.put("_tagged_fields", b"\x00", "tagged fields: count 0")
    return L


def hand_share_acknowledge_request(v: int, m: JSON) -> Layout:
    """ShareAcknowledgeRequest.json, versions 1-2."""
    L = Layout()
    L.compact_string("GroupId", m["GroupId"])
    L.compact_string("MemberId", m["MemberId"])
    L.int32("ShareSessionEpoch", m["ShareSessionEpoch"])
    if v >= 2:
        L.boolean("IsRenewAck", m["IsRenewAck"])  # 2+

    def partition(p: str, part: JSON) -> None:
        L.int32(f"{p}.PartitionIndex", part["PartitionIndex"])
        _ack_batches(L, f"{p}.AcknowledgementBatches", part["AcknowledgementBatches"])
        L.no_tags(p)

    def topic(p: str, t: JSON) -> None:
        L.uuid(f"{p}.TopicId", t["TopicId"])
        L.compact_array(f"{p}.Partitions", t["Partitions"], partition)
        L.no_tags(p)

    L.compact_array("Topics", m["Topics"], topic)
    L.put("_tagged_fields", b"\x00", "tagged fields: count 0")
    return L


def hand_share_acknowledge_response(v: int, m: JSON) -> Layout:
    """ShareAcknowledgeResponse.json, versions 1-2."""
    L = Layout()
    L.int32("ThrottleTimeMs", m["ThrottleTimeMs"])
    L.int16("ErrorCode", m["ErrorCode"])
    L.compact_string("ErrorMessage", m["ErrorMessage"])
    if v >= 2:
        L.int32("AcquisitionLockTimeoutMs", m["AcquisitionLockTimeoutMs"])  # 2+

    def partition(p: str, d: JSON) -> None:
        L.int32(f"{p}.PartitionIndex", d["PartitionIndex"])
        L.int16(f"{p}.ErrorCode", d["ErrorCode"])
        L.compact_string(f"{p}.ErrorMessage", d["ErrorMessage"])
        _leader(L, f"{p}.CurrentLeader", d["CurrentLeader"])
        L.no_tags(p)

    def topic(p: str, t: JSON) -> None:
        L.uuid(f"{p}.TopicId", t["TopicId"])
        L.compact_array(f"{p}.Partitions", t["Partitions"], partition)
        L.no_tags(p)

    L.compact_array("Responses", m["Responses"], topic)
    _node_endpoints(L, "NodeEndpoints", m["NodeEndpoints"])
    L.put("_tagged_fields", b"\x00", "tagged fields: count 0")
    return L


def hand_request_header_v2(api_key: int, version: int, correlation_id: int, client_id: str | None) -> Layout:
    """RequestHeader.json v2: ClientId stays a legacy int16-length string ("flexibleVersions": "none")."""
    L = Layout()
    L.int16("RequestApiKey", api_key)
    L.int16("RequestApiVersion", version)
    L.int32("CorrelationId", correlation_id)
    L.string("ClientId", client_id)
    L.put("_tagged_fields", b"\x00", "tagged fields: count 0")
    return L


HAND: dict[str, Callable[[int, JSON], Layout]] = {
    "ShareFetchRequest": hand_share_fetch_request,
    "ShareFetchResponse": hand_share_fetch_response,
    "ShareAcknowledgeRequest": hand_share_acknowledge_request,
    "ShareAcknowledgeResponse": hand_share_acknowledge_response,
}

# ---------------------------------------------------------------------------------------------
# Values


def record_batch(base_offset: int, values: list[bytes], producer_id: int = -1, transactional: bool = False) -> str:
    """A v2 record batch (uncompressed, fixed timestamps) from kafka-python's builder, as hex."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                  producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                  base_sequence=0 if producer_id >= 0 else -1, batch_size=1 << 20)
    for i, value in enumerate(values):
        b.append(i, timestamp=1_767_225_600_000 + i, key=f"k{i}".encode(), value=value,
                 headers=[("trace", b"t1")] if i == 0 else [])
    raw = bytearray(b.build())
    struct.pack_into(">q", raw, 0, base_offset)  # baseOffset is outside the CRC
    return bytes(raw).hex()


TOPIC_A = "9b3c5f0e-2d4a-4f7e-8a61-0c2d7e9f1a35"
TOPIC_B = "1f0e2d3c-4b5a-4697-8877-665544332211"
MEMBER = "Xq3vYk0pTnS8b2cJ1wRz4g"
BATCH = record_batch(100, [b"hello", b"share"])


@dataclass
class Golden:
    """One fixture: what it holds and which independent writer makes its bytes."""

    module: str
    version: int
    kind: str  # request | response
    case: str
    value: JSON
    source: str  # hand | kafka-python | kio
    note: str = ""
    frame: dict[str, Any] | None = None  # {"correlation_id": int, "client_id": str | None} for whole frames
    extra: dict[str, Any] = field(default_factory=dict)


def _share_goldens() -> list[Golden]:
    out = []
    fetch_v1 = {
        "GroupId": "orders-share", "MemberId": MEMBER, "ShareSessionEpoch": 1, "MaxWaitMs": 500,
        "MinBytes": 1, "MaxBytes": 52_428_800, "MaxRecords": 500, "BatchSize": 500,
        "Topics": [{"TopicId": TOPIC_A, "Partitions": [
            {"PartitionIndex": 0, "AcknowledgementBatches": [
                {"FirstOffset": 90, "LastOffset": 94, "AcknowledgeTypes": [1]},
                {"FirstOffset": 95, "LastOffset": 97, "AcknowledgeTypes": [1, 2, 3]},
                {"FirstOffset": 98, "LastOffset": 98, "AcknowledgeTypes": [0]}]},
            {"PartitionIndex": 3, "AcknowledgementBatches": []}]}],
        "ForgottenTopicsData": [{"TopicId": TOPIC_B, "Partitions": [1, 2]}],
    }
    out.append(Golden("share_fetch", 1, "request", "acks_and_forgotten", fetch_v1, "hand",
                      "accept/release/reject/gap acknowledgements piggybacked on a fetch"))
    out.append(Golden("share_fetch", 2, "request", "record_limit_fetch",
                      dict(fetch_v1, ShareSessionEpoch=4, GroupId=None, ShareAcquireMode=1, IsRenewAck=False),
                      "hand", "ShareAcquireMode=1 (record_limit), null GroupId (sent once per session)"))
    out.append(Golden("share_fetch", 2, "request", "renew", {
        "GroupId": "orders-share", "MemberId": MEMBER, "ShareSessionEpoch": 5, "MaxWaitMs": 0, "MinBytes": 0,
        "MaxBytes": 0, "MaxRecords": 0, "BatchSize": 500, "ShareAcquireMode": 0, "IsRenewAck": True,
        "Topics": [{"TopicId": TOPIC_A, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
            {"FirstOffset": 100, "LastOffset": 101, "AcknowledgeTypes": [4]},
            {"FirstOffset": 102, "LastOffset": 103, "AcknowledgeTypes": [4, 1]}]}]}],
        "ForgottenTopicsData": [],
    }, "hand", "KIP-1222 renew-only fetch: IsRenewAck=true, RENEW (4) acknowledgements, limits all 0 (RN-2)"))
    fetch_resp = {
        "ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "AcquisitionLockTimeoutMs": 30_000,
        "Responses": [{"TopicId": TOPIC_A, "Partitions": [
            {"PartitionIndex": 0, "ErrorCode": 0, "ErrorMessage": None, "AcknowledgeErrorCode": 0,
             "AcknowledgeErrorMessage": None, "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 7},
             "Records": BATCH, "AcquiredRecords": [{"FirstOffset": 100, "LastOffset": 101, "DeliveryCount": 1}]},
            {"PartitionIndex": 3, "ErrorCode": 6, "ErrorMessage": "This server is not the leader for that topic-partition.",
             "AcknowledgeErrorCode": 0, "AcknowledgeErrorMessage": None,
             "CurrentLeader": {"LeaderId": 2, "LeaderEpoch": 8}, "Records": "", "AcquiredRecords": []}]}],
        "NodeEndpoints": [{"NodeId": 2, "Host": "broker-2.kafka.local", "Port": 9092, "Rack": None}],
    }
    out.append(Golden("share_fetch", 1, "response", "acquired_and_not_leader", fetch_resp, "hand",
                      "records with AcquiredRecords, AcquisitionLockTimeoutMs=30000, a NOT_LEADER partition"))
    out.append(Golden("share_fetch", 2, "response", "acquired_and_not_leader",
                      dict(fetch_resp, AcquisitionLockTimeoutMs=15_000), "hand",
                      "as v1 (the v2 layout is unchanged), AcquisitionLockTimeoutMs=15000"))
    out.append(Golden("share_fetch", 2, "response", "renew", {
        "ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "AcquisitionLockTimeoutMs": 15_000,
        "Responses": [{"TopicId": TOPIC_A, "Partitions": [
            {"PartitionIndex": 0, "ErrorCode": 0, "ErrorMessage": None, "AcknowledgeErrorCode": 121,
             "AcknowledgeErrorMessage": "The record state is invalid. The acknowledgement of delivery could not be completed.",
             "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 7}, "Records": "", "AcquiredRecords": []}]}],
        "NodeEndpoints": [],
    }, "hand", "answer to a renew-only fetch (RN-3): empty Records, no AcquiredRecords, INVALID_RECORD_STATE"))
    ack_v1 = {
        "GroupId": "orders-share", "MemberId": MEMBER, "ShareSessionEpoch": 2,
        "Topics": [{"TopicId": TOPIC_A, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
            {"FirstOffset": 100, "LastOffset": 101, "AcknowledgeTypes": [1]},
            {"FirstOffset": 102, "LastOffset": 104, "AcknowledgeTypes": [2, 3, 1]}]}]}],
    }
    out.append(Golden("share_acknowledge", 1, "request", "accept_release_reject", ack_v1, "hand"))
    out.append(Golden("share_acknowledge", 2, "request", "renew", {
        "GroupId": "orders-share", "MemberId": MEMBER, "ShareSessionEpoch": 6, "IsRenewAck": True,
        "Topics": [{"TopicId": TOPIC_A, "Partitions": [
            {"PartitionIndex": 0, "AcknowledgementBatches": [
                {"FirstOffset": 100, "LastOffset": 104, "AcknowledgeTypes": [4]}]},
            {"PartitionIndex": 1, "AcknowledgementBatches": [
                {"FirstOffset": 7, "LastOffset": 9, "AcknowledgeTypes": [4, 1, 4]}]}]}],
    }, "hand", "IsRenewAck=true with whole-batch and per-offset RENEW (4)"))
    ack_resp = {
        "ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None,
        "Responses": [{"TopicId": TOPIC_A, "Partitions": [
            {"PartitionIndex": 0, "ErrorCode": 0, "ErrorMessage": None, "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 7}},
            {"PartitionIndex": 1, "ErrorCode": 121, "ErrorMessage": "records not acquired by this member",
             "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 7}}]}],
        "NodeEndpoints": [{"NodeId": 1, "Host": "broker-1.kafka.local", "Port": 9092, "Rack": "eu-west-1a"}],
    }
    out.append(Golden("share_acknowledge", 1, "response", "one_invalid_record_state", ack_resp, "hand"))
    out.append(Golden("share_acknowledge", 2, "response", "renewed", dict(ack_resp, AcquisitionLockTimeoutMs=15_000),
                      "hand", "AcquisitionLockTimeoutMs reports the renewed lock duration (RN-7)"))
    # A whole ShareFetch v2 request frame: size, RequestHeader v2, body.
    out.append(Golden("share_fetch", 2, "request", "renew_frame", out[2].value, "hand",
                      "the renew case as a whole frame", frame={"correlation_id": 42, "client_id": "consumer-1"}))
    out.append(Golden("share_group_heartbeat", 1, "request", "join", {
        "GroupId": "orders-share", "MemberId": MEMBER, "MemberEpoch": 0, "RackId": "eu-west-1a",
        "SubscribedTopicNames": ["orders", "payments"]}, "kio", "first heartbeat (epoch 0) with subscriptions"))
    out.append(Golden("share_group_heartbeat", 1, "request", "steady", {
        "GroupId": "orders-share", "MemberId": MEMBER, "MemberEpoch": 3, "RackId": None,
        "SubscribedTopicNames": None}, "kio", "null RackId and null SubscribedTopicNames (unchanged)"))
    out.append(Golden("share_group_heartbeat", 1, "response", "assignment", {
        "ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "MemberId": MEMBER, "MemberEpoch": 1,
        "HeartbeatIntervalMs": 5000, "Assignment": {"TopicPartitions": [
            {"TopicId": TOPIC_A, "Partitions": [0, 1, 2]}, {"TopicId": TOPIC_B, "Partitions": []}]}}, "kio"))
    out.append(Golden("share_group_heartbeat", 1, "response", "no_assignment", {
        "ThrottleTimeMs": 10, "ErrorCode": 0, "ErrorMessage": None, "MemberId": None, "MemberEpoch": 3,
        "HeartbeatIntervalMs": 5000, "Assignment": None}, "kio", "null Assignment (nullable struct, KIP-893)"))
    return out


def _produce_goldens() -> list[Golden]:
    out = []
    for v in (3, 9, 13):
        topic: JSON = {"TopicId": TOPIC_A} if v >= 13 else {"Name": "orders"}
        out.append(Golden("produce", v, "request", "two_records", {
            "TransactionalId": "txn-orders" if v == 9 else None, "Acks": -1, "TimeoutMs": 30_000,
            "TopicData": [dict(topic, PartitionData=[
                {"Index": 0, "Records": record_batch(0, [b"hello", b"world"],
                                                     producer_id=4000 if v == 9 else -1, transactional=v == 9)},
                {"Index": 1, "Records": None}])]}, "kafka-python"))
        part: JSON = {"Index": 0, "ErrorCode": 0, "BaseOffset": 1234, "LogAppendTimeMs": -1}
        if v >= 5:
            part["LogStartOffset"] = 0
        if v >= 8:
            part["RecordErrors"] = [{"BatchIndex": 1, "BatchIndexErrorMessage": "CorruptRecord"}]
            part["ErrorMessage"] = None
        resp: JSON = {"Responses": [dict(topic, PartitionResponses=[part])], "ThrottleTimeMs": 0}
        if v >= 10:
            resp["Responses"][0]["PartitionResponses"].append({
                "Index": 1, "ErrorCode": 6, "BaseOffset": -1, "LogAppendTimeMs": -1, "LogStartOffset": -1,
                "RecordErrors": [], "ErrorMessage": "Not leader",
                "CurrentLeader": {"LeaderId": 2, "LeaderEpoch": 11}})
            resp["NodeEndpoints"] = [{"NodeId": 2, "Host": "broker-2.kafka.local", "Port": 9092, "Rack": None}]
        out.append(Golden("produce", v, "response", "ok" if v < 10 else "ok_and_not_leader_with_tags", resp,
                          "kafka-python", "tagged CurrentLeader and NodeEndpoints" if v >= 10 else ""))
    return out


def _fetch_goldens() -> list[Golden]:
    out = []
    for v in (4, 12, 18):
        topic: JSON = {"TopicId": TOPIC_A} if v >= 13 else {"Topic": "orders"}
        part: JSON = {"Partition": 0, "FetchOffset": 100, "PartitionMaxBytes": 1_048_576}
        if v >= 9:
            part["CurrentLeaderEpoch"] = 7
        if v >= 12:
            part["LastFetchedEpoch"] = 6
        if v >= 5:
            part["LogStartOffset"] = -1
        req: JSON = {"MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 52_428_800, "IsolationLevel": 1,
                     "Topics": [dict(topic, Partitions=[part])]}
        if v < 15:
            req["ReplicaId"] = -1
        if v >= 7:
            req.update(SessionId=0, SessionEpoch=-1, ForgottenTopicsData=[])
        if v >= 11:
            req["RackId"] = "eu-west-1a"
        if v >= 12:
            req["ClusterId"] = "lkc-golden-cluster"  # tag 0
        if v >= 18:
            req["ReplicaState"] = {"ReplicaId": 3, "ReplicaEpoch": 12}  # tag 1
            part["HighWatermark"] = 5_000  # tag 1 of FetchPartition
        out.append(Golden("fetch", v, "request", "one_partition", req, "kafka-python",
                          "tagged ClusterId, ReplicaState and partition HighWatermark" if v >= 18 else ""))
        pd: JSON = {"PartitionIndex": 0, "ErrorCode": 0, "HighWatermark": 102, "LastStableOffset": 102,
                    "AbortedTransactions": [{"ProducerId": 4000, "FirstOffset": 90}], "Records": BATCH}
        if v >= 5:
            pd["LogStartOffset"] = 0
        if v >= 11:
            pd["PreferredReadReplica"] = -1
        if v >= 12:
            pd["DivergingEpoch"] = {"Epoch": 5, "EndOffset": 95}  # tag 0
            pd["CurrentLeader"] = {"LeaderId": 1, "LeaderEpoch": 7}  # tag 1
        parts = [pd, {"PartitionIndex": 1, "ErrorCode": 0, "HighWatermark": 0, "LastStableOffset": 0,
                      "AbortedTransactions": None, "Records": None}]
        resp: JSON = {"Responses": [dict(topic, Partitions=parts)]}
        if v >= 7:
            resp.update(ThrottleTimeMs=0, ErrorCode=0, SessionId=1_234_567)
        if v >= 16:
            resp["NodeEndpoints"] = [{"NodeId": 1, "Host": "broker-1.kafka.local", "Port": 9092, "Rack": "eu-west-1a"}]
        out.append(Golden("fetch", v, "response", "records_and_aborted", resp, "kafka-python",
                          "tagged DivergingEpoch, CurrentLeader" if v >= 12 else ""))
    out.append(Golden("fetch", 12, "response", "records_and_aborted_frame", out[3].value, "kafka-python",
                      "v12 response as a whole frame (ResponseHeader v1)", frame={"correlation_id": 7}))
    return out


def _txn_goldens() -> list[Golden]:
    out = []
    for v in (0, 5):
        out.append(Golden("init_producer_id", v, "request", "transactional", {
            "TransactionalId": "txn-orders", "TransactionTimeoutMs": 60_000,
            **({"ProducerId": -1, "ProducerEpoch": -1} if v >= 3 else {})}, "kafka-python"))
        out.append(Golden("init_producer_id", v, "response", "ok", {
            "ThrottleTimeMs": 0, "ErrorCode": 0, "ProducerId": 4000, "ProducerEpoch": 2}, "kafka-python"))
    out.append(Golden("init_producer_id", 5, "request", "idempotent_only", {
        "TransactionalId": None, "TransactionTimeoutMs": 2_147_483_647, "ProducerId": -1, "ProducerEpoch": -1},
        "kafka-python", "null TransactionalId: an idempotent producer"))
    out.append(Golden("add_partitions_to_txn", 3, "request", "two_topics", {
        "V3AndBelowTransactionalId": "txn-orders", "V3AndBelowProducerId": 4000, "V3AndBelowProducerEpoch": 2,
        "V3AndBelowTopics": [{"Name": "orders", "Partitions": [0, 1]}, {"Name": "payments", "Partitions": [3]}]},
        "kafka-python"))
    out.append(Golden("add_partitions_to_txn", 3, "response", "two_topics", {
        "ThrottleTimeMs": 0, "ResultsByTopicV3AndBelow": [
            {"Name": "orders", "ResultsByPartition": [{"PartitionIndex": 0, "PartitionErrorCode": 0},
                                                      {"PartitionIndex": 1, "PartitionErrorCode": 0}]},
            {"Name": "payments", "ResultsByPartition": [{"PartitionIndex": 3, "PartitionErrorCode": 51}]}]},
        "kafka-python"))
    out.append(Golden("add_partitions_to_txn", 5, "request", "batched_verify_only", {
        "Transactions": [
            {"TransactionalId": "txn-orders", "ProducerId": 4000, "ProducerEpoch": 2, "VerifyOnly": True,
             "Topics": [{"Name": "orders", "Partitions": [0]}]},
            {"TransactionalId": "txn-payments", "ProducerId": 4001, "ProducerEpoch": 0, "VerifyOnly": False,
             "Topics": [{"Name": "payments", "Partitions": [1, 2]}]}]}, "kafka-python",
        "the broker-to-coordinator batched form (v4+)"))
    out.append(Golden("add_partitions_to_txn", 5, "response", "batched", {
        "ThrottleTimeMs": 0, "ErrorCode": 0, "ResultsByTransaction": [
            {"TransactionalId": "txn-orders", "TopicResults": [
                {"Name": "orders", "ResultsByPartition": [{"PartitionIndex": 0, "PartitionErrorCode": 0}]}]},
            {"TransactionalId": "txn-payments", "TopicResults": [
                {"Name": "payments", "ResultsByPartition": [{"PartitionIndex": 1, "PartitionErrorCode": 48},
                                                            {"PartitionIndex": 2, "PartitionErrorCode": 48}]}]}]},
        "kafka-python", "INVALID_TXN_STATE (48) for one transaction"))
    for v in (0, 5):
        out.append(Golden("end_txn", v, "request", "commit", {
            "TransactionalId": "txn-orders", "ProducerId": 4000, "ProducerEpoch": 2, "Committed": True},
            "kafka-python"))
        resp: JSON = {"ThrottleTimeMs": 0, "ErrorCode": 0}
        if v >= 5:
            resp.update(ProducerId=4000, ProducerEpoch=3)  # TV2 (KIP-890) bumps the epoch on EndTxn
        out.append(Golden("end_txn", v, "response", "ok", resp, "kafka-python"))
    for v in (3, 5):
        out.append(Golden("txn_offset_commit", v, "request", "two_partitions", {
            "TransactionalId": "txn-orders", "GroupId": "orders-app", "ProducerId": 4000, "ProducerEpoch": 2,
            "GenerationIdOrMemberEpoch": 5, "MemberId": "consumer-1-9f1c", "GroupInstanceId": None,
            "Topics": [{"Name": "orders", "Partitions": [
                {"PartitionIndex": 0, "CommittedOffset": 102, "CommittedLeaderEpoch": 7, "CommittedMetadata": ""},
                {"PartitionIndex": 1, "CommittedOffset": 55, "CommittedLeaderEpoch": -1,
                 "CommittedMetadata": None}]}]}, "kafka-python"))
        out.append(Golden("txn_offset_commit", v, "response", "ok", {
            "ThrottleTimeMs": 0, "Topics": [{"Name": "orders", "Partitions": [
                {"PartitionIndex": 0, "ErrorCode": 0}, {"PartitionIndex": 1, "ErrorCode": 25}]}]}, "kafka-python"))
    return out


def _api_versions_goldens() -> list[Golden]:
    out = []
    keys = [{"ApiKey": 0, "MinVersion": 3, "MaxVersion": 13}, {"ApiKey": 1, "MinVersion": 4, "MaxVersion": 18},
            {"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}, {"ApiKey": 78, "MinVersion": 1, "MaxVersion": 2},
            {"ApiKey": 79, "MinVersion": 1, "MaxVersion": 2}]
    for v in (0, 3, 4):
        req: JSON = {"ClientSoftwareName": "kwire-golden", "ClientSoftwareVersion": "0.1.0"} if v >= 3 else {}
        out.append(Golden("api_versions", v, "request", "hello", req, "kafka-python"))
        resp: JSON = {"ErrorCode": 0, "ApiKeys": keys}
        if v >= 1:
            resp["ThrottleTimeMs"] = 0
        if v >= 3:
            resp.update(SupportedFeatures=[{"Name": "transaction.version", "MinVersion": 0, "MaxVersion": 2}],
                        FinalizedFeaturesEpoch=17,
                        FinalizedFeatures=[{"Name": "transaction.version", "MaxVersionLevel": 2, "MinVersionLevel": 2}],
                        ZkMigrationReady=False)
        out.append(Golden("api_versions", v, "response", "five_apis", resp, "kafka-python",
                          "tagged SupportedFeatures, FinalizedFeaturesEpoch, FinalizedFeatures" if v >= 3 else ""))
    out.append(Golden("api_versions", 3, "response", "unsupported_version", {
        "ErrorCode": 35, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}], "ThrottleTimeMs": 0},
        "kafka-python", "UNSUPPORTED_VERSION (35), as a broker answers a too-new ApiVersions request"))
    out.append(Golden("api_versions", 0, "response", "unsupported_version_frame", {
        "ErrorCode": 35, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}]}, "kafka-python",
        "What a broker sends to an ApiVersions request of a version it does not know: a v0 body "
        "(KIP-511), which the client must read whatever version it asked for", frame={"correlation_id": 3}))
    out.append(Golden("api_versions", 0, "request", "hello_frame", {}, "kafka-python",
                      "RequestHeader v1 + empty body", frame={"correlation_id": 1, "client_id": "golden"}))
    out.append(Golden("api_versions", 3, "request", "hello_frame", out[2].value, "kafka-python",
                      "RequestHeader v2 (ClientId a legacy string)", frame={"correlation_id": 2, "client_id": "golden"}))
    out.append(Golden("api_versions", 3, "response", "five_apis_frame", out[3].value, "kafka-python",
                      "ApiVersions responses keep ResponseHeader v0 even when the body is flexible (KIP-511)",
                      frame={"correlation_id": 2}))
    return out


def goldens() -> list[Golden]:
    return _share_goldens() + _produce_goldens() + _fetch_goldens() + _txn_goldens() + _api_versions_goldens()


# ---------------------------------------------------------------------------------------------
# Making the bytes


_MODULE_KEYS: dict[str, int] = {}


def _api_key(module: str) -> int:
    if not _MODULE_KEYS:
        from kwire.protocol.registry import all_apis

        _MODULE_KEYS.update({i.module: i.key for i in all_apis()})
    return _MODULE_KEYS[module]


def _subset(given: Any, full: Any, path: str) -> None:
    """Every value the case gave survives kwire's JSON form unchanged."""
    if isinstance(given, dict):
        for k, v in given.items():
            if k not in full:
                raise SystemExit(f"{path}.{k}: not in the JSON form at this version")
            _subset(v, full[k], f"{path}.{k}")
    elif isinstance(given, list):
        if len(given) != len(full):
            raise SystemExit(f"{path}: {len(given)} elements became {len(full)}")
        for i, (a, b) in enumerate(zip(given, full, strict=True)):
            _subset(a, b, f"{path}[{i}]")
    elif given != full:
        raise SystemExit(f"{path}: {given!r} became {full!r}")


def _has_records(v: Any) -> bool:
    if isinstance(v, dict):
        return any((k == "Records" and x) or _has_records(x) for k, x in v.items())
    return isinstance(v, list) and any(_has_records(x) for x in v)


class Peers:
    def __init__(self) -> None:
        self.cases: dict[tuple[str, int, int, str], Case] = {}
        for c in kio_cases() + kafka_python_cases():
            self.cases[(c.peer, c.api_key, c.version, c.kind)] = c

    def encode(self, peer: str, api_key: int, version: int, kind: str, value: Any) -> bytes | None:
        c = self.cases.get((peer, api_key, version, kind))
        if c is None:
            return None
        assert c.encode is not None and c.sanitize is not None and c.skip_reason is None
        if c.sanitize(value) != value:
            raise SystemExit(f"{peer} cannot carry this value exactly: {value!r}")
        return c.encode(value)


def _kafka_python_frame(g: Golden, api_key: int, body: bytes) -> bytes:
    """kafka-python's own header and size prefix around the body it wrote (re-read by kafka-python)."""
    from _peer_kafka_python import _api_classes

    assert g.frame is not None
    kcls = next(k for k in _api_classes() if (int(k.API_KEY), str(k.type)) == (api_key, g.kind))
    # ApiVersionsResponse.decode would re-read a non-zero ErrorCode body as v0 (P2); not needed here.
    obj = kcls.decode(body, version=g.version)
    if g.kind == "request":
        obj.with_header(correlation_id=g.frame["correlation_id"], client_id=g.frame["client_id"])
    else:
        obj.with_header(correlation_id=g.frame["correlation_id"])
    # No version= here: for a response, kafka-python's API_VERSION setter would write
    # request_api_version into the ResponseHeader and fail; the decoded object has it already.
    framed = bytes(obj.encode(header=True, framed=True))
    if not framed.endswith(body):
        raise SystemExit(f"{g.module} v{g.version}: kafka-python's framed body differs from its plain body")
    return framed


def make(g: Golden) -> tuple[bytes, JSON]:
    """The fixture bytes and sidecar for one golden."""
    api_key = _api_key(g.module)
    info = api_info(api_key)
    cls = info.request_class if g.kind == "request" else info.response_class
    obj = cls.from_json(g.value, g.version)
    full = obj.to_json(g.version)
    _subset(g.value, full, cls.__name__)
    layout: list[str] | None = None
    said: list[str] = []
    if g.source == "hand":
        L = HAND[cls.__name__](g.version, full)
        body = L.hex()
        layout = L.rows
        if PEERS.encode("kio", api_key, g.version, g.kind, obj) != body:
            raise SystemExit(f"{g.module} v{g.version} {g.case}: hand layout differs from kio's writer")
        said.append(f"body hand-assembled field by field from schemas/message/{cls.__name__}.json "
                     "(tools/make_frame_fixtures.py; annotated in 'layout')")
        said.append("kio 0.6.5 entity_writer writes the same body bytes")
    else:
        made = PEERS.encode(g.source, api_key, g.version, g.kind, obj)
        assert made is not None, (g.source, g.module, g.version)
        body = made
        said.append("body written by kafka-python 3.0.12 ApiMessage.encode" if g.source == "kafka-python"
                    else "body written by kio 0.6.5 kio.serial.entity_writer")
        other = PEERS.encode("kio", api_key, g.version, g.kind, obj) if g.source == "kafka-python" else None
        if other is not None:
            if other != body:
                raise SystemExit(f"{g.module} v{g.version} {g.case}: kafka-python and kio disagree")
            said.append("kio 0.6.5 entity_writer writes the same body bytes")
    if _has_records(full):
        said.append("the record batches inside (v2, uncompressed) were built by kafka-python's "
                    "DefaultRecordBatchBuilder")
    sidecar: JSON = {"api_key": api_key, "api_version": g.version, "kind": g.kind}
    data = body
    if g.frame is not None:
        if g.kind == "request":
            hv = request_header_version(api_key, g.version)
            header = {"RequestApiKey": api_key, "RequestApiVersion": g.version,
                      "CorrelationId": g.frame["correlation_id"], "ClientId": g.frame["client_id"]}
        else:
            hv = response_header_version(api_key, g.version)
            header = {"CorrelationId": g.frame["correlation_id"]}
        if g.source == "hand":
            assert hv == 2 and layout is not None
            H = hand_request_header_v2(api_key, g.version, g.frame["correlation_id"], g.frame["client_id"])
            payload = H.hex() + body
            data = struct.pack(">i", len(payload)) + payload
            layout = [f"0000  {struct.pack('>i', len(payload)).hex(' '):<50} size: int32 {len(payload)}"] + [
                f"{int(r[:4], 16) + 4:04x}{r[4:]}" for r in H.rows] + [
                f"{int(r[:4], 16) + 4 + len(H.hex()):04x}{r[4:]}" for r in layout]
            said.append("size prefix and RequestHeader v2 hand-assembled per RequestHeader.json")
        else:
            data = _kafka_python_frame(g, api_key, body)
            said.append(f"size prefix and header v{hv} written by kafka-python "
                        "(with_header + encode(header=True, framed=True))")
        sidecar.update(bytes="frame", header_version=hv, header=header)
    else:
        sidecar["bytes"] = "body"
    sidecar["provenance"] = "; ".join(said) + "." + (f" {g.note[0].upper()}{g.note[1:]}." if g.note else "")
    sidecar["value"] = full
    if layout is not None:
        sidecar["layout"] = layout
    return data, sidecar


PEERS: Peers


def main(argv: list[str] | None = None) -> int:
    global PEERS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk instead of writing")
    args = ap.parse_args(argv)
    PEERS = Peers()
    made: dict[Path, tuple[bytes, str]] = {}
    for g in goldens():
        data, sidecar = make(g)
        base = OUT / g.module / f"v{g.version}" / f"{g.kind}_{g.case}"
        if base in made:
            raise SystemExit(f"duplicate case {base}")
        made[base] = data, json.dumps(sidecar, indent=1, ensure_ascii=False) + "\n"
    seen = set(made)
    stale = []
    for base, (data, text) in made.items():
        bin_path, json_path = base.with_suffix(".bin"), base.with_suffix(".json")
        if args.check:
            if not bin_path.exists() or bin_path.read_bytes() != data or json_path.read_text() != text:
                stale.append(str(base.relative_to(ROOT)))
            continue
        base.parent.mkdir(parents=True, exist_ok=True)
        bin_path.write_bytes(data)
        json_path.write_text(text)
    if args.check:
        on_disk = {p.with_suffix("") for p in OUT.rglob("*.bin")}
        stale += [f"{p.relative_to(ROOT)} (not made by this tool)" for p in sorted(on_disk - seen)]
        for s in stale:
            print("stale:", s)
        return 1 if stale else 0
    print(f"wrote {len(seen)} fixtures under {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

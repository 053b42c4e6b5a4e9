"""Stateful request sequences for the fuzzer: a KIP-848 member's heartbeats, a share consumer's
heartbeat/fetch/acknowledge/close cycle and a transactional producer's flow (TV1 and TV2), with
epochs, offsets, acknowledgement ranges and types drawn at random around the valid ones, so the
coordinators' state machines are walked deep instead of being refused at their first check.

Each generator yields (label, request message, version); the fuzz loop encodes, may mutate and
sends them in order on its connection. State the client chooses (member ids, session epochs) is
tracked here; what only the broker knows (a transactional producer's id and epoch) is read from
the broker under test through ``lookup`` (the fuzzer runs it in-process).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["SEQUENCES", "share_consumer", "consumer_member", "transactional_producer"]

Step = tuple[str, Any, int]
TOPIC = "fuzz"


def _near(rng: random.Random, value: int, bits: int = 32) -> int:
    """Usually the right value, sometimes one off, now and then something wild (within ``bits``)."""
    r = rng.random()
    top = 2 ** (bits - 1)
    if r < 0.75:
        return value
    if r < 0.95:
        return max(-top, min(top - 1, value + rng.choice((-1, 1, 2))))
    return rng.choice((-2, -1, 0, top - 1, -top))


def consumer_member(rng: random.Random, topic_id: uuid.UUID, lookup: Callable[[str], Any]) -> Iterator[Step]:
    from kwire.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as CGHB

    member, group = str(uuid.UUID(int=rng.getrandbits(128))), f"fz-cg-{rng.randrange(4)}"
    yield "cghb join", CGHB(group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=5000,
                            subscribed_topic_names=[TOPIC], topic_partitions=[]), 1
    for epoch in range(1, rng.randrange(2, 6)):
        yield "cghb beat", CGHB(group_id=group, member_id=member, member_epoch=_near(rng, epoch, 16),
                                topic_partitions=[CGHB.TopicPartitions(topic_id=topic_id,
                                                                      partitions=[rng.randrange(3)])]), 1
    yield "cghb leave", CGHB(group_id=group, member_id=member, member_epoch=-1), 1


def share_consumer(rng: random.Random, topic_id: uuid.UUID, lookup: Callable[[str], Any]) -> Iterator[Step]:
    from kwire.protocol.messages.share_acknowledge import ShareAcknowledgeRequest as SA
    from kwire.protocol.messages.share_fetch import ShareFetchRequest as SF
    from kwire.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest as SGHB

    member, group = str(uuid.UUID(int=rng.getrandbits(128)))[:36], f"fz-sg-{rng.randrange(4)}"
    yield "sghb join", SGHB(group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[TOPIC]), 1
    version = rng.choice((1, 2))
    session = 0

    def acks(cls: Any) -> list[Any]:
        out = []
        first = rng.randrange(0, 40)
        for _ in range(rng.randrange(0, 4)):
            last = first + rng.choice((0, 0, 1, 3, -1))
            n = last - first + 1
            types = ([rng.randrange(0, 5 if version == 2 else 4)] if rng.random() < 0.7 or n < 1
                     else [rng.randrange(0, 5) for _ in range(max(n, 1))])
            out.append(cls(first_offset=first, last_offset=last, acknowledge_types=types))
            first = last + rng.choice((1, 1, 2, 0))
        return out

    for _ in range(rng.randrange(1, 6)):
        renew = version == 2 and rng.random() < 0.2
        zero = renew and rng.random() < 0.8  # RN-2: mostly the valid renew-only shape
        part = SF.FetchPartition(partition_index=rng.randrange(3),
                                 acknowledgement_batches=[] if session == 0 else acks(SF.AcknowledgementBatch))
        yield "share fetch", SF(
            group_id=group, member_id=member, share_session_epoch=_near(rng, session),
            max_wait_ms=0 if zero else rng.choice((0, 0, 5)), min_bytes=0 if zero else 1,
            max_bytes=0 if zero else rng.choice((1 << 20, 100, 1)), max_records=0 if zero else rng.choice((1, 5, 500)),
            batch_size=rng.choice((1, 10, 500)), share_acquire_mode=rng.randrange(2) if version == 2 else 0,
            is_renew_ack=renew, topics=[SF.FetchTopic(topic_id=topic_id, partitions=[part])]), version
        session += 1
        if rng.random() < 0.4:
            yield "share ack", SA(
                group_id=group, member_id=member, share_session_epoch=_near(rng, session),
                is_renew_ack=version == 2 and rng.random() < 0.3,
                topics=[SA.AcknowledgeTopic(topic_id=topic_id, partitions=[SA.AcknowledgePartition(
                    partition_index=rng.randrange(3), acknowledgement_batches=acks(SA.AcknowledgementBatch))])]), version
            session += 1
    yield "share close", SF(group_id=group, member_id=member, share_session_epoch=-1, max_wait_ms=0, min_bytes=0,
                            max_bytes=0, max_records=0, batch_size=0, topics=[]), version
    if rng.random() < 0.7:
        yield "sghb leave", SGHB(group_id=group, member_id=member, member_epoch=-1), 1


def transactional_producer(rng: random.Random, topic_id: uuid.UUID, lookup: Callable[[str], Any]) -> Iterator[Step]:
    from kwire.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest as AOT
    from kwire.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest as APT
    from kwire.protocol.messages.end_txn import EndTxnRequest
    from kwire.protocol.messages.init_producer_id import InitProducerIdRequest
    from kwire.protocol.messages.produce import ProduceRequest
    from kwire.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest as TOC
    from kwire.records import BatchBuilder

    tid = f"fz-tx-{rng.randrange(6)}"
    yield "init producer id", InitProducerIdRequest(transactional_id=tid,
                                                   transaction_timeout_ms=rng.choice((60_000, 1, 0, 10**9)),
                                                   producer_id=-1, producer_epoch=-1), 4
    pid, epoch = lookup(tid)
    tv2 = rng.random() < 0.5
    for round_ in range(rng.randrange(1, 3)):
        partition = rng.randrange(3)
        if not tv2:
            yield "add partitions", APT(v3_and_below_transactional_id=tid, v3_and_below_producer_id=_near(rng, pid),
                                        v3_and_below_producer_epoch=_near(rng, epoch, 16),
                                        v3_and_below_topics=[APT.AddPartitionsToTxnTopic(
                                            name=TOPIC, partitions=[partition])]), 3
        b = BatchBuilder(producer_id=_near(rng, pid), producer_epoch=_near(rng, epoch, 16),
                         base_sequence=_near(rng, round_), is_transactional=True)
        b.append(b"fz", b"k")
        yield "txn produce", ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(
                index=partition, records=b.build())])]), 12 if tv2 else 9
        if rng.random() < 0.3:
            group = f"fz-g-{rng.randrange(3)}"
            yield "add offsets", AOT(transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group), 3
            yield "txn offset commit", TOC(transactional_id=tid, group_id=group, producer_id=pid,
                                           producer_epoch=_near(rng, epoch, 16), generation_id_or_member_epoch=-1,
                                           member_id="",
                                           topics=[TOC.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
                                               TOC.TxnOffsetCommitRequestPartition(partition_index=partition,
                                                                                   committed_offset=rng.randrange(5))])]), 3
        yield "end txn", EndTxnRequest(transactional_id=tid, producer_id=_near(rng, pid),
                                       producer_epoch=_near(rng, epoch, 16), committed=rng.random() < 0.6), 5 if tv2 else 3
        if tv2:
            epoch += 1  # TV2: every end bumps the epoch (TX-16)


SEQUENCES: list[Callable[[random.Random, uuid.UUID, Callable[[str], Any]], Iterator[Step]]] = [
    consumer_member, share_consumer, transactional_producer,
]

"""The KIP-227 fetch session cache on its own: opening, epochs, incremental add/forget,
closing, the two session errors, the cache limit, and what a disconnect does (nothing)."""

from __future__ import annotations

import pytest

from kwire.broker.core.fetch_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchSessionCache,
    SessionTarget,
)
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


def target(offset: int = 0, max_bytes: int = 1024) -> SessionTarget:
    return SessionTarget(fetch_offset=offset, partition_max_bytes=max_bytes)


def opened(cache: FetchSessionCache, keys: tuple[tuple[str, int], ...] = (A0, A1), conn_id: int = 1) -> int:
    ctx = cache.begin(0, INITIAL_EPOCH, conn_id, [(k, target()) for k in keys], [])
    cache.finish(ctx)
    assert ctx.session is not None
    return ctx.session.session_id


def test_sessionless_fetch_opens_nothing_and_is_full() -> None:
    cache = FetchSessionCache()
    ctx = cache.begin(0, FINAL_EPOCH, 1, [(A0, target(5))], [])
    assert (ctx.session, ctx.full, ctx.response_session_id) == (None, True, 0)
    assert list(ctx.targets) == [A0] and ctx.targets[A0].fetch_offset == 5
    cache.finish(ctx)
    assert cache.sessions == {}


def test_epoch_zero_opens_a_session_whose_next_epoch_is_one() -> None:
    cache = FetchSessionCache()
    ctx = cache.begin(0, INITIAL_EPOCH, 1, [(A0, target()), (A1, target())], [])
    assert ctx.full and ctx.session is not None and ctx.response_session_id == ctx.session.session_id > 0
    cache.finish(ctx)
    assert ctx.session.next_epoch == 1
    assert list(cache.sessions[ctx.session.session_id].targets) == [A0, A1]


def test_incremental_fetches_advance_the_epoch_one_by_one() -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    for epoch in (1, 2, 3):
        ctx = cache.begin(sid, epoch, 1, [], [])
        assert not ctx.full and ctx.response_session_id == sid
        cache.finish(ctx)
    assert cache.sessions[sid].next_epoch == 4


def test_epoch_wraps_to_one_after_int32_max() -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    cache.sessions[sid].next_epoch = 2**31 - 1
    cache.finish(cache.begin(sid, 2**31 - 1, 1, [], []))
    assert cache.sessions[sid].next_epoch == 1


def test_incremental_request_adds_updates_and_forgets_partitions() -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    s = cache.sessions[sid]
    s.targets[A0].sent_hw, s.targets[A0].sent_lso, s.targets[A0].sent_log_start = 7, 6, 1
    ctx = cache.begin(sid, 1, 1, [(A0, target(offset=3)), (B0, target())], [A1])
    assert list(ctx.targets) == [A0, B0]
    # An updated partition keeps what the client was last told, so only news is sent again.
    t = ctx.targets[A0]
    assert (t.fetch_offset, t.sent_hw, t.sent_lso, t.sent_log_start) == (3, 7, 6, 1)
    assert ctx.targets[B0].sent_hw is None
    cache.finish(ctx)
    assert list(cache.sessions[sid].targets) == [A0, B0]


def test_forgetting_a_partition_the_session_does_not_hold_is_harmless() -> None:
    cache = FetchSessionCache()
    sid = opened(cache, (A0,))
    ctx = cache.begin(sid, 1, 1, [], [B0])
    assert list(ctx.targets) == [A0]


def test_unknown_session_is_fetch_session_id_not_found() -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    with pytest.raises(KafkaError) as err:
        cache.begin(sid + 1, 1, 1, [], [])
    assert err.value.code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


@pytest.mark.parametrize("epoch", [2, 5, -2])
def test_wrong_epoch_is_invalid_fetch_session_epoch_and_the_session_stays(epoch: int) -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    with pytest.raises(KafkaError) as err:
        cache.begin(sid, epoch, 1, [(B0, target())], [A0])
    assert err.value.code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    s = cache.sessions[sid]
    assert s.next_epoch == 1 and list(s.targets) == [A0, A1]  # the rejected request changed nothing


def test_a_repeated_epoch_is_rejected() -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    cache.finish(cache.begin(sid, 1, 1, [], []))
    with pytest.raises(KafkaError) as err:
        cache.begin(sid, 1, 1, [], [])
    assert err.value.code == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_final_epoch_closes_the_session_and_fetches_sessionless() -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    ctx = cache.begin(sid, FINAL_EPOCH, 1, [(B0, target())], [])
    assert (ctx.session, ctx.full, ctx.response_session_id, list(ctx.targets)) == (None, True, 0, [B0])
    assert sid not in cache.sessions
    with pytest.raises(KafkaError) as err:
        cache.begin(sid, 1, 1, [], [])
    assert err.value.code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_epoch_zero_on_a_session_replaces_it_with_a_new_one() -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    ctx = cache.begin(sid, INITIAL_EPOCH, 1, [(B0, target())], [])
    assert ctx.session is not None and ctx.full
    new = ctx.session.session_id
    assert new != sid and list(cache.sessions) == [new]
    assert list(cache.sessions[new].targets) == [B0]


def test_cache_limit_evicts_the_oldest_session() -> None:
    cache = FetchSessionCache(max_sessions=2)
    first, second = opened(cache), opened(cache)
    third = opened(cache)
    assert list(cache.sessions) == [second, third]
    with pytest.raises(KafkaError) as err:
        cache.begin(first, 1, 1, [], [])
    assert err.value.code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    cache.finish(cache.begin(second, 1, 1, [], []))  # the survivors still work


def test_a_session_outlives_its_connection_and_serves_the_next_one() -> None:
    cache = FetchSessionCache()
    sid = opened(cache, conn_id=1)
    cache.on_disconnect(1)
    assert sid in cache.sessions
    ctx = cache.begin(sid, 1, 2, [], [])
    assert ctx.response_session_id == sid and list(ctx.targets) == [A0, A1]


@pytest.mark.rule("SS-1")
def test_sessions_and_slots_are_per_broker() -> None:
    """Kafka's FetchSessionCache is one per broker (max.incremental.fetch.session.cache.slots each;
    the SS-1 reasoning for share sessions): a session id is unknown to another broker, closing it
    there does nothing, and one broker's full cache evicts only its own sessions."""
    cache = FetchSessionCache(max_sessions=1)
    one = cache.begin(0, INITIAL_EPOCH, 1, [(A0, target())], [], broker_id=1)
    cache.finish(one)
    assert one.session is not None
    sid = one.session.session_id
    for epoch in (1, 5):
        with pytest.raises(KafkaError) as err:
            cache.begin(sid, epoch, 2, [], [], broker_id=2)
        assert err.value.code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    cache.finish(cache.begin(sid, FINAL_EPOCH, 2, [], [], broker_id=2))  # sessionless there
    two = cache.begin(0, INITIAL_EPOCH, 2, [(B0, target())], [], broker_id=2)
    cache.finish(two)
    assert sid in cache.sessions  # broker 2's slot was its own
    cache.finish(cache.begin(sid, 1, 1, [], [], broker_id=1))

"""Fetch sessions (KIP-227) as Kafka 3.9's FetchManager keeps them, without a socket."""

from __future__ import annotations

import random
import uuid

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.partitions.fetch_sessions import (
    EVICTION_MS,
    ContextKind,
    FetchSessionCache,
    FetchSessionFailure,
    PartitionAnswer,
    PartitionRequest,
    TopicPartitionId,
    next_epoch,
)

ZERO = uuid.UUID(int=0)
T_ID = uuid.UUID(int=7)


def tp(partition: int, topic: str = "t") -> TopicPartitionId:
    return TopicPartitionId(ZERO, topic, partition)


def req(offset: int = 0) -> PartitionRequest:
    return PartitionRequest(fetch_offset=offset)


def answer(hw: int = 10, records: bytes = b"", error: int = ErrorCode.NONE, log_start: int = 0) -> PartitionAnswer:
    return PartitionAnswer(error_code=error, high_watermark=hw, last_stable_offset=hw, log_start_offset=log_start, records=records)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def names(_: uuid.UUID) -> str | None:
    return None


def cache(slots: int = 1000, clock: Clock | None = None) -> FetchSessionCache:
    return FetchSessionCache(slots, clock=clock or Clock(), rng=random.Random(1))


def open_session(sessions: FetchSessionCache, parts: list[int], *, version: int = 12, follower: bool = False) -> int:
    fetches = [(tp(p), req()) for p in parts]
    context = sessions.new_context(version, 0, 0, follower, fetches, [], names)
    assert context.kind is ContextKind.FULL
    error, session_id, kept = context.respond([(t, answer()) for t, _ in fetches])
    assert error == ErrorCode.NONE and len(kept) == len(parts)
    return session_id


def test_old_versions_and_final_epoch_are_sessionless() -> None:
    sessions = cache()
    for epoch in (-1,):
        context = sessions.new_context(6, 0, epoch, False, [(tp(0), req())], [], names)
        assert context.kind is ContextKind.SESSIONLESS
        assert context.respond([(tp(0), answer())]) == (ErrorCode.NONE, 0, [(tp(0), answer())])
    assert len(sessions) == 0


def test_a_full_fetch_creates_a_session_and_answers_everything() -> None:
    sessions = cache()
    session_id = open_session(sessions, [0, 1, 2])
    assert session_id > 0
    session = sessions.get(session_id)
    assert session is not None and session.epoch == 1 and len(session.partitions) == 3


def test_incremental_fetch_answers_only_what_changed() -> None:
    sessions = cache()
    session_id = open_session(sessions, [0, 1, 2])
    context = sessions.new_context(12, session_id, 1, False, [], [], names)
    assert context.kind is ContextKind.INCREMENTAL
    assert [t.partition for t, _ in context.partitions()] == [0, 1, 2]
    # Partition 1 got records, partition 2's high watermark moved, partition 0 is unchanged.
    error, sid, kept = context.respond([(tp(0), answer()), (tp(1), answer(records=b"x")), (tp(2), answer(hw=11))])
    assert (error, sid) == (ErrorCode.NONE, session_id)
    assert [t.partition for t, _ in kept] == [1, 2]
    # A partition that returned records goes last, so the next fetch reads the others first.
    nxt = sessions.new_context(12, session_id, 2, False, [], [], names)
    assert [t.partition for t, _ in nxt.partitions()] == [0, 2, 1]
    assert nxt.respond([(t, answer(hw=11 if t.partition == 2 else 10)) for t, _ in nxt.partitions()])[2] == []


def test_errors_are_always_answered_and_resent_when_they_clear() -> None:
    sessions = cache()
    session_id = open_session(sessions, [0])
    context = sessions.new_context(12, session_id, 1, False, [], [], names)
    assert len(context.respond([(tp(0), answer(error=ErrorCode.NOT_LEADER_OR_FOLLOWER))])[2]) == 1
    context = sessions.new_context(12, session_id, 2, False, [], [], names)
    assert len(context.respond([(tp(0), answer())])[2]) == 1  # the cached high watermark was reset


def test_incremental_requests_update_add_and_forget_partitions() -> None:
    sessions = cache()
    session_id = open_session(sessions, [0, 1])
    context = sessions.new_context(12, session_id, 1, False, [(tp(1), req(5)), (tp(3), req(7))], [tp(0)], names)
    assert [(t.partition, r.fetch_offset) for t, r in context.partitions()] == [(1, 5), (3, 7)]


def test_forgetting_every_partition_closes_the_session() -> None:
    sessions = cache()
    session_id = open_session(sessions, [0])
    context = sessions.new_context(12, session_id, 1, False, [], [tp(0)], names)
    assert context.kind is ContextKind.SESSIONLESS
    assert sessions.get(session_id) is None


def test_session_errors() -> None:
    sessions = cache()
    session_id = open_session(sessions, [0])
    unknown = sessions.new_context(12, session_id + 1, 1, False, [], [], names)
    assert unknown.respond([]) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    wrong_epoch = sessions.new_context(12, session_id, 4, False, [], [], names)
    assert wrong_epoch.respond([]) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    by_ids = sessions.new_context(13, session_id, 1, False, [], [], names)
    assert by_ids.respond([]) == (ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, 0, [])
    # A duplicate of an incremental request that was already answered: the session moved on.
    first = sessions.new_context(12, session_id, 1, False, [], [], names)
    sessions.get(session_id).epoch = next_epoch(sessions.get(session_id).epoch)
    assert first.respond([(tp(0), answer())]) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id, [])


def test_a_full_fetch_closes_the_session_it_names() -> None:
    sessions = cache()
    old = open_session(sessions, [0])
    context = sessions.new_context(12, old, 0, False, [(tp(0), req())], [], names)
    assert sessions.get(old) is None
    new = context.respond([(tp(0), answer())])[1]
    assert new not in (0, old) and sessions.get(new) is not None
    sessions.new_context(12, new, -1, False, [(tp(0), req())], [], names)  # FINAL_EPOCH: closed, none created
    assert len(sessions) == 0


def test_topic_ids_are_resolved_once_the_topic_exists() -> None:
    sessions = cache()
    unknown = TopicPartitionId(T_ID, None, 0)
    context = sessions.new_context(13, 0, 0, False, [(unknown, req())], [], names)
    session_id = context.respond([(unknown, answer(error=ErrorCode.UNKNOWN_TOPIC_ID))])[1]
    incremental = sessions.new_context(13, session_id, 1, False, [], [], lambda i: "t" if i == T_ID else None)
    assert [t.topic for t, _ in incremental.partitions()] == ["t"]


def test_eviction_by_slots_staleness_and_size() -> None:
    clock = Clock()
    sessions = cache(slots=8, clock=clock)  # 8 shards of one slot each
    first = [open_session(sessions, [0]) for _ in range(8)]
    assert len(sessions) == 8 and all(first)
    # Every shard is full and its session young: no session for a ninth fetcher.
    assert open_session(sessions, [0, 1]) == 0
    # Older than the eviction time (but used recently): a larger session may evict the smallest.
    clock.now += EVICTION_MS + 1
    for session_id in first:
        sessions.new_context(12, session_id, 1, False, [], [], names).respond([(tp(0), answer())])
    assert open_session(sessions, [0]) == 0  # as large as the smallest, whose id is above 0: not evicted
    bigger = open_session(sessions, [0, 1, 2])
    assert bigger > 0 and sessions.get(bigger) is not None
    # Unused for longer than the eviction time: evicted by anyone.
    clock.now += EVICTION_MS + 1
    assert open_session(sessions, [0]) > 0


def test_a_follower_may_evict_a_young_consumer_session() -> None:
    clock = Clock()
    sessions = cache(slots=8, clock=clock)
    for _ in range(8):
        open_session(sessions, [0, 1, 2])
    assert open_session(sessions, [0], follower=True) > 0
    assert open_session(sessions, [0, 1, 2, 3]) == 0  # a consumer may not


def test_no_slots_no_sessions() -> None:
    sessions = cache(slots=0)
    assert open_session(sessions, [0]) == 0


def test_session_ids_fall_in_their_shard_range() -> None:
    sessions = cache(slots=80)
    ids = [open_session(sessions, [0]) for _ in range(16)]
    shards = [sessions.shards[i % 8] for i in range(16)]
    assert all(max(1, s.number * s.id_range) <= i < (s.number + 1) * s.id_range for i, s in zip(ids, shards, strict=True))


def test_epochs_wrap_to_one() -> None:
    assert next_epoch(0) == 1 and next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1


@pytest.mark.parametrize("session_id,fails", [(-(2**31), True), (-268435455, True), (-268435454, False), (-1, False),
                                              (2147483639, False), (2147483640, True), (2**31 - 1, True)])
def test_a_session_id_past_the_shards_fails_as_kafka_throws(session_id: int, fails: bool) -> None:
    cache = FetchSessionCache()
    for epoch in (-1, 0, 3):
        if fails:
            with pytest.raises(FetchSessionFailure, match="no fetch session cache shard"):
                cache.new_context(12, session_id, epoch, False, [(tp(0), req())], [], lambda _: None)
        else:
            context = cache.new_context(12, session_id, epoch, False, [(tp(0), req())], [], lambda _: None)
            assert context.error == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND if epoch > 0 else ErrorCode.NONE)


def test_the_zero_topic_id_cannot_join_a_session() -> None:
    unnamed = TopicPartitionId(ZERO, None, 0)
    named = TopicPartitionId(T_ID, "t", 0)
    cache = FetchSessionCache()
    sessionless = cache.new_context(13, 0, -1, False, [(unnamed, req())], [], lambda _: None)
    assert sessionless.respond([(unnamed, answer(error=ErrorCode.UNKNOWN_TOPIC_ID))])[1] == 0
    full = cache.new_context(13, 0, 0, False, [(named, req()), (unnamed, req())], [], lambda _: None)
    with pytest.raises(FetchSessionFailure, match="NullPointerException"):
        full.respond([(named, answer()), (unnamed, answer(error=ErrorCode.UNKNOWN_TOPIC_ID))])
    assert len(cache) == 0
    full = cache.new_context(13, 0, 0, False, [(named, req())], [], lambda _: None)
    _, session_id, _ = full.respond([(named, answer())])
    for fetches, forgotten in (([(unnamed, req())], []), ([], [unnamed])):
        with pytest.raises(FetchSessionFailure):
            cache.new_context(13, session_id, 1, False, fetches, forgotten, lambda _: None)
    assert cache.new_context(13, session_id, 1, False, [], [], lambda _: None).kind is ContextKind.INCREMENTAL

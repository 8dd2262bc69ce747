"""Incremental fetch sessions (KIP-227) as plain state: which partitions a fetcher follows, and what it was last told.

Kafka's counterpart: ``kafka.server.FetchSession`` (FetchManager, FetchSessionCacheShard, CachedPartition and the
four fetch contexts) of Kafka 3.9. A fetch names a session id and an epoch:

- **sessionless** (Fetch v0-6, or id 0 with epoch -1): every partition is in the request and in the answer;
- **full** (epoch 0): the request lists every partition; any session it names is closed, and a new one is created
  when the cache has room (or can evict), its id given in the answer (0 when none was created);
- **incremental** (epoch > 0): the request lists only what changed (and ``forgotten`` partitions); the session's
  partitions are fetched, and the answer carries only partitions with records, an error, or a high watermark or log
  start offset the fetcher has not been told yet. An unknown id gives FETCH_SESSION_ID_NOT_FOUND (70), a wrong epoch
  INVALID_FETCH_SESSION_EPOCH (71), a switch between names and topic ids (v13) FETCH_SESSION_TOPIC_ID_ERROR (106).
  A partition that returned records moves to the end of the session, so the next fetch starts with the others.

The cache is Kafka's: ``max.incremental.fetch.session.cache.slots`` divided over 8 shards, new sessions given to the
shards in turn, each shard's ids in its own range. A shard that is full evicts a session unused for
``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`` (2 minutes), else the smallest session older than that (a follower's
session may also evict a younger consumer session) when the new one is at least as large; otherwise no session is
created. Plain state: no asyncio, no wire types; the clock is injected.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum

from kafka_shim.protocol.codes import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
ZERO_UUID = uuid.UUID(int=0)
# Kafka's KafkaBroker.NumFetchSessionCacheShards and KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS.
SHARDS = 8
EVICTION_MS = 120_000
_INT32_MAX = 2**31 - 1


class FetchSessionFailure(Exception):
    """A fetch that makes Kafka's FetchManager throw, which KafkaApis answers with UNKNOWN_SERVER_ERROR: a session id
    outside every shard's range (IndexOutOfBoundsException), or a partition with the zero topic id in a session that
    uses topic ids (CachedPartition hashes its null topic name: NullPointerException)."""


def next_epoch(epoch: int) -> int:
    """FetchMetadata.nextEpoch: 0 → 1, wrapping to 1 after Integer.MAX_VALUE; -1 stays -1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT32_MAX else epoch + 1


@dataclass(frozen=True, slots=True)
class TopicPartitionId:
    """A partition as a fetch names it: by topic id (v13+; ``topic`` None when the id is unknown) or by name."""

    topic_id: uuid.UUID
    topic: str | None
    partition: int

    @property
    def key(self) -> tuple[object, int]:
        # Kafka's CachedPartition equality: by id when there is one, else by name.
        return (self.topic_id if self.topic_id != ZERO_UUID else self.topic, self.partition)


@dataclass(slots=True)
class PartitionRequest:
    """What a fetch asks of one partition (FetchRequest.PartitionData); epochs are None when not given (-1)."""

    fetch_offset: int
    log_start_offset: int = -1
    max_bytes: int = 1 << 20
    current_leader_epoch: int | None = None
    last_fetched_epoch: int | None = None


@dataclass(slots=True)
class PartitionAnswer:
    """What a fetch answers for one partition, as plain values (the handler turns it into the wire form)."""

    error_code: int = ErrorCode.NONE
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes | None = None
    aborted_transactions: list[tuple[int, int]] | None = None
    preferred_read_replica: int = -1
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset)
    refused: bool = False  # refused before reading (authorization, existence), not an error of the read

    @property
    def records_size(self) -> int:
        return len(self.records) if self.records else 0


@dataclass(slots=True, eq=False)
class CachedPartition:
    """One partition of a session: the request parameters last sent and what the fetcher was last told."""

    id: TopicPartitionId
    request: PartitionRequest
    high_watermark: int = -1
    local_log_start_offset: int = -1

    def must_respond(self, answer: PartitionAnswer, update: bool) -> bool:
        """CachedPartition.maybeUpdateResponseData: must the incremental answer carry this partition?"""
        respond = answer.records_size > 0
        if self.high_watermark != answer.high_watermark:
            respond = True
            if update:
                self.high_watermark = answer.high_watermark
        if self.local_log_start_offset != answer.log_start_offset:
            respond = True
            if update:
                self.local_log_start_offset = answer.log_start_offset
        if answer.preferred_read_replica != -1 or answer.diverging_epoch is not None:
            respond = True
        if answer.error_code != ErrorCode.NONE:
            # Kafka forgets the high watermark so that the partition is sent again once the error is gone.
            if update:
                self.high_watermark = -1
            respond = True
        return respond


@dataclass(eq=False)
class FetchSession:
    id: int
    privileged: bool  # created by a follower
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[tuple[object, int], CachedPartition] = field(default_factory=dict)  # in fetch order
    cached_size: int = -1

    def update(self, fetches: Iterable[tuple[TopicPartitionId, PartitionRequest]], forgotten: Iterable[TopicPartitionId]) -> None:
        # Kafka throws part way, keeping what it changed before the unnamed partition.
        for tp, request in fetches:
            _hashable(tp)
            cached = self.partitions.get(tp.key)
            if cached is None:
                self.partitions[tp.key] = CachedPartition(tp, request)
            else:
                cached.request = request
        for tp in forgotten:
            _hashable(tp)
            self.partitions.pop(tp.key, None)

    def resolve_names(self, names: Callable[[uuid.UUID], str | None]) -> None:
        """Partitions added under an unknown topic id get their name once the topic exists."""
        for cached in self.partitions.values():
            if cached.id.topic is None:
                name = names(cached.id.topic_id)
                if name is not None:
                    cached.id = TopicPartitionId(cached.id.topic_id, name, cached.id.partition)


class _Shard:
    """FetchSessionCacheShard: at most ``max_entries`` sessions, ids in [max(1, n * range), (n + 1) * range)."""

    def __init__(self, number: int, max_entries: int, eviction_ms: int, id_range: int, rng: random.Random) -> None:
        self.number = number
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.id_range = id_range
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng

    def new_id(self) -> int:
        low, high = max(1, self.number * self.id_range), (self.number + 1) * self.id_range
        while True:
            candidate = self._rng.randrange(low, high)
            if candidate not in self.sessions and candidate != INVALID_SESSION_ID:
                return candidate

    def create(self, now: int, privileged: bool, size: int, uses_topic_ids: bool) -> FetchSession | None:
        if len(self.sessions) >= self.max_entries and not self._evict(privileged, size, now):
            return None
        session = FetchSession(self.new_id(), privileged, uses_topic_ids, now, now, next_epoch(INITIAL_EPOCH))
        self.sessions[session.id] = session
        self.touch(session, now)
        return session

    def touch(self, session: FetchSession, now: int) -> None:
        session.last_used_ms = now
        session.cached_size = len(session.partitions)

    def _evictable(self, session: FetchSession, by_privileged: bool, now: int) -> bool:
        old = now - session.creation_ms > self.eviction_ms
        return old or (by_privileged and not session.privileged)

    def _evict(self, privileged: bool, size: int, now: int) -> bool:
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - stale.last_used_ms > self.eviction_ms:
            del self.sessions[stale.id]
            return True
        candidates = [s for s in self.sessions.values() if self._evictable(s, privileged, now)]
        if not candidates:
            return False
        weakest = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        # EvictableKey(privileged, size, 0) against the weakest: the new session must not be the smaller one.
        if (privileged, size, 0) < (weakest.privileged, weakest.cached_size, weakest.id):
            return False
        del self.sessions[weakest.id]
        return True


class ContextKind(Enum):
    SESSIONLESS = "sessionless"
    FULL = "full"
    INCREMENTAL = "incremental"
    ERROR = "error"


@dataclass
class FetchContext:
    """What one fetch reads, and how its answer is cut down and recorded (Kafka's FetchContext)."""

    kind: ContextKind
    cache: FetchSessionCache
    fetches: list[tuple[TopicPartitionId, PartitionRequest]] = field(default_factory=list)
    error: int = ErrorCode.NONE
    session: FetchSession | None = None
    privileged: bool = False
    uses_topic_ids: bool = False
    request_epoch: int = 0

    def partitions(self) -> list[tuple[TopicPartitionId, PartitionRequest]]:
        """The partitions to read, in order: the request's, or the session's (incremental)."""
        if self.kind is ContextKind.INCREMENTAL and self.session is not None:
            return [(cached.id, cached.request) for cached in self.session.partitions.values()]
        return list(self.fetches)

    def response_size(self, answers: list[tuple[TopicPartitionId, PartitionAnswer]]) -> int:
        """The record bytes the answer would carry, without recording anything (FetchContext.getResponseSize): what
        the fetch byte-rate quota is charged before deciding whether to throttle."""
        return sum(answer.records_size for _, answer in self.carried(answers))

    def carried(self, answers: list[tuple[TopicPartitionId, PartitionAnswer]]) -> list[tuple[TopicPartitionId, PartitionAnswer]]:
        """The partitions the answer would carry, in order, without recording anything."""
        if self.kind is ContextKind.ERROR:
            return []
        if self.kind is not ContextKind.INCREMENTAL or self.session is None:
            return answers
        partitions = self.session.partitions
        return [(tp, answer) for tp, answer in answers
                if (cached := partitions.get(tp.key)) is not None and cached.must_respond(answer, update=False)]

    def throttled(self) -> tuple[int, int]:
        """(error code, session id) of the empty answer a throttled fetch gets (FetchContext.getThrottledResponse):
        no session is created for a full fetch, and an incremental one's partitions are left as they were."""
        if self.kind is ContextKind.ERROR:
            return self.error, INVALID_SESSION_ID
        if self.kind is not ContextKind.INCREMENTAL or self.session is None:
            return ErrorCode.NONE, INVALID_SESSION_ID
        if self.session.epoch != next_epoch(self.request_epoch):
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, self.session.id
        return ErrorCode.NONE, self.session.id

    def respond(self, answers: list[tuple[TopicPartitionId, PartitionAnswer]]) -> tuple[int, int, list[tuple[TopicPartitionId, PartitionAnswer]]]:
        """(error code, session id, the partitions the answer carries), recording what the fetcher is told."""
        if self.kind is ContextKind.ERROR:
            return self.error, INVALID_SESSION_ID, []
        if self.kind is ContextKind.SESSIONLESS:
            return ErrorCode.NONE, INVALID_SESSION_ID, answers
        if self.kind is ContextKind.FULL:
            return ErrorCode.NONE, self.cache.create_session(self.privileged, self.uses_topic_ids, self.fetches, answers), answers
        session = self.session
        assert session is not None
        if session.epoch != next_epoch(self.request_epoch):
            # Another fetch of the same session was answered meanwhile (a duplicate request).
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
        kept = []
        for tp, answer in answers:
            cached = session.partitions.get(tp.key)
            if cached is None or not cached.must_respond(answer, update=True):
                continue
            kept.append((tp, answer))
            if answer.records_size > 0:
                session.partitions[tp.key] = session.partitions.pop(tp.key)
        return ErrorCode.NONE, session.id, kept


class FetchSessionCache:
    """Every fetch session of this broker (Kafka's FetchManager over its FetchSessionCache shards)."""

    def __init__(self, slots: int = 1000, *, eviction_ms: int = EVICTION_MS, clock: Callable[[], int] | None = None,
                 shards: int = SHARDS, rng: random.Random | None = None) -> None:
        self._clock = clock or (lambda: time.monotonic_ns() // 1_000_000)
        rng = rng or random.Random()
        id_range = _INT32_MAX // shards
        self.shards = [_Shard(n, slots // shards, eviction_ms, id_range, rng) for n in range(shards)]
        self._next_shard = 0

    def __len__(self) -> int:
        return sum(len(shard.sessions) for shard in self.shards)

    def get(self, session_id: int) -> FetchSession | None:
        return self._shard_of(session_id).sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        return self._shard_of(session_id).sessions.pop(session_id, None)

    def _shard_of(self, session_id: int) -> _Shard:
        # FetchSessionCache.getCacheShard: Java's division truncates toward zero, and an index past the shards throws.
        id_range = self.shards[0].id_range
        index = session_id // id_range if session_id >= 0 else -(-session_id // id_range)
        if not 0 <= index < len(self.shards):
            raise FetchSessionFailure(f"session id {session_id} is in no fetch session cache shard "
                                      f"(IndexOutOfBoundsException: index {index}, size {len(self.shards)})")
        return self.shards[index]

    def new_context(self, version: int, session_id: int, epoch: int, is_follower: bool,
                    fetches: list[tuple[TopicPartitionId, PartitionRequest]], forgotten: list[TopicPartitionId],
                    names: Callable[[uuid.UUID], str | None]) -> FetchContext:
        """FetchManager.newContext for one request (v0-6 carry no session: id 0, epoch -1)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)  # a full fetch closes the session it names
            kind = ContextKind.SESSIONLESS if epoch == FINAL_EPOCH else ContextKind.FULL
            return FetchContext(kind, self, _unique(fetches), privileged=is_follower, uses_topic_ids=version >= 13)
        session = self.get(session_id)
        if session is None:
            return FetchContext(ContextKind.ERROR, self, error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext(ContextKind.ERROR, self, error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= 13):
            return FetchContext(ContextKind.ERROR, self, error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetches, forgotten)
        if not session.partitions:
            self.remove(session.id)
            return FetchContext(ContextKind.SESSIONLESS, self, _unique(fetches))
        if session.uses_topic_ids:
            session.resolve_names(names)
        self._shard_of(session.id).touch(session, self._clock())
        session.epoch = next_epoch(session.epoch)
        return FetchContext(ContextKind.INCREMENTAL, self, session=session, request_epoch=epoch)

    def create_session(self, privileged: bool, uses_topic_ids: bool, fetches: list[tuple[TopicPartitionId, PartitionRequest]],
                       answers: list[tuple[TopicPartitionId, PartitionAnswer]]) -> int:
        """A full fetch's new session, holding the answered partitions; INVALID_SESSION_ID when none fits."""
        shard = self.shards[self._next_shard % len(self.shards)]
        self._next_shard += 1
        now = self._clock()
        session = shard.create(now, privileged, len(answers), uses_topic_ids)
        if session is None:
            return INVALID_SESSION_ID
        if uses_topic_ids and any(tp.topic_id == ZERO_UUID and tp.topic is None for tp, _ in answers):
            del shard.sessions[session.id]  # Kafka evicted (if it had to) before building the partitions, then threw
            _hashable(next(tp for tp, _ in answers if tp.topic_id == ZERO_UUID and tp.topic is None))
        requests = {tp.key: request for tp, request in fetches}
        for tp, answer in answers:
            request = requests.get(tp.key)
            if request is None:
                continue
            session.partitions[tp.key] = CachedPartition(tp, request, answer.high_watermark, answer.log_start_offset)
        shard.touch(session, now)
        return session.id

    def sessions(self) -> Iterator[FetchSession]:
        for shard in self.shards:
            yield from shard.sessions.values()


def _hashable(tp: TopicPartitionId) -> None:
    if tp.topic_id == ZERO_UUID and tp.topic is None:
        raise FetchSessionFailure(f"partition {tp.partition} of the zero topic id has no topic name to hash "
                                  "(NullPointerException in CachedPartition.hashCode)")


def _unique(fetches: list[tuple[TopicPartitionId, PartitionRequest]]) -> list[tuple[TopicPartitionId, PartitionRequest]]:
    """The request's partitions as Kafka's LinkedHashMap keeps them: a repeated partition keeps its first place and
    its last parameters."""
    by_key: dict[tuple[object, int], tuple[TopicPartitionId, PartitionRequest]] = {}
    for tp, request in fetches:
        if tp.key in by_key:
            by_key[tp.key] = (by_key[tp.key][0], request)
        else:
            by_key[tp.key] = (tp, request)
    return list(by_key.values())

"""Offsets of a partition as the offset APIs ask for them: by timestamp, by leader epoch, the old offsets array.

Kafka's counterparts: ``Partition.fetchOffsetForTimestamp`` / ``UnifiedLog.fetchOffsetByTimestamp`` (ListOffsets
v1+), ``UnifiedLog.legacyFetchOffsetsBefore`` (ListOffsets v0), ``LeaderEpochFileCache.endOffsetFor``
(OffsetForLeaderEpoch, and the diverging-epoch check of Fetch) and ``Partition.checkCurrentLeaderEpoch``.

A single node leads every partition with leader epoch 0 from its creation on, so its leader-epoch cache has one
entry, (0, log start offset): Kafka writes it when the partition gets its leader (``maybeAssignEpochStartOffset``
at the log end offset, 0), before anything is appended; retention and DeleteRecords move its start offset with
the log start offset, as Kafka's ``truncateFromStart`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.log.partition_log import PartitionLog, wall_clock_ms

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
NO_TIMESTAMP = -1

# ListOffsets' special timestamps (ListOffsetsRequest), with the first version that may send each.
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
SPECIAL_TIMESTAMP_MIN_VERSION = {EARLIEST: 1, LATEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}


@dataclass(frozen=True, slots=True)
class Found:
    timestamp: int
    offset: int
    leader_epoch: int | None  # None: the answer keeps its default (-1)


def leader_epoch_error(current_leader_epoch: int | None, leader_epoch: int) -> ErrorCode:
    """Partition.checkCurrentLeaderEpoch: the client's idea of the leader epoch against ours (None: not checked)."""
    if current_leader_epoch is None:
        return ErrorCode.NONE
    if leader_epoch > current_leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if leader_epoch < current_leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def epoch_cache_start(log: PartitionLog) -> int:
    """The start offset of the single epoch-cache entry."""
    return log.log_start_offset


def end_offset_for_epoch(log: PartitionLog, leader_epoch: int, requested: int,
                         epoch_cache: Sequence[tuple[int, int]] = ()) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor as UnifiedLog.endOffsetForEpoch answers it: (epoch, end offset), or
    (-1, -1) when it is unknown. The cache is ``epoch_cache`` ((epoch, start offset) ascending;
    PartitionState.epoch_cache) when the partition has had more than one leader epoch, else one entry:
    ``leader_epoch`` from the log start."""
    if requested == UNDEFINED_EPOCH:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    entries = epoch_cache or ((leader_epoch, epoch_cache_start(log)),)
    if requested == entries[-1][0]:
        return requested, log.log_end_offset
    floor = None
    for epoch, start in entries:
        if epoch > requested:
            # The requested epoch ends where the first later one starts (never below the log start).
            return (requested if floor is None else floor), max(start, epoch_cache_start(log))
        floor = epoch
    return UNDEFINED_EPOCH, UNDEFINED_OFFSET


def earliest_epoch(log: PartitionLog, leader_epoch: int, epoch_cache: Sequence[tuple[int, int]] = ()) -> int:
    """UnifiedLog's epoch of the log start offset: the cache's earliest entry once Kafka has cut the cache at the log
    start (truncateFromStart keeps the last entry starting at or before it), -1 when none starts there."""
    entries = epoch_cache or ((leader_epoch, epoch_cache_start(log)),)
    covering = [epoch for epoch, start in entries if start <= log.log_start_offset]
    return covering[-1] if covering else UNDEFINED_EPOCH


def offset_for_timestamp(log: PartitionLog, timestamp: int, leader_epoch: int, last_fetchable: int,
                         epoch_cache: Sequence[tuple[int, int]] = ()) -> Found | None:
    """Partition.fetchOffsetForTimestamp for ListOffsets v1+ (``timestamp`` is a supported special value or >= 0)."""
    if timestamp == LATEST:
        return Found(NO_TIMESTAMP, last_fetchable, leader_epoch)
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        # No remote storage here: the earliest local offset is the log start offset, with the epoch it was written in.
        return Found(NO_TIMESTAMP, log.log_start_offset, earliest_epoch(log, leader_epoch, epoch_cache))
    if timestamp == LATEST_TIERED:
        found: Found | None = Found(NO_TIMESTAMP, -1, -1)  # no tiered storage: Kafka's fixed answer
    elif timestamp == MAX_TIMESTAMP:
        hit = log.max_timestamp()
        found = None if hit is None else Found(hit.timestamp, hit.offset, hit.leader_epoch)
    else:
        hit = log.offset_for_timestamp(timestamp)
        found = None if hit is None else Found(hit.timestamp, hit.offset, hit.leader_epoch)
    # Only offsets a client could fetch: below the high watermark (or the last stable offset).
    return found if found is not None and found.offset < last_fetchable else None


def legacy_offsets_before(log: PartitionLog, timestamp: int, max_num_offsets: int, *, now_ms: int | None = None) -> list[int]:
    """UnifiedLog.legacyFetchOffsetsBefore (ListOffsets v0): segment start offsets (and the log end offset) whose
    segment was last modified at or before ``timestamp``, newest first, at most ``max_num_offsets``."""
    segments = list(log.segments)
    entries = [(max(s.base_offset, log.log_start_offset), log.directory.modified_ms(s.log_file)) for s in segments]
    if segments[-1].size > 0:
        entries.append((log.log_end_offset, wall_clock_ms() if now_ms is None else now_ms))
    if timestamp == LATEST:
        start = len(entries) - 1
    elif timestamp == EARLIEST:
        start = 0
    else:
        start = len(entries) - 1
        while start >= 0 and entries[start][1] > timestamp:
            start -= 1
    count = max(min(max_num_offsets, start + 1), 0)
    return sorted((entries[start - j][0] for j in range(count)), reverse=True)


def for_consumer(offsets: list[int], high_watermark: int) -> list[int]:
    """Partition.legacyFetchOffsetsForTimestamp: a consumer is never told an offset above the high watermark."""
    if any(offset > high_watermark for offset in offsets):
        rest = list(offsets)
        while rest and rest[0] > high_watermark:
            rest.pop(0)
        return [high_watermark, *rest]
    return offsets

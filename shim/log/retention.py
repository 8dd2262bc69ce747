"""Which old segments retention deletes: ``retention.ms``, ``retention.bytes`` and the log start offset.

Kafka's counterpart: ``UnifiedLog.deleteOldSegments`` with ``deleteRetentionMsBreachedSegments``,
``deleteRetentionSizeBreachedSegments``, ``deleteLogStartOffsetBreachedSegments`` and ``deletableSegments``.
The rules kept from Kafka 3.9:

- segments are taken oldest first and the walk stops at the first segment the rule keeps;
- a segment goes only if all of it is below the high watermark (the next segment's base offset, or the log end
  offset for the last one, is <= the high watermark), and an empty last segment never goes;
- time: ``now - largest timestamp > retention.ms`` (the file's modification time when the segment has no timestamp);
- size: while the log is larger than ``retention.bytes`` by at least the whole oldest segment, that segment goes;
- log start offset: a segment goes when the next segment starts at or below the log start offset.

When every segment is to go, the log rolls a new empty segment first, so the log keeps an active segment (that is
the caller's part, :meth:`PartitionLog.apply_retention`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafka_shim.shim.log.segment import Segment

Rule = Callable[[Segment, "Segment | None"], bool]


def deletable(segments: Sequence[Segment], high_watermark: int, log_end_offset: int, rule: Rule) -> list[Segment]:
    """The oldest segments, in order, that ``rule`` lets go."""
    chosen: list[Segment] = []
    for index, segment in enumerate(segments):
        following = segments[index + 1] if index + 1 < len(segments) else None
        upper = following.base_offset if following is not None else log_end_offset
        last_and_empty = following is None and segment.is_empty
        if high_watermark >= upper and not last_and_empty and rule(segment, following):
            chosen.append(segment)
        else:
            break
    return chosen


def by_time(now_ms: int, retention_ms: int) -> Rule | None:
    if retention_ms < 0:
        return None
    return lambda segment, _following: now_ms - segment.largest_timestamp() > retention_ms


def by_size(segments: Sequence[Segment], retention_bytes: int) -> Rule | None:
    total = sum(segment.size for segment in segments)
    if retention_bytes < 0 or total < retention_bytes:
        return None
    excess = total - retention_bytes

    def rule(segment: Segment, _following: Segment | None) -> bool:
        nonlocal excess
        if excess - segment.size >= 0:
            excess -= segment.size
            return True
        return False

    return rule


def by_log_start_offset(log_start_offset: int) -> Rule:
    return lambda _segment, following: following is not None and following.base_offset <= log_start_offset

"""The broker's log cleaner: which compacted log to clean next, the cleaning driven on the event loop, and the
``cleaner-offset-checkpoint`` that says where each log's dirty section starts.

Kafka's counterparts: ``LogCleaner`` (its cleaner thread's ``doWork``) and ``LogCleanerManager``
(``grabFilthiestCompactedLog``, ``deletableLogs``, ``doneCleaning``, the checkpoint). The cleaning itself is
:mod:`kafka_shim.shim.log.cleaner`. Facts kept from Kafka 3.9:

- each pass cleans the filthiest log among the compacted ones (highest cleanable ratio) that is dirty enough, then
  deletes old segments of every compacted log (log start offset, and ``retention.*`` with ``compact,delete``);
  a pass that cleaned is followed at once by the next, one that did not by ``log.cleaner.backoff.ms`` of rest;
- after a cleaning the checkpoint of that log moves to the end of the cleaned section; it is written to
  ``cleaner-offset-checkpoint`` in the log directory (Kafka's checkpoint format) and read back at start;
- a log whose cleaning fails is left uncleanable (Kafka's ``markPartitionUncleanable``) until it is recreated; old
  segments of it are still deleted;
- ``log.cleaner.enable=false`` or ``log.cleaner.threads=0`` leaves compacted logs alone, as Kafka does.

The cleaning runs on the event loop in steps (a chunk of batches each), giving way to requests between them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.cleaner import (
    CleanerSettings,
    Cleaning,
    CleaningAborted,
    LastRecord,
    LogToClean,
    cleanable_offsets,
)
from kafka_shim.shim.log.log_manager import TopicPartition, read_offset_checkpoint, write_offset_checkpoint
from kafka_shim.shim.log.partition_log import PartitionLog
from kafka_shim.shim.partitions.append import expire_idle_producers
from kafka_shim.shim.partitions.manager import Partitions, PartitionState

log = get_logger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
_BACKOFF_DEFAULT_MS = 15_000
_STEP_BUDGET_S = 0.002  # cleaning work between two chances for other work (a request takes a few of them)
_RECHECK_S = 0.5  # how often a resting cleaner looks for changed log.cleaner.* keys


def cleaner_settings(properties: Mapping[str, str]) -> CleanerSettings:
    """The ``log.cleaner.*`` keys as the cleaning reads them; unreadable values keep
    Kafka's defaults (the config layer has validated them)."""
    defaults = CleanerSettings()

    def number(key: str, default: float, kind: type = int) -> float:
        try:
            return kind(properties.get(key, default))
        except ValueError:
            return default

    return CleanerSettings(
        dedupe_buffer_size=int(number("log.cleaner.dedupe.buffer.size", defaults.dedupe_buffer_size)),
        io_buffer_size=int(number("log.cleaner.io.buffer.size", defaults.io_buffer_size)),
        io_buffer_load_factor=float(number("log.cleaner.io.buffer.load.factor", defaults.io_buffer_load_factor, float)),
        threads=int(number("log.cleaner.threads", defaults.threads)),
    )


def cleaner_enabled(properties: Mapping[str, str]) -> bool:
    if properties.get("log.cleaner.enable", "true").strip().lower() == "false":
        return False
    try:
        return int(properties.get("log.cleaner.threads", "1")) > 0
    except ValueError:
        return True


def backoff_ms(properties: Mapping[str, str]) -> int:
    try:
        value = int(properties.get("log.cleaner.backoff.ms", _BACKOFF_DEFAULT_MS))
    except ValueError:
        return _BACKOFF_DEFAULT_MS
    return max(value, 0)


class LogCleaner:
    """What to clean and where each log's dirty section starts; plain state, driven by :func:`run_log_cleaner`."""

    def __init__(self, partitions: Partitions) -> None:
        self.partitions = partitions
        self._clock = partitions.logs.clock
        self.checkpoints: dict[TopicPartition, int] = read_offset_checkpoint(partitions.logs.storage.root(), CLEANER_CHECKPOINT)
        self._uncleanable: dict[TopicPartition, PartitionLog] = {}
        partitions.add_topic_deleted_listener(self._topic_deleted)

    # -- choosing ---------------------------------------------------------------------------------------------------

    def filthiest(self, now_ms: int) -> tuple[PartitionState, LogToClean] | None:
        """grabFilthiestCompactedLog: the dirtiest compacted log that is dirty enough (or overdue), if any."""
        best: tuple[PartitionState, LogToClean] | None = None
        for state in self.partitions:
            partition_log = state.log
            key = (state.topic, state.index)
            if not partition_log.config.compacts or self._uncleanable.get(key) is partition_log:
                continue
            offsets = cleanable_offsets(partition_log, self.checkpoints.get(key), now_ms, state.last_stable_offset)
            if offsets.checkpoint_reset:
                self._set_checkpoint(key, offsets.first_dirty)
            to_clean = LogToClean.of(partition_log, offsets, now_ms)
            if not to_clean.wanted(partition_log.config.min_cleanable_dirty_ratio):
                continue
            if best is None or to_clean.cleanable_ratio > best[1].cleanable_ratio:
                best = (state, to_clean)
        return best

    # -- cleaning ---------------------------------------------------------------------------------------------------

    def clean_steps(self, state: PartitionState, to_clean: LogToClean) -> Iterator[None]:
        """Clean one log, a step per chunk; the checkpoint moves when it is done. Raises CleaningAborted when the
        log was deleted meanwhile."""
        partition_log, key = state.log, (state.topic, state.index)
        settings = cleaner_settings(self.partitions.broker_properties)
        now = self._clock()
        expire_idle_producers(self.partitions, state, now)  # Kafka's scheduler would have run meanwhile
        cleaning = Cleaning(partition_log, to_clean, settings, now_ms=now,
                            active_producers=lambda: _last_records(state))
        log.info("log_cleaning_started", topic=state.topic, partition=state.index, first_dirty=to_clean.first_dirty,
                 first_uncleanable=to_clean.first_uncleanable, cleanable_ratio=round(to_clean.cleanable_ratio, 4))
        for _ in cleaning.run():
            if self.partitions.logs.get(state.topic, state.index) is not partition_log:
                raise CleaningAborted(f"{state.topic}-{state.index} was deleted while it was being cleaned")
            yield
        self._set_checkpoint(key, cleaning.end_offset)
        stats = cleaning.stats
        log.info("log_cleaned", topic=state.topic, partition=state.index, first_dirty=to_clean.first_dirty,
                 end_offset=cleaning.end_offset, segments=stats.segments_cleaned, keys=stats.keys_mapped,
                 records_read=stats.records_read, records_kept=stats.records_kept, bytes_read=stats.bytes_read,
                 bytes_kept=stats.bytes_kept, seconds=round(time.monotonic() - stats.started, 3))

    def mark_uncleanable(self, state: PartitionState, error: BaseException) -> None:
        self._uncleanable[(state.topic, state.index)] = state.log
        log.warning("log_cleaning_failed", topic=state.topic, partition=state.index, error=str(error),
                    hint="the partition is not cleaned again until it is recreated; its old segments are still deleted")

    def delete_old_segments(self) -> int:
        """deletableLogs + deleteOldSegments: retention of the compacted logs."""
        return self.partitions.logs.apply_retention(compacted=True)

    # -- the checkpoint ---------------------------------------------------------------------------------------------

    def _set_checkpoint(self, key: TopicPartition, offset: int) -> None:
        self.checkpoints[key] = offset
        self._write()

    def _topic_deleted(self, topic: str) -> None:
        gone = [key for key in self.checkpoints if key[0] == topic]
        for key in gone:
            del self.checkpoints[key]
        for key in [key for key in self._uncleanable if key[0] == topic]:
            del self._uncleanable[key]
        if gone:
            self._write()

    def _write(self) -> None:
        write_offset_checkpoint(self.partitions.logs.storage.root(), CLEANER_CHECKPOINT, self.checkpoints)


def _last_records(state: PartitionState) -> dict[int, LastRecord]:
    return {
        entry.producer_id: LastRecord(entry.last_offset if entry.last_offset >= 0 else None, entry.epoch)
        for entry in state.producers.entries()
    }


async def run_log_cleaner(partitions: Partitions) -> None:
    """Kafka's cleaner thread on the event loop, until cancelled: clean the filthiest log, delete old segments of
    compacted logs, rest ``log.cleaner.backoff.ms`` when there was nothing to clean. A change of the broker's
    properties (a dynamic ``log.cleaner.*`` key) ends the rest at once, as Kafka restarts its cleaner threads."""
    cleaner: LogCleaner | None = None
    while True:
        properties = partitions.broker_properties
        if not cleaner_enabled(properties):
            await _rest(partitions, properties, None)
            continue
        if cleaner is None:
            cleaner = LogCleaner(partitions)
        try:
            cleaned = await _clean_filthiest(cleaner)
        except Exception as exc:  # choosing a log failed (a vanished file): the cleaner rests and tries again
            log.warning("log_cleaner_pass_failed", error=str(exc))
            cleaned = False
        try:
            deleted = cleaner.delete_old_segments()
            if deleted:
                log.debug("log_chore_done", chore="compacted_retention", count=deleted)
        except Exception as exc:  # a full disk or a vanished file must not end the cleaner
            log.warning("log_chore_failed", chore="compacted_retention", error=str(exc))
        if cleaned:
            await asyncio.sleep(0)
        else:
            await _rest(partitions, properties, backoff_ms(properties))


async def _clean_filthiest(cleaner: LogCleaner) -> bool:
    chosen = cleaner.filthiest(cleaner.partitions.logs.clock())
    if chosen is None:
        return False
    state, to_clean = chosen
    budget_end = time.monotonic() + _STEP_BUDGET_S
    try:
        for _ in cleaner.clean_steps(state, to_clean):
            if time.monotonic() >= budget_end:
                await asyncio.sleep(0)
                budget_end = time.monotonic() + _STEP_BUDGET_S
    except CleaningAborted as exc:
        log.info("log_cleaning_aborted", topic=state.topic, partition=state.index, reason=str(exc))
    except Exception as exc:
        cleaner.mark_uncleanable(state, exc)
    return True


async def _rest(partitions: Partitions, properties: Mapping[str, str], rest_ms: int | None) -> None:
    # Kafka's cleaner thread may spin with log.cleaner.backoff.ms=0; on the event loop the rest must still yield (at
    # least a millisecond), or a cleaner with nothing to clean would never let a request through again
    deadline = None if rest_ms is None else time.monotonic() + max(rest_ms, 1) / 1000
    while partitions.broker_properties is properties:
        left = _RECHECK_S if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(left, _RECHECK_S))

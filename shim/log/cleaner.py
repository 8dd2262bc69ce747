"""Log compaction of one partition log: which part may be cleaned, how dirty it is, and the cleaning itself.

Kafka's counterparts: ``LogCleanerManager.cleanableOffsets`` / ``maxCompactionDelay`` / ``calculateCleanableBytes``,
``LogToClean``, and ``Cleaner.doClean`` with ``buildOffsetMap``, ``groupSegmentsBySize``, ``cleanSegments`` and
``cleanInto`` (core/src/main/scala/kafka/log/LogCleaner*.scala). Facts kept from Kafka 3.9:

- **The dirty section** starts at the cleaner's checkpoint (the log start offset when there is none, or when the
  checkpoint is below the log start or past the log end) and ends, segment-aligned, at the first of: the last stable
  offset, the active segment, the first dirty segment whose largest timestamp is within ``min.compaction.lag.ms``.
- **When**: the log is cleaned when its cleanable bytes over all bytes exceed ``min.cleanable.dirty.ratio``, or
  when some dirty segment's first batch is older than ``max.compaction.lag.ms`` (and there is something to clean).
- **The offset map** holds each key's last offset in the dirty section (records of aborted transactions and control
  batches not counted), at most ``log.cleaner.dedupe.buffer.size`` / 24 bytes times ``log.cleaner.io.buffer.load.factor``
  keys; when full, the cleaning stops at the last offset mapped. Kafka keys it by a 16-byte MD5 of the key (a
  collision is as good as never); here by the key itself.
- **Cleaning** rewrites every segment from the start of the log to the end of the map, in groups whose data fits
  ``segment.bytes`` and whose indexes fit ``segment.index.bytes``, each group into one segment (the first one's base
  offset): a keyed record is kept when it is the key's latest (or past the map), a tombstone also only until its
  batch's delete horizon (``delete.retention.ms`` after the cleaning that first kept it) has passed; records without
  a key go; batches of aborted transactions go; markers follow :mod:`.cleaned_txns`; the last batch of an active
  producer is kept, as an empty header if need be, so its sequence and epoch survive (:mod:`.batch_filter`).
- A cleaned group is written under ``.cleaned`` names, renamed ``.swap``, the old segments deleted, then renamed to
  its final names (``UnifiedLog.replaceSegments``); a crash in between is finished at open (:class:`PartitionLog`).

Plain and synchronous: :meth:`Cleaning.run` is a generator that yields between chunks, so its caller (the broker's
cleaner chore) lets other work in and checks that the log still exists.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.records import RecordBatch, decode_batch
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.batch_filter import BatchRetention, FilteredBatch, filter_batch
from kafka_shim.shim.log.batch_scan import ScannedRecord, StoredBatch, scan_records
from kafka_shim.shim.log.batches import HEADER_SIZE, BatchHeader, parse_header, walk
from kafka_shim.shim.log.cleaned_txns import CleanedTransactions
from kafka_shim.shim.log.errors import CorruptBatch
from kafka_shim.shim.log.partition_log import CLEANED_SUFFIX, CleaningAborted, PartitionLog
from kafka_shim.shim.log.segment import Segment

log = get_logger(__name__)

__all__ = ["CleanerSettings", "Cleaning", "CleaningAborted", "LastRecord", "LogToClean", "cleanable_offsets"]

_INT32_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1
_MAP_ENTRY_BYTES = 16 + 8  # Kafka's SkimpyOffsetMap: an MD5 hash and an offset per slot


@dataclass(frozen=True, slots=True)
class LastRecord:
    """An active producer's last data offset (None after a marker) and epoch (UnifiedLog.lastRecordsOfActiveProducers)."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class CleanerSettings:
    """The broker's ``log.cleaner.*`` keys the cleaning reads (Kafka's CleanerConfig)."""

    dedupe_buffer_size: int = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
    io_buffer_size: int = 512 * 1024  # log.cleaner.io.buffer.size
    io_buffer_load_factor: float = 0.9  # log.cleaner.io.buffer.load.factor
    threads: int = 1  # log.cleaner.threads

    @property
    def map_capacity(self) -> int:
        slots = min(self.dedupe_buffer_size // max(self.threads, 1), _INT32_MAX) // _MAP_ENTRY_BYTES
        return int(slots * self.io_buffer_load_factor)

    @property
    def read_buffer_size(self) -> int:
        return max(self.io_buffer_size // max(self.threads, 1) // 2, HEADER_SIZE)


# -- where the dirty section is --------------------------------------------------------------------------------------


def segments_overlapping(partition_log: PartitionLog, start: int, end: int) -> list[Segment]:
    """UnifiedLog.logSegments(from, to): from the segment holding ``start`` to the last one starting below ``end``."""
    if start >= end:
        return []
    bases = [segment.base_offset for segment in partition_log.segments]
    first = max(bisect.bisect_right(bases, start) - 1, 0)
    stop = bisect.bisect_left(bases, end)
    return partition_log.segments[first:stop]


def inactive_segments_from(partition_log: PartitionLog, offset: int) -> list[Segment]:
    """UnifiedLog.nonActiveLogSegmentsFrom."""
    active = partition_log.active.base_offset
    return [] if offset > active else segments_overlapping(partition_log, offset, active)


@dataclass(frozen=True, slots=True)
class OffsetsToClean:
    first_dirty: int
    first_uncleanable: int
    checkpoint_reset: bool  # the checkpoint was out of range and is to be rewritten


def cleanable_offsets(partition_log: PartitionLog, checkpoint: int | None, now_ms: int,
                      last_stable_offset: int) -> OffsetsToClean:
    """LogCleanerManager.cleanableOffsets."""
    start, end = partition_log.log_start_offset, partition_log.log_end_offset
    first_dirty = start if checkpoint is None else checkpoint
    reset = checkpoint is not None and not start <= checkpoint <= end
    if reset:
        if checkpoint is not None and checkpoint > end:
            log.warning("cleaner_checkpoint_past_log_end", directory=partition_log.directory.name,
                        checkpoint=checkpoint, log_end_offset=end)
        first_dirty = start
    bounds = [last_stable_offset, partition_log.active.base_offset]
    lag = max(partition_log.config.min_compaction_lag_ms, 0)
    if lag > 0:
        recent = next((s for s in inactive_segments_from(partition_log, first_dirty)
                       if s.largest_timestamp() > now_ms - lag), None)
        if recent is not None:
            bounds.append(recent.base_offset)
    return OffsetsToClean(first_dirty, max(first_dirty, min(bounds)), reset)


def max_compaction_delay(partition_log: PartitionLog, first_dirty: int, now_ms: int) -> int:
    """LogCleanerManager.maxCompactionDelay: how far past ``max.compaction.lag.ms`` the oldest dirty segment is."""
    firsts = [s.first_timestamp for s in inactive_segments_from(partition_log, first_dirty)
              if s.first_timestamp is not None and s.first_timestamp > 0]
    earliest = min(firsts, default=_LONG_MAX)
    clean_until = now_ms - max(partition_log.config.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


@dataclass(frozen=True, slots=True)
class LogToClean:
    """Kafka's LogToClean: the dirty section of one log and how dirty the log is."""

    first_dirty: int
    first_uncleanable: int  # aligned to a segment's base offset
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool

    @classmethod
    def of(cls, partition_log: PartitionLog, offsets: OffsetsToClean, now_ms: int) -> LogToClean:
        head = inactive_segments_from(partition_log, offsets.first_uncleanable)
        uncleanable = (head[0] if head else partition_log.active).base_offset
        clean = sum(s.size for s in partition_log.segments if s.base_offset < offsets.first_dirty)
        cleanable = sum(s.size for s in segments_overlapping(partition_log, min(offsets.first_dirty, uncleanable), uncleanable))
        delay = max_compaction_delay(partition_log, offsets.first_dirty, now_ms)
        return cls(offsets.first_dirty, uncleanable, clean, cleanable, delay > 0)

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    def wanted(self, min_cleanable_ratio: float) -> bool:
        """grabFilthiestCompactedLog's filter: something to clean, and dirty enough or overdue."""
        if self.total_bytes <= 0:
            return False
        return (self.needs_compaction_now and self.cleanable_bytes > 0) or self.cleanable_ratio > min_cleanable_ratio


# -- the cleaning ----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class CleanerStats:
    batches_read: int = 0
    records_read: int = 0
    bytes_read: int = 0
    records_kept: int = 0
    bytes_kept: int = 0
    keys_mapped: int = 0
    segments_cleaned: int = 0
    started: float = field(default_factory=time.monotonic)


def group_segments_by_size(segments: list[Segment], max_size: int, max_index_size: int,
                           first_uncleanable: int) -> list[list[Segment]]:
    """Cleaner.groupSegmentsBySize: consecutive segments whose data fits ``segment.bytes`` and whose offset and time
    indexes each fit ``segment.index.bytes``, their offsets within an int32 of the group's last base offset."""
    groups: list[list[Segment]] = []
    at = 0
    while at < len(segments):
        group = [segments[at]]
        size, index_size, time_size = segments[at].size, _index_bytes(segments[at]), _time_index_bytes(segments[at])
        at += 1
        while at < len(segments):
            candidate = segments[at]
            last_offset = segments[at + 1].base_offset - 1 if at + 1 < len(segments) else first_uncleanable - 1
            if not (size + candidate.size <= max_size
                    and index_size + _index_bytes(candidate) <= max_index_size
                    and time_size + _time_index_bytes(candidate) <= max_index_size
                    and (candidate.size == 0 or last_offset - group[-1].base_offset <= _INT32_MAX)):
                break
            group.append(candidate)
            size += candidate.size
            index_size += _index_bytes(candidate)
            time_size += _time_index_bytes(candidate)
            at += 1
        groups.append(group)
    return groups


def _index_bytes(segment: Segment) -> int:
    return len(segment.offset_index) * 8


def _time_index_bytes(segment: Segment) -> int:
    return len(segment.time_index) * 12


class Cleaning:
    """One cleaning of one log (Cleaner.doClean); drive :meth:`run` to the end, then read :attr:`end_offset`."""

    def __init__(self, partition_log: PartitionLog, to_clean: LogToClean, settings: CleanerSettings, *,
                 now_ms: int, active_producers: Callable[[], dict[int, LastRecord]]) -> None:
        self.log = partition_log
        self.to_clean = to_clean
        self.settings = settings
        self.now_ms = now_ms
        self._active_producers = active_producers
        self._map: dict[bytes, int] = {}
        self._latest = -1
        self._buffer = settings.read_buffer_size
        self.end_offset = to_clean.first_dirty
        self.stats = CleanerStats()

    def run(self) -> Iterator[None]:
        yield from self._build_offset_map(self.to_clean.first_dirty, self.to_clean.first_uncleanable)
        self.end_offset = self._latest + 1
        self.stats.keys_mapped = len(self._map)
        config = self.log.config
        groups = group_segments_by_size(segments_overlapping(self.log, 0, self.end_offset), config.segment_bytes,
                                        config.segment_index_bytes, self.to_clean.first_uncleanable)
        transactions = CleanedTransactions()
        for group in groups:
            yield from self._clean_group(group, transactions)

    # -- the offset map ---------------------------------------------------------------------------------------------

    def _build_offset_map(self, start: int, end: int) -> Iterator[None]:
        dirty = segments_overlapping(self.log, start, end)
        next_starts = [segment.base_offset for segment in dirty[1:]] + [end]
        transactions = CleanedTransactions()
        transactions.add_aborted(self.log.collect_aborted_transactions(start, end))
        capacity = self.settings.map_capacity
        for segment, next_start in zip(dirty, next_starts, strict=True):
            for chunk in self._chunks(segment, segment.offset_index.lookup(start)):
                for raw in chunk:
                    header = StoredBatch(raw)
                    if header.is_control:
                        transactions.on_control_batch(_decoded(segment, raw))
                    elif not transactions.on_batch(header):
                        for offset_delta, key, _ in _records_of(segment, raw, header):
                            offset = header.base_offset + offset_delta
                            if key is None or offset < start:
                                continue
                            if len(self._map) >= capacity:
                                log.debug("cleaner_offset_map_full", directory=self.log.directory.name, keys=len(self._map))
                                return
                            self._map[key] = offset
                            self._latest = offset
                    if header.last_offset >= start:
                        self._latest = header.last_offset
                    yield
            self._latest = next_start - 1

    # -- cleaning a group of segments into one --------------------------------------------------------------------

    def _clean_group(self, group: list[Segment], transactions: CleanedTransactions) -> Iterator[None]:
        cleaned = Segment.create(self.log.directory, group[0].base_offset, self.log.config.index_interval_bytes,
                                 self.now_ms, CLEANED_SUFFIX)
        try:
            producers = self._active_producers()
            for at, segment in enumerate(group):
                upper = group[at + 1].base_offset if at + 1 < len(group) else segment.next_offset
                transactions.add_aborted(self.log.collect_aborted_transactions(segment.base_offset, upper))
                for chunk in self._chunks(segment, 0):
                    yield from self._clean_chunk(segment, chunk, cleaned, transactions, producers)
            cleaned.seal()
            cleaned.sync()
            cleaned.directory.set_modified_ms(cleaned.log_file, group[-1].directory.modified_ms(group[-1].log_file))
            self.log.replace_segments(cleaned, group)
            self.stats.segments_cleaned += len(group)
        except BaseException:
            cleaned.delete()
            raise

    def _clean_chunk(self, segment: Segment, chunk: list[memoryview], cleaned: Segment,
                     transactions: CleanedTransactions, producers: dict[int, LastRecord]) -> Iterator[None]:
        """Filter one read chunk, a step per batch, and append what is kept to ``cleaned`` as one chunk."""
        out = bytearray()
        max_timestamp, offset_of_max, max_offset, next_offset = -1, -1, -1, cleaned.next_offset
        now = self.now_ms
        for raw in chunk:
            yield
            header = StoredBatch(raw)
            control = _decoded(segment, raw) if header.is_control else None
            can_discard = transactions.on_control_batch(control) if control is not None else transactions.on_batch(header)
            if control is not None:
                discard_records = can_discard and header.has_delete_horizon and header.base_timestamp <= now
            else:
                discard_records = can_discard
            for txn in transactions.retained_aborts:
                cleaned.txn_index.append(txn)
            transactions.retained_aborts.clear()
            if header.producer_id >= 0 and _last_of_producer(header, producers):
                retention = BatchRetention.RETAIN_EMPTY
            else:
                retention = BatchRetention.DELETE if discard_records else BatchRetention.DELETE_EMPTY
            filtered, records_read = self._filtered(segment, raw, header, control, retention, discard_records,
                                                    can_discard and control is not None)
            self.stats.batches_read += 1
            self.stats.records_read += records_read
            self.stats.bytes_read += len(raw)
            if filtered is None:
                continue
            out += filtered.data
            self.stats.records_kept += filtered.records_kept
            self.stats.bytes_kept += len(filtered.data)
            if filtered.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = filtered.max_timestamp, filtered.offset_of_max_timestamp
            max_offset = max(max_offset, filtered.max_offset)
            next_offset = header.last_offset + 1
        if out:
            cleaned.append_chunk(bytes(out), max_offset, max_timestamp, offset_of_max, next_offset)

    def _filtered(self, segment: Segment, raw: memoryview, header: StoredBatch, control: RecordBatch | None,
                  retention: BatchRetention, discard_records: bool, marker_for_empty_txn: bool) -> tuple[FilteredBatch | None, int]:
        """What the cleaned segment gets of one batch, and how many records it held. A data batch is scanned first:
        copied whole or dropped whole without being decoded when that is the outcome (MemoryRecords.filterTo's
        writeOriginalBatch / DELETE_EMPTY), else decoded and filtered record by record."""
        if retention is BatchRetention.DELETE:
            return None, header.count  # not looked into, as Kafka's filter does not
        keep = self._keep_predicate(header, discard_records)
        if control is None:
            scanned = _records_of(segment, raw, header)
            kept = [record for record in scanned if keep(record)]
            if kept and len(kept) == len(scanned) and (header.has_delete_horizon or not any(t for _, _, t in kept)):
                return FilteredBatch(raw, header.max_timestamp, header.last_offset, header.last_offset, len(kept)), len(scanned)
            if not kept and retention is BatchRetention.DELETE_EMPTY:
                return None, len(scanned)
        batch = control if control is not None else _decoded(segment, raw)
        filtered = filter_batch(raw, batch, retention, lambda r: keep((r.offset_delta, r.key, r.value is None)),
                                marker_for_empty_txn=marker_for_empty_txn, now_ms=self.now_ms,
                                delete_retention_ms=self.log.config.delete_retention_ms)
        return filtered, len(batch.records)

    def _keep_predicate(self, header: StoredBatch, discard_records: bool) -> Callable[[ScannedRecord], bool]:
        if discard_records:
            return lambda _record: False
        if header.is_control:
            return lambda _record: True
        latest, offsets, now = self._latest, self._map, self.now_ms
        keeps_deletes = not header.has_delete_horizon or now < header.base_timestamp
        base = header.base_offset

        def keep(record: ScannedRecord) -> bool:
            offset_delta, key, tombstone = record
            offset = base + offset_delta
            if offset > latest:
                return True
            if key is None:
                return False
            return offset >= offsets.get(key, -1) and (not tombstone or keeps_deletes)

        return keep

    # -- reading ----------------------------------------------------------------------------------------------------

    def _chunks(self, segment: Segment, position: int) -> Iterator[list[memoryview]]:
        """The segment's batches from ``position`` in the chunks Kafka's cleaner reads (its I/O buffer: whole
        batches that fit; the buffer doubles for a batch larger than it, for the rest of the segment)."""
        buffer = self._buffer
        while position < segment.size:
            data = memoryview(segment.read(position, buffer))
            headers: list[BatchHeader] = list(walk(data))
            if not headers:
                if len(data) < HEADER_SIZE:
                    raise CorruptBatch(f"{segment.log_file}: {len(data)} bytes at {position} cannot hold a batch")
                needed = parse_header(data, 0).size
                if needed <= len(data) or position + needed > segment.size:
                    raise CorruptBatch(f"{segment.log_file}: batch of {needed} bytes at {position} is cut off")
                while buffer < needed:
                    buffer *= 2
                continue
            yield [data[header.position : header.position + header.size] for header in headers]
            position += headers[-1].position + headers[-1].size


def _decoded(segment: Segment, raw: memoryview) -> RecordBatch:
    try:
        return decode_batch(raw, as_kafka_reads=True)  # Kafka's cleaner reads stored records as its validator did
    except DecodeError as exc:
        base = int.from_bytes(raw[:8], "big", signed=True)
        raise CorruptBatch(f"{segment.log_file}: the batch at offset {base} cannot be read: {exc}") from exc


def _records_of(segment: Segment, raw: memoryview, header: StoredBatch) -> list[ScannedRecord]:
    scanned = scan_records(raw, header)
    if scanned is not None:
        return scanned
    return [(r.offset_delta, r.key, r.value is None) for r in _decoded(segment, raw).records]


def _last_of_producer(batch: StoredBatch, producers: dict[int, LastRecord]) -> bool:
    last = producers.get(batch.producer_id)
    if last is None:
        return False
    if last.last_data_offset is not None:
        return batch.last_offset == last.last_data_offset
    return batch.is_control and batch.producer_epoch == last.producer_epoch

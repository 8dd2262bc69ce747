"""One partition's log: batches appended with their offsets, read back as stored, kept and trimmed.

Kafka's counterpart: ``UnifiedLog`` over ``LocalLog`` (kafka.log / storage internals): ``appendAsLeader``, ``read``,
``logStartOffset`` / ``logEndOffset`` / ``highWatermark``, ``deleteRecords`` (``maybeIncrementLogStartOffset``),
``fetchOffsetByTimestamp``, ``roll``, ``deleteOldSegments`` and, at open, ``LogLoader`` recovery.

- **Append** takes record batches (magic 2, as a producer sends them, already validated by the caller: CRC,
  sizes, sequence) and stamps offsets, the leader epoch and, for a LogAppendTime topic, the append time
  (:mod:`.batches`). The bytes are stored as they are; nothing is re-encoded.
- **Read** follows ``LogSegment.read``: from the segment holding the offset, starting at the batch that contains
  it (a read from the middle of a batch returns the whole batch), at most ``max_bytes`` except that the first batch
  is always whole; the bytes after it are cut at ``max_bytes`` exactly as Kafka cuts them, so the last batch of a
  read may be partial (clients drop such a tail). A read never crosses into the next segment, and never goes past
  the upper bound (the high watermark by default).
- **High watermark**: a separate notion from the log end offset. On a single node every append is fully replicated
  at once, so it follows the log end offset; the read bound and retention already use it as Kafka does.
- **Aborted transactions** (``LocalLog.collectAbortedTransactions`` / ``addAbortedTransactions``): each segment's
  ``.txnindex`` (:mod:`.txn_index`); a READ_COMMITTED fetch gets the entries overlapping what it read, up to an upper
  bound taken from the offset index exactly as Kafka takes it (:meth:`PartitionLog.aborted_for_read`).
- **Recovery**: at open the last segment is scanned and cut at the first torn or invalid batch, so nothing torn is
  ever served; earlier segments trust their indexes unless those fail the sanity check.
"""

from __future__ import annotations

import bisect
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.records import RecordBatch, TimestampType, decode_batch, decode_batches_with_tail
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log import retention
from kafka_shim.shim.log.batches import HEADER_SIZE, BatchHeader, assign_offsets, check_batch, parse_header
from kafka_shim.shim.log.errors import BatchTooLarge, CorruptBatch, OffsetOutOfRange
from kafka_shim.shim.log.index import NO_TIMESTAMP
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.segment import Segment, base_offset_of
from kafka_shim.shim.log.storage import Directory
from kafka_shim.shim.log.txn_index import AbortedTxn

log = get_logger(__name__)

_INT32_MAX = 2**31 - 1
_BASE_OFFSET, _INT32 = struct.Struct(">q"), struct.Struct(">i")
_LEADER_EPOCH_AT = 12
HIGH_WATERMARK = -1  # DeleteRecords' "up to the high watermark"
# A segment the log cleaner is writing, then one ready to replace the segments it was cleaned from (Kafka's names).
CLEANED_SUFFIX, SWAP_SUFFIX = ".cleaned", ".swap"


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime (what Produce answers)
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class ReadInfo:
    records: bytes | memoryview  # stored bytes (a view only when read(view=True)); may end with a cut batch
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None  # None when the batch carries no epoch (-1)


def _stamped_pieces(view: memoryview, base_offset: int, leader_epoch: int,
                    verify_crc: bool = True) -> tuple[list[bytearray | memoryview], list[BatchHeader]]:
    """assign_offsets without copying the records: each batch as its stamped header (a copy of its first
    HEADER_SIZE bytes) and the rest of it (a view). The same checks as assign_offsets."""
    pieces: list[bytearray | memoryview] = []
    headers: list[BatchHeader] = []
    at, next_offset, end = 0, base_offset, len(view)
    while at < end:
        problem = check_batch(view, at, end - at, verify_crc=verify_crc)
        if problem is not None:
            raise CorruptBatch(f"batch at byte {at}: {problem}")
        header = parse_header(view, at, at)
        if header.last_offset < header.base_offset:
            raise CorruptBatch(f"batch at byte {at}: negative lastOffsetDelta {header.last_offset - header.base_offset}")
        head = bytearray(view[at : at + HEADER_SIZE])
        _BASE_OFFSET.pack_into(head, 0, next_offset)
        _INT32.pack_into(head, _LEADER_EPOCH_AT, leader_epoch)
        stamped = parse_header(head, 0, at)
        pieces += (head, view[at + HEADER_SIZE : at + header.size])
        headers.append(stamped)
        next_offset = stamped.next_offset
        at += header.size
    if not headers:
        raise CorruptBatch("no record batch to append")
    return pieces, headers


class PartitionLog:
    """The segments of one partition, oldest first; the last is the active one appends go to."""

    def __init__(
        self,
        directory: Directory,
        config: LogConfig,
        segments: list[Segment],
        log_start_offset: int,
        clock: Callable[[], int],
    ) -> None:
        self.directory = directory
        self.config = config
        self.segments = segments
        self._clock = clock
        self._log_start_offset = log_start_offset
        self._high_watermark = self.log_end_offset
        self._unflushed_messages = 0
        self._dirty: set[int] = set()  # base offsets of segments written since the last flush
        self.last_flush_ms = clock()

    @classmethod
    def open(
        cls,
        directory: Directory,
        config: LogConfig | None = None,
        *,
        log_start_offset: int = 0,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> PartitionLog:
        """The log stored in ``directory`` (a new, empty one when there is none), its last segment recovered.

        ``log_start_offset`` is the checkpointed log start offset (moved by DeleteRecords); the first segment's base
        offset raises it when retention deleted more.
        """
        config = config or LogConfig()
        swapped = _finish_interrupted_cleaning(directory, config.index_interval_bytes)
        bases = sorted(b for file in directory.list() if (b := base_offset_of(file)) is not None)
        segments = [
            Segment.open(directory, base, config.index_interval_bytes, recover=(index == len(bases) - 1 or base in swapped))
            for index, base in enumerate(bases)
        ]
        if not segments:
            segments = [Segment.create(directory, log_start_offset, config.index_interval_bytes, clock())]
        partition_log = cls(directory, config, segments, max(log_start_offset, segments[0].base_offset), clock)
        if partition_log._log_start_offset > partition_log.log_end_offset:
            # The checkpoint is ahead of what survived (a torn tail): start afresh there, as Kafka's loader does.
            partition_log._truncate_fully_and_start_at(partition_log._log_start_offset)
        return partition_log

    # -- offsets --------------------------------------------------------------------------------------------------

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def size(self) -> int:
        return sum(segment.size for segment in self.segments)

    # -- append ---------------------------------------------------------------------------------------------------

    def append(self, records: bytes | bytearray | memoryview, *, leader_epoch: int = 0, crc_checked: bool = False) -> AppendInfo:
        """Append validated magic-2 batches as the leader: offsets from the log end offset on.

        Each batch must be whole and magic 2, and its CRC must hold; ``crc_checked`` says the caller has verified
        the CRCs already (the produce path's validator did, on these very bytes), so they are not computed twice.
        A ``bytearray`` is stamped in place and handed to the directory (the produce path hands over the buffer it
        validated, so a megabyte is not copied twice more); a ``memoryview`` (which must not change afterwards) is
        handed over in pieces, only the batch headers copied; ``bytes`` are copied first. The in-memory directory
        copies what it is handed into its arenas of warm memory (shim.log.arena) once; a file directory writes it."""
        now = self._clock()
        log_append = self.config.message_timestamp_type is TimestampType.LOG_APPEND_TIME
        data: bytearray | list[bytearray | memoryview]
        if type(records) is memoryview and not log_append:
            # Stamping touches only each batch's first bytes (the CRC does not cover them): the headers are copied
            # and stamped, the rest is stored as the view given, uncopied.
            data, headers = _stamped_pieces(records, self.log_end_offset, leader_epoch, not crc_checked)
        else:
            data = records if type(records) is bytearray else bytearray(records)
            headers = assign_offsets(data, self.log_end_offset, leader_epoch, now if log_append else None,
                                     verify_crc=not crc_checked)
        size = headers[-1].position + headers[-1].size
        if size > self.config.segment_bytes:
            raise BatchTooLarge(
                f"Message batch size is {size} bytes which exceeds the maximum configured segment size of "
                f"{self.config.segment_bytes}."
            )
        self._maybe_roll(size, headers, now)
        self._append_to_active(data, headers)
        # A single node has no followers to wait for: what is appended is fully replicated.
        self._high_watermark = self.log_end_offset
        self._unflushed_messages += headers[-1].last_offset - headers[0].base_offset + 1
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()
        return AppendInfo(headers[0].base_offset, headers[-1].last_offset, now if log_append else -1, self._log_start_offset)

    def _append_to_active(self, data: bytes | bytearray | list[bytearray | memoryview], headers: list[BatchHeader]) -> None:
        self.active.append(data, headers)
        self._dirty.add(self.active.base_offset)

    def _maybe_roll(self, size: int, headers: list[BatchHeader], now: int) -> None:
        # Kafka's LogSegment.shouldRoll; segment.jitter.ms is 0 by default and not modelled.
        segment = self.active
        if segment.is_empty:
            return
        max_timestamp = max(header.max_timestamp for header in headers)
        if segment.first_timestamp is not None and segment.first_timestamp >= 0:
            waited = max_timestamp - segment.first_timestamp
        else:
            waited = now - segment.created_ms
        if (
            segment.size > self.config.segment_bytes - size
            or waited > self.config.segment_ms
            or len(segment.offset_index) >= self.config.max_index_entries
            or len(segment.time_index) >= max(self.config.segment_index_bytes // 12, 1)
            or headers[-1].last_offset - segment.base_offset > _INT32_MAX
        ):
            self.roll()

    def roll(self) -> Segment:
        """Start a new segment at the log end offset (nothing happens when the active one is empty).

        As Kafka does, the segment that stops being active gets its final time index entry and is flushed.
        """
        old = self.active
        if old.is_empty:
            return old
        old.seal()
        old.sync()
        self._dirty.discard(old.base_offset)
        segment = Segment.create(self.directory, old.next_offset, self.config.index_interval_bytes, self._clock())
        self.segments.append(segment)
        log.debug("log_rolled", directory=self.directory.name, base_offset=segment.base_offset)
        return segment

    # -- read -----------------------------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, upper_bound: int | None = None, min_one_batch: bool = True,
             view: bool = False) -> ReadInfo:
        """Stored bytes from the batch holding ``offset``: at most ``max_bytes``, the first batch whole when
        ``min_one_batch``; only batches below ``upper_bound`` (the high watermark by default). ``view``: a read-only
        view of the stored bytes where they need no copy (the in-memory log), for a caller that only sends them."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes {max_bytes} is negative")
        upper = self._high_watermark if upper_bound is None else min(upper_bound, self.log_end_offset)
        if offset < self._log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRange(
                f"Received request for offset {offset} for partition {self.directory.name}, but we only have log "
                f"segments in the range {self._log_start_offset} to {self.log_end_offset}."
            )
        records = b""
        if offset < upper:
            first = max(bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1, 0)
            for segment in self.segments[first:]:
                if segment.base_offset >= upper:
                    break
                end = segment.size if upper >= segment.next_offset else self._position_of(segment, upper)
                header = segment.locate(offset, end)
                if header is None:
                    continue
                size = max(max_bytes, header.size) if min_one_batch else max_bytes
                read = segment.read_view if view else segment.read
                records = read(header.position, min(end - header.position, size)) if size else b""
                break
        return ReadInfo(records, self._high_watermark, self._log_start_offset, self.log_end_offset)

    # -- aborted transactions -----------------------------------------------------------------------------------

    def add_aborted_txn(self, txn: AbortedTxn) -> None:
        """LogSegment.updateTxnIndex: record a transaction whose ABORT marker was just appended (in the active
        segment)."""
        self.active.txn_index.append(txn)
        self._dirty.add(self.active.base_offset)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """UnifiedLog.collectAbortedTransactions: from the segment holding ``start_offset`` on, the aborted
        transactions that overlap [start_offset, upper_bound_offset), until a segment's search is complete."""
        first = bisect.bisect_right([s.base_offset for s in self.segments], start_offset) - 1
        return self._collect_from(first, start_offset, upper_bound_offset) if first >= 0 else []

    def aborted_for_read(self, offset: int, fetched_size: int, max_offset: int) -> list[AbortedTxn]:
        """The aborted transactions Kafka's LocalLog.read attaches to a READ_COMMITTED read from ``offset`` that
        returned ``fetched_size`` bytes, bounded by ``max_offset`` (the last stable offset): none when ``offset`` is at
        or past the bound; else, in the segment the read came from (the first from the floor segment on that holds a
        batch at or after ``offset``), the upper bound is the offset of the first offset-index entry at or after the
        end of the read, else the next segment's base offset, else the log end offset."""
        if offset >= max_offset:
            return []
        first = bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1
        for at in range(max(first, 0), len(self.segments)):
            segment = self.segments[at]
            header = segment.locate(offset)
            if header is None:
                continue
            upper = segment.fetch_upper_bound_offset(header.position + fetched_size)
            if upper is None:
                upper = self.segments[at + 1].base_offset if at + 1 < len(self.segments) else self.log_end_offset
            return self._collect_from(at, offset, upper)
        return []

    def _collect_from(self, at: int, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        found: list[AbortedTxn] = []
        for segment in self.segments[at:]:
            entries, complete = segment.txn_index.collect(start_offset, upper_bound_offset)
            found += entries
            if complete:
                break
        return found

    @staticmethod
    def _position_of(segment: Segment, offset: int) -> int:
        # The bound is a batch boundary (the high watermark), so the batch holding it starts at it.
        header = segment.locate(offset)
        return segment.size if header is None else header.position

    # -- log start offset, timestamps -------------------------------------------------------------------------------

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (``-1``: the high watermark); returns the new
        log start offset (the partition's low watermark). Whole segments below it go at the next retention pass."""
        target = self._high_watermark if offset == HIGH_WATERMARK else offset
        if target < 0 or target > self._high_watermark:
            raise OffsetOutOfRange(
                f"Cannot increment the log start offset to {offset} of partition {self.directory.name} since it is "
                f"larger than the high watermark {self._high_watermark}"
            )
        self._log_start_offset = max(self._log_start_offset, target)
        return self._log_start_offset

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets by timestamp: the first record at or after the log start offset whose timestamp is >=
        ``timestamp``, found through the time index of the first segment that reaches it; None when none does."""
        segment = next((s for s in self.segments if s.largest_timestamp() >= timestamp), None)
        if segment is None:
            return None
        start = max(segment.time_index.lookup(timestamp), self._log_start_offset)
        for header in segment.batches_from(segment.offset_index.lookup(start)):
            if header.max_timestamp < timestamp:
                continue
            for record_timestamp, record_offset, epoch in self._records_of(segment, header):
                if record_timestamp >= timestamp and record_offset >= self._log_start_offset:
                    return TimestampAndOffset(record_timestamp, record_offset, epoch)
        return None

    def max_timestamp(self) -> TimestampAndOffset | None:
        """ListOffsets MAX_TIMESTAMP (KIP-734): the largest timestamp and the first record that carries it."""
        segment = max(self.segments, key=lambda s: s.max_timestamp)  # the first of equals, as Kafka's maxBy
        if segment.max_timestamp == NO_TIMESTAMP and segment.is_empty:
            return None
        position = segment.offset_index.lookup(segment.offset_of_max_timestamp)
        for header in segment.batches_from(position):
            if header.max_timestamp == segment.max_timestamp:
                for record_timestamp, record_offset, epoch in self._records_of(segment, header):
                    if record_timestamp == header.max_timestamp:
                        return TimestampAndOffset(record_timestamp, record_offset, epoch)
                return None
        return None

    @staticmethod
    def _records_of(segment: Segment, header: BatchHeader) -> list[tuple[int, int, int | None]]:
        """(timestamp, offset, leader epoch) of each record of a stored batch."""
        try:
            batch = decode_batch(segment.read(header.position, header.size), as_kafka_reads=True)
        except DecodeError as exc:
            raise CorruptBatch(f"stored batch at {segment.log_file}:{header.position} cannot be read: {exc}") from exc
        epoch = batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else None
        log_append = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        return [
            (
                batch.max_timestamp if log_append else batch.base_timestamp + record.timestamp_delta,
                batch.base_offset + record.offset_delta,
                epoch,
            )
            for record in batch.records
        ]

    # -- retention ------------------------------------------------------------------------------------------------

    def apply_retention(self) -> int:
        """Delete the old segments that ``retention.ms``, ``retention.bytes`` and the log start offset let go
        (:mod:`.retention`); returns how many were deleted."""
        now = self._clock()
        rules: list[Callable[[], retention.Rule | None]] = [lambda: retention.by_log_start_offset(self._log_start_offset)]
        if self.config.deletes:
            rules += [
                lambda: retention.by_time(now, self.config.retention_ms),
                lambda: retention.by_size(self.segments, self.config.retention_bytes),
            ]
        deleted = 0
        for make_rule in rules:
            rule = make_rule()
            if rule is None:
                continue
            chosen = retention.deletable(self.segments, self._high_watermark, self.log_end_offset, rule)
            if chosen:
                self._delete_segments(chosen)
                deleted += len(chosen)
        return deleted

    def _delete_segments(self, chosen: list[Segment]) -> None:
        if len(chosen) == len(self.segments):
            self.roll()
        for segment in chosen:
            self.segments.remove(segment)
            segment.delete()
            self._dirty.discard(segment.base_offset)
        self._log_start_offset = max(self._log_start_offset, self.segments[0].base_offset)
        log.info(
            "log_segments_deleted", directory=self.directory.name, count=len(chosen), log_start_offset=self._log_start_offset
        )

    def replace_segments(self, cleaned: Segment, old: list[Segment]) -> None:
        """UnifiedLog.replaceSegments for the log cleaner: ``cleaned`` (written under ``.cleaned`` names) takes the
        place of the consecutive segments ``old``; renamed ``.swap`` before they are deleted, so that a crash at any
        point leaves either the old segments or the new one at open."""
        at = next((i for i, segment in enumerate(self.segments) if segment is old[0]), None)
        if at is None or self.segments[at : at + len(old)] != old or old[-1] is self.active:
            raise CleaningAborted(f"the segments of {self.directory.name} cleaned from offset {old[0].base_offset} changed")
        cleaned.rename_temporary(SWAP_SUFFIX)
        _sync_directory(self.directory)
        for segment in old:
            segment.delete()
            self._dirty.discard(segment.base_offset)
        cleaned.rename_temporary("")
        _sync_directory(self.directory)
        self.segments[at : at + len(old)] = [cleaned]

    def _truncate_fully_and_start_at(self, offset: int) -> None:
        for segment in self.segments:
            segment.delete()
        self.segments = [Segment.create(self.directory, offset, self.config.index_interval_bytes, self._clock())]
        self._log_start_offset = offset
        self._high_watermark = offset

    # -- durability -----------------------------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync every segment written since the last flush (a no-op in memory)."""
        for segment in self.segments:
            if segment.base_offset in self._dirty:
                segment.sync()
        self._dirty.clear()
        self._unflushed_messages = 0
        self.last_flush_ms = self._clock()

    def close(self) -> None:
        """A clean shutdown: the active segment's time index gets its last entry, everything is flushed."""
        self.active.seal()
        self._dirty.add(self.active.base_offset)
        self.flush()
        self.directory.close()


class CleaningAborted(Exception):
    """The log changed under a cleaning (its segments were deleted or replaced): the cleaned copy is dropped."""


def _sync_directory(directory: Directory) -> None:
    sync = getattr(directory, "sync_directory", None)
    if sync is not None:
        sync()


def _finish_interrupted_cleaning(directory: Directory, index_interval_bytes: int) -> set[int]:
    """LogLoader's part for a cleaning a crash interrupted: ``.cleaned`` files are dropped (the old segments are
    whole); a ``.swap`` segment replaces the segments it covers and takes its final names. Returns the base offsets
    of the segments swapped in (their indexes are rebuilt)."""
    files = directory.list()
    for file in files:
        if file.endswith(CLEANED_SUFFIX):
            directory.delete(file)
    swapped: set[int] = set()
    for file in files:
        base = base_offset_of(file.removesuffix(SWAP_SUFFIX)) if file.endswith(SWAP_SUFFIX) else None
        if base is None:
            continue
        swap = Segment.open(directory, base, index_interval_bytes, recover=True, temporary_suffix=SWAP_SUFFIX)
        for other in directory.list():
            old_base = base_offset_of(other)
            if old_base is not None and base <= old_base < max(swap.next_offset, base + 1):
                Segment(directory, old_base, index_interval_bytes, 0).delete()
        swap.rename_temporary("")
        swapped.add(base)
        log.warning("log_cleaning_swap_completed", directory=directory.name, base_offset=base)
    return swapped


def decoded_batches(partition_log: PartitionLog, chunk_bytes: int = 1 << 20) -> Iterator[RecordBatch]:
    """Every batch of a log from its start, decoded, read in chunks of at least ``chunk_bytes`` (a coordinator's
    load of __consumer_offsets or __transaction_state)."""
    offset, end = partition_log.log_start_offset, partition_log.log_end_offset
    while offset < end:
        batches, _ = decode_batches_with_tail(partition_log.read(offset, chunk_bytes, upper_bound=end).records)
        if not batches:
            return
        yield from batches
        offset = batches[-1].last_offset + 1

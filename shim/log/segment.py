"""One log segment: a ``.log`` file of stored batches with its ``.index``, ``.timeindex`` and ``.txnindex``.

Kafka's counterparts: ``LogSegment`` (append, read, recover, ``onBecomeInactiveSegment``) and ``LogFileUtils``
(file names: the segment's base offset as 20 zero-padded digits, then ``.log``, ``.index``, ``.timeindex``).
Facts kept from Kafka 3.9:

- an index entry is added before appending a batch when more than ``index.interval.bytes`` were written since the
  previous entry; the offset entry is (the batch's last offset, the batch's start position) and the time entry is
  (largest timestamp so far, last offset of the batch that holds it), the latter only when that timestamp grew;
- when the segment stops being active (rolled) or is closed, the time index gets the largest timestamp so far
  if it is not there yet, so it always ends with the segment's max timestamp;
- the ``.txnindex`` (:mod:`.txn_index`) lists the transactions aborted by markers in this segment; it is deleted
  with the segment, and recovery drops the entries whose marker it cut off (the producer-state replay writes back
  any entry of a surviving marker that is missing, as Kafka's recovery rebuilds the index);
- recovery reads every batch from the start, stops at the first that is torn or invalid (length past the end,
  magic, CRC), cuts the file there and rebuilds both indexes.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.batches import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, check_batch, parse_header, walk
from kafka_shim.shim.log.errors import StorageFailure
from kafka_shim.shim.log.index import NO_TIMESTAMP, OffsetIndex, TimeIndex
from kafka_shim.shim.log.storage import Directory
from kafka_shim.shim.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

log = get_logger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
_READ_CHUNK = 64 * 1024
_INT32_MAX = 2**31 - 1


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's ``LogFileUtils.filenamePrefixFromOffset`` + suffix: ``00000000000000000042.log``."""
    return f"{base_offset:020d}{suffix}"


def base_offset_of(file: str) -> int | None:
    """The base offset a ``.log`` file name carries, or None for any other file."""
    stem, dot, suffix = file.partition(".")
    if dot and "." + suffix == LOG_SUFFIX and len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


class Segment:
    """Batches from ``base_offset`` on, in one ``.log`` file of a partition directory."""

    def __init__(self, directory: Directory, base_offset: int, index_interval_bytes: int, created_ms: int,
                 temporary_suffix: str = "") -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        # A segment being written by the log cleaner has its files under temporary names (Kafka's .cleaned, .swap).
        self.temporary_suffix = temporary_suffix
        self.log_file = file_name(base_offset, LOG_SUFFIX) + temporary_suffix
        self.offset_index = OffsetIndex(directory, file_name(base_offset, INDEX_SUFFIX) + temporary_suffix, base_offset)
        self.time_index = TimeIndex(directory, file_name(base_offset, TIME_INDEX_SUFFIX) + temporary_suffix, base_offset)
        self.txn_index = TransactionIndex(directory, file_name(base_offset, TXN_INDEX_SUFFIX) + temporary_suffix)
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        # The first batch's max timestamp: what segment.ms measures from (Kafka's rollingBasedTimestamp).
        self.first_timestamp: int | None = None
        self._bytes_since_index_entry = 0

    # -- creation and loading -------------------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Directory, base_offset: int, index_interval_bytes: int, now_ms: int,
               temporary_suffix: str = "") -> Segment:
        segment = cls(directory, base_offset, index_interval_bytes, now_ms, temporary_suffix)
        for file in (segment.log_file, segment.offset_index.file, segment.time_index.file):
            directory.truncate(file, 0)
        segment.txn_index.delete()  # a stale one of an earlier segment at this offset
        return segment

    @classmethod
    def open(cls, directory: Directory, base_offset: int, index_interval_bytes: int, *, recover: bool,
             temporary_suffix: str = "") -> Segment:
        """A segment already stored. ``recover`` (the last segment) scans and cuts it; other segments trust their
        indexes unless those fail the sanity check, as Kafka does after a clean shutdown."""
        created = directory.modified_ms(file_name(base_offset, LOG_SUFFIX) + temporary_suffix)
        segment = cls(directory, base_offset, index_interval_bytes, created, temporary_suffix)
        segment.size = directory.size(segment.log_file)
        segment.txn_index.load()
        if recover or not (segment.offset_index.load() and segment.time_index.load()):
            segment.recover()
        else:
            segment._load_tail()
        return segment

    def _load_tail(self) -> None:
        # Kafka's readNextOffset: from the last index entry, walk to the end for the last batch.
        last = None
        for header in self.batches_from(self.offset_index.last_position()):
            last = header
        if last is not None:
            self.next_offset = last.next_offset
        timestamp, offset = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = timestamp, offset
        first = next(self.batches_from(0), None)
        self.first_timestamp = None if first is None else first.max_timestamp
        self._bytes_since_index_entry = self.size - self.offset_index.last_position() if len(self.offset_index) else self.size

    def recover(self) -> int:
        """Rebuild the indexes from the log, cutting it at the first batch that is torn or invalid. Returns the
        number of bytes cut."""
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp, self.offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
        self.next_offset, self.first_timestamp = self.base_offset, None
        stored = self.directory.size(self.log_file)
        valid = 0
        last_index_entry = 0
        problem = None
        while valid < stored:
            head = self.directory.read(self.log_file, valid, HEADER_SIZE)
            if len(head) < LOG_OVERHEAD:
                problem = f"{len(head)} bytes cannot hold a batch length"
                break
            length = int.from_bytes(head[8:12], "big", signed=True)
            data = self.directory.read(self.log_file, valid, LOG_OVERHEAD + max(length, 0))
            problem = check_batch(data, 0, len(data))
            if problem is None and parse_header(data, 0, valid).last_offset - self.base_offset > _INT32_MAX:
                problem = "offset does not fit the segment's relative offsets"
            if problem is not None:
                break
            header = parse_header(data, 0, valid)
            if self.first_timestamp is None:
                self.first_timestamp = header.max_timestamp
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
            if valid - last_index_entry > self.index_interval_bytes:
                self.offset_index.append(header.last_offset, valid)
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                last_index_entry = valid
            valid += header.size
            self.next_offset = header.next_offset
        cut = stored - valid
        if cut:
            log.warning(
                "log_segment_truncated",
                directory=self.directory.name,
                segment=self.log_file,
                position=valid,
                bytes=cut,
                reason=problem,
            )
            self.directory.truncate(self.log_file, valid)
        self.size = valid
        self.txn_index.truncate_to(self.next_offset)
        self._bytes_since_index_entry = valid - last_index_entry
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        return cut

    # -- writing --------------------------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | list[bytearray | memoryview], headers: list[BatchHeader]) -> None:
        """Store ``data`` (the batches ``headers`` describe, positions relative to ``data``) at the end.

        When the storage fails (a full disk), the segment is put back as it was before raising, so the log stays
        whole and the producer gets an error."""
        before = (
            self.size,
            self.next_offset,
            self.max_timestamp,
            self.offset_of_max_timestamp,
            self.first_timestamp,
            self._bytes_since_index_entry,
            len(self.offset_index),
            len(self.time_index),
        )
        try:
            self._append(data, headers)
        except StorageFailure:
            self._restore(before)
            raise

    def _append(self, data: bytes | bytearray | list[bytearray | memoryview], headers: list[BatchHeader]) -> None:
        position = self.size
        if type(data) is list:  # a batch's stamped header and its records, kept apart (PartitionLog.append)
            self.directory.append(self.log_file, data)  # in one call: stored back to back, read as one chunk
            size = sum(len(piece) for piece in data)
        else:
            self.directory.append(self.log_file, data)
            size = len(data)
        for header in headers:
            at = position + header.position
            if self.first_timestamp is None:
                self.first_timestamp = header.max_timestamp
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
            if self._bytes_since_index_entry > self.index_interval_bytes:
                self.offset_index.append(header.last_offset, at)
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                self._bytes_since_index_entry = 0
            self._bytes_since_index_entry += header.size
        self.size += size
        self.next_offset = headers[-1].next_offset

    def append_chunk(self, data: bytes, largest_offset: int, largest_timestamp: int, offset_of_max_timestamp: int,
                     next_offset: int) -> None:
        """LogSegment.append as the log cleaner calls it: a chunk of batches with one index entry at most (the
        chunk's largest offset at its position), ``next_offset`` the offset after the chunk's last batch."""
        if not data:
            return
        position = self.size
        if position == 0:
            self.first_timestamp = largest_timestamp
        self.directory.append(self.log_file, data)
        if largest_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = largest_timestamp, offset_of_max_timestamp
        if self._bytes_since_index_entry > self.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += len(data)
        self.size += len(data)
        self.next_offset = next_offset

    def _restore(self, before: tuple[int, int, int, int, int | None, int, int, int]) -> None:
        size, next_offset, max_ts, max_ts_offset, first_ts, since_index, offset_entries, time_entries = before
        self.size, self.next_offset, self.max_timestamp, self.offset_of_max_timestamp = size, next_offset, max_ts, max_ts_offset
        self.first_timestamp, self._bytes_since_index_entry = first_ts, since_index
        try:
            self.directory.truncate(self.log_file, size)
            self.offset_index.keep(offset_entries)
            self.time_index.keep(time_entries)
        except StorageFailure:
            log.error("log_segment_rollback_failed", directory=self.directory.name, segment=self.log_file)

    def seal(self) -> None:
        """The segment stops being active (rolled) or is closed: the time index ends with the max timestamp."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def truncate_to_position(self, size: int) -> None:
        self.directory.truncate(self.log_file, size)
        self.offset_index.truncate_to_position(size)
        self.size = size

    def sync(self) -> None:
        for file in (self.log_file, self.offset_index.file, self.time_index.file):
            self.directory.sync(file)
        self.txn_index.sync()

    def delete(self) -> None:
        for file in (self.log_file, self.offset_index.file, self.time_index.file):
            self.directory.delete(file)
        self.txn_index.delete()

    def rename_temporary(self, temporary_suffix: str) -> None:
        """Move the segment's files to another temporary suffix, or to their final names with ``""``."""
        def renamed(file: str) -> str:
            return file.removesuffix(self.temporary_suffix) + temporary_suffix

        # The .log file last: at open, a segment is its .log file, and its indexes are rebuilt if they are missing.
        if self.directory.exists(self.txn_index.file):
            self.directory.rename(self.txn_index.file, renamed(self.txn_index.file))
        else:
            self.directory.delete(renamed(self.txn_index.file))  # a stale index of the segment being replaced
        self.txn_index.file = renamed(self.txn_index.file)
        for holder, attribute in ((self.offset_index, "file"), (self.time_index, "file"), (self, "log_file")):
            old = getattr(holder, attribute)
            self.directory.rename(old, renamed(old))
            setattr(holder, attribute, renamed(old))
        self.temporary_suffix = temporary_suffix

    # -- reading --------------------------------------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    def largest_timestamp(self) -> int:
        """Kafka's ``largestTimestamp``: the max timestamp, or the file's modification time when there is none."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.directory.modified_ms(self.log_file)

    def read(self, position: int, size: int) -> bytes:
        return self.directory.read(self.log_file, position, size)

    def read_view(self, position: int, size: int) -> bytes | memoryview:
        """:meth:`read`, uncopied where the directory can (Directory.read_view)."""
        return self.directory.read_view(self.log_file, position, size)

    def batches_from(self, position: int, end: int | None = None) -> Iterator[BatchHeader]:
        """The headers of the batches from byte ``position`` to ``end`` (the segment's size by default)."""
        end = self.size if end is None else end
        while end - position >= HEADER_SIZE:
            chunk = self.read(position, min(_READ_CHUNK, end - position))
            consumed = 0
            for header in walk(chunk, position):
                yield header
                consumed = header.position + header.size - position
            if consumed == 0:
                # The batch is longer than the chunk: step over it from its header alone.
                header = parse_header(chunk, 0, position)
                yield header
                consumed = header.size
            position += consumed

    def fetch_upper_bound_offset(self, position: int) -> int | None:
        """OffsetIndex.fetchUpperBoundOffset: the offset of the first index entry at or after byte ``position``."""
        index = self.offset_index
        slot = bisect.bisect_left(index.positions, position)
        return index.offsets[slot] if slot < len(index.offsets) else None

    def locate(self, offset: int, end: int | None = None) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (the batch holding it), or None past the end."""
        start = self.offset_index.lookup(offset)
        for header in self.batches_from(start, end):
            if header.last_offset >= offset:
                return header
        return None

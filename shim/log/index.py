"""A segment's sparse indexes, kept in memory and mirrored into Kafka's index files.

Kafka's counterparts: ``OffsetIndex`` (``.index``: 8-byte entries, relative offset int32 + file position int32)
and ``TimeIndex`` (``.timeindex``: 12-byte entries, timestamp int64 + relative offset int32), both
``AbstractIndex`` subclasses, big-endian. Kafka preallocates index files (``segment.index.bytes``) and trims them
when a segment stops being active; these files always hold exactly their entries, which is what Kafka trims them to
and what it reads back (an existing index file has ``length / entrySize`` entries).

Entries are added by the segment: one offset entry (the batch's last offset, the batch's position) and at most one
time entry each time more than ``index.interval.bytes`` of log were written since the previous one.
"""

from __future__ import annotations

import bisect
import itertools
import struct

from kafka_shim.shim.log.storage import Directory

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP


class OffsetIndex:
    """Offset → byte position of a batch at or before it; entries ascend in both."""

    def __init__(self, directory: Directory, file: str, base_offset: int) -> None:
        self.directory = directory
        self.file = file
        self.base_offset = base_offset
        self.offsets: list[int] = []  # absolute
        self.positions: list[int] = []

    def load(self) -> bool:
        """Read the file; False when it fails Kafka's sanity check (the caller then rebuilds it)."""
        data = self.directory.read(self.file, 0, self.directory.size(self.file))
        if len(data) % _OFFSET_ENTRY.size:
            return False
        entries = [(self.base_offset + relative, position) for relative, position in _OFFSET_ENTRY.iter_unpack(data)]
        if any(later[0] <= earlier[0] or later[1] <= earlier[1] for earlier, later in itertools.pairwise(entries)):
            return False
        if entries and entries[0][0] < self.base_offset:
            return False
        self.offsets = [offset for offset, _ in entries]
        self.positions = [position for _, position in entries]
        return True

    def __len__(self) -> int:
        return len(self.offsets)

    def append(self, offset: int, position: int) -> None:
        self.directory.append(self.file, _OFFSET_ENTRY.pack(offset - self.base_offset, position))
        self.offsets.append(offset)
        self.positions.append(position)

    def lookup(self, offset: int) -> int:
        """The position of the last entry whose offset is <= ``offset`` (0 when there is none)."""
        slot = bisect.bisect_right(self.offsets, offset) - 1
        return self.positions[slot] if slot >= 0 else 0

    def last_position(self) -> int:
        return self.positions[-1] if self.positions else 0

    def truncate_to_position(self, size: int) -> None:
        """Drop the entries that point at or past byte ``size`` of the log."""
        self.keep(bisect.bisect_left(self.positions, size))

    def reset(self) -> None:
        # The file may hold entries never loaded (a segment recovered without reading its index).
        self.keep(0)
        self.directory.truncate(self.file, 0)

    def keep(self, count: int) -> None:
        """Keep the first ``count`` entries, in memory and in the file."""
        if count < len(self.offsets):
            del self.offsets[count:], self.positions[count:]
            self.directory.truncate(self.file, count * _OFFSET_ENTRY.size)


class TimeIndex:
    """Timestamp → the offset of the batch holding the largest timestamp so far; both ascend strictly."""

    def __init__(self, directory: Directory, file: str, base_offset: int) -> None:
        self.directory = directory
        self.file = file
        self.base_offset = base_offset
        self.timestamps: list[int] = []
        self.offsets: list[int] = []  # absolute

    def load(self) -> bool:
        data = self.directory.read(self.file, 0, self.directory.size(self.file))
        if len(data) % _TIME_ENTRY.size:
            return False
        entries = [(timestamp, self.base_offset + relative) for timestamp, relative in _TIME_ENTRY.iter_unpack(data)]
        if any(later[0] <= earlier[0] or later[1] < earlier[1] for earlier, later in itertools.pairwise(entries)):
            return False
        if entries and entries[-1][1] < self.base_offset:
            return False
        self.timestamps = [timestamp for timestamp, _ in entries]
        self.offsets = [offset for _, offset in entries]
        return True

    def __len__(self) -> int:
        return len(self.timestamps)

    def last_entry(self) -> tuple[int, int]:
        """Kafka's ``lastEntry``: (NO_TIMESTAMP, base offset) when empty."""
        if not self.timestamps:
            return NO_TIMESTAMP, self.base_offset
        return self.timestamps[-1], self.offsets[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add an entry only when ``timestamp`` is larger than the last one (Kafka's ``maybeAppend``)."""
        if timestamp > self.last_entry()[0]:
            self.directory.append(self.file, _TIME_ENTRY.pack(timestamp, offset - self.base_offset))
            self.timestamps.append(timestamp)
            self.offsets.append(offset)

    def lookup(self, timestamp: int) -> int:
        """The offset of the last entry whose timestamp is <= ``timestamp`` (the base offset when there is none)."""
        slot = bisect.bisect_right(self.timestamps, timestamp) - 1
        return self.offsets[slot] if slot >= 0 else self.base_offset

    def truncate_to_offset(self, offset: int) -> None:
        """Drop the entries for offsets >= ``offset``."""
        self.keep(bisect.bisect_left(self.offsets, offset))

    def reset(self) -> None:
        # The file may hold entries never loaded (a segment recovered without reading its index).
        self.keep(0)
        self.directory.truncate(self.file, 0)

    def keep(self, count: int) -> None:
        """Keep the first ``count`` entries, in memory and in the file."""
        if count < len(self.timestamps):
            del self.timestamps[count:], self.offsets[count:]
            self.directory.truncate(self.file, count * _TIME_ENTRY.size)

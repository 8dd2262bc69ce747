"""A segment's aborted transactions: Kafka's ``.txnindex`` file, beside the segment's ``.log``.

Kafka's counterparts: ``TransactionIndex`` and ``AbortedTxn`` (storage internals). Facts kept from Kafka 3.9:

- one 34-byte entry per aborted transaction whose ABORT marker is in this segment: version int16 (0), producer id
  int64, first offset int64, last offset int64 (the marker's offset), last stable offset int64 (the LSO once the
  transaction completed), appended in marker order, so ``kafka-dump-log.sh --files x.txnindex`` reads the file;
- the file exists only once an entry was written (Kafka opens its channel lazily), and goes with its segment;
- ``collectAbortedTxns(fetchOffset, upperBoundOffset)``: every entry with ``lastOffset >= fetchOffset`` and
  ``firstOffset < upperBoundOffset``; the search is complete (later segments need not be read) at the first entry
  whose last stable offset is ``>= upperBoundOffset``;
- a file whose size is not a multiple of 34 fails the sanity check; kafka-shim then drops the torn tail (Kafka
  rebuilds the index by recovering the segment, which gives the same entries).

The entries are also kept in memory (parsed once at open), so a fetch does not read the file; with the in-memory
storage the file is memory too.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.storage import Directory

log = get_logger(__name__)

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The aborted transactions of one segment, in the order their markers were written."""

    def __init__(self, directory: Directory, file: str) -> None:
        self.directory = directory
        self.file = file
        self.entries: list[AbortedTxn] = []

    def load(self) -> None:
        """Read the file if there is one; a torn tail (not a whole entry) is cut off."""
        if not self.directory.exists(self.file):
            self.entries = []
            return
        size = self.directory.size(self.file)
        whole = size - size % ENTRY_SIZE
        data = self.directory.read(self.file, 0, whole)
        self.entries = [AbortedTxn(pid, first, last, lso) for _v, pid, first, last, lso in _ENTRY.iter_unpack(data)]
        if whole != size:
            log.warning("txn_index_truncated", directory=self.directory.name, file=self.file, bytes=size - whole)
            self.directory.truncate(self.file, whole)

    def append(self, txn: AbortedTxn) -> None:
        """TransactionIndex.append: entries must come in marker order (their last offsets ascend)."""
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"aborted transaction {txn} is not after the last entry {self.entries[-1]} of {self.file}")
        self.directory.append(self.file, _ENTRY.pack(_VERSION, *txn))
        self.entries.append(txn)

    def has_marker_at(self, last_offset: int) -> bool:
        return any(entry.last_offset == last_offset for entry in reversed(self.entries))

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """TransactionIndex.collectAbortedTxns: the overlapping entries and whether the search is complete."""
        found = []
        for entry in self.entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """TransactionIndex.truncateTo: drop the entries whose marker is at or past ``offset``."""
        keep = len(self.entries)
        while keep and self.entries[keep - 1].last_offset >= offset:
            keep -= 1
        if keep < len(self.entries):
            del self.entries[keep:]
            self.directory.truncate(self.file, keep * ENTRY_SIZE)

    def sync(self) -> None:
        if self.entries:
            self.directory.sync(self.file)

    def delete(self) -> None:
        self.entries = []
        self.directory.delete(self.file)

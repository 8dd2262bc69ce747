"""What the log cleaner knows of transactions while it walks a log: which batches belong to aborted transactions
(they are dropped) and when a marker may go.

Kafka's counterpart: ``CleanedTransactionMetadata`` in ``LogCleaner.scala``. The aborted transactions of the
segments being read come from their ``.txnindex``; a data batch of a producer whose aborted transaction has begun
is discarded; an ABORT marker is kept while some batch of its transaction was seen in this pass (and its entry goes
to the cleaned segment's ``.txnindex``), a COMMIT marker while some batch of its transaction was seen. A marker that
may go is first kept until its delete horizon passes (the caller's part).
"""

from __future__ import annotations

import heapq
import struct

from kafka_shim.protocol.records import RecordBatch
from kafka_shim.shim.log.batch_scan import StoredBatch
from kafka_shim.shim.log.txn_index import AbortedTxn

_CONTROL_KEY = struct.Struct(">hh")  # version, type
ABORT, COMMIT = 0, 1


def control_type(batch: RecordBatch) -> int | None:
    """The control record type of a control batch's first record (ControlRecordType.parse), None when empty."""
    if not batch.records:
        return None
    key = batch.records[0].key
    if key is None or len(key) < _CONTROL_KEY.size:
        return -1  # UNKNOWN: Kafka keeps such a batch
    return _CONTROL_KEY.unpack_from(key)[1]


class CleanedTransactions:
    """The transaction state of one cleaning pass, read in log order."""

    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, tuple[AbortedTxn, list[int]]] = {}  # producer id -> (txn, [last batch offset])
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._order = 0
        self.retained_aborts: list[AbortedTxn] = []  # entries for the cleaned segment's .txnindex, in marker order

    def add_aborted(self, aborted: list[AbortedTxn]) -> None:
        for txn in aborted:
            self._order += 1
            heapq.heappush(self._aborted, (txn.first_offset, self._order, txn))

    def on_control_batch(self, batch: RecordBatch) -> bool:
        """A control batch read; True when it may be discarded."""
        self._consume_aborted_up_to(batch.last_offset)
        kind = control_type(batch)
        if kind is None:
            return True  # already cleaned to an empty batch
        if kind == ABORT:
            ongoing = self._ongoing_aborted.pop(batch.producer_id, None)
            if ongoing is not None and ongoing[1]:
                self.retained_aborts.append(ongoing[0])
                return False
            return True
        if kind == COMMIT:
            if batch.producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(batch.producer_id)
                return False
            return True
        return False

    def on_batch(self, batch: RecordBatch | StoredBatch) -> bool:
        """A data batch read; True when it belongs to an aborted transaction (it may be discarded)."""
        self._consume_aborted_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(batch.producer_id)
        if ongoing is not None:
            ongoing[1][:] = [batch.last_offset]
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, (txn, []))

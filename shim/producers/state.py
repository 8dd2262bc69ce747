"""Per-partition idempotent-producer state: epochs and the five-batch sequence window, as Kafka 3.9 keeps it.

One :class:`PartitionProducers` per partition. The produce path asks :meth:`PartitionProducers.check_append` before it
writes a batch and calls :meth:`PartitionProducers.record_append` once the log has accepted it; a restart rebuilds the
same state from a snapshot (``snapshot.py``) and the log's batches.

Facts from Apache Kafka 3.9 (storage/.../internals/log/), each cited where it is used:

- ``ProducerStateEntry``: per producer id, the current epoch, the metadata of the last ``NUM_BATCHES_TO_RETAIN`` (5)
  batches (last sequence, last offset, offset delta, max timestamp) and the last timestamp. A new epoch clears the
  window (``maybeUpdateProducerEpoch``).
- ``UnifiedLog.analyzeAndValidateProducerState`` (core): a client batch whose epoch equals the stored one and whose
  (first, last) sequence equals one of the retained batches is a duplicate; the append is skipped and the response
  carries the original first/last offset and, as ``log_append_time``, the original batch's max timestamp
  (``UnifiedLog.append``: ``appendInfo.setLogAppendTime(duplicate.timestamp)``).
- ``ProducerAppendInfo.checkProducerEpoch`` / ``checkSequence``: the validation rules (see :meth:`check_append`).
- ``ProducerStateManager.isProducerExpired``: idle producers are dropped after ``producer.id.expiration.ms``.
- Transactions (``ProducerAppendInfo.appendDataBatch`` / ``appendEndTxnMarker``, ``ProducerStateManager``'s
  ``ongoingTxns``, ``firstUnstableOffset``, ``lastStableOffset(CompletedTxn)``, ``completeTxn``): a transactional
  batch opens the producer's transaction on the partition (its first offset) unless one is open; a plain batch while
  one is open is INVALID_TXN_STATE (48); a marker (see :meth:`PartitionProducers.check_marker`) closes it.
- Transaction verification entries (``verification.py``): while one exists for a producer, a batch whose first
  sequence is above its lowest one is OUT_OF_ORDER_SEQUENCE_NUMBER; a transactional batch or marker removes it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.records import NO_PRODUCER_EPOCH, NO_SEQUENCE
from kafka_shim.shim.producers.verification import VerificationEntries

# ProducerStateEntry.NUM_BATCHES_TO_RETAIN: how many recent batches per producer are remembered for duplicates.
NUM_BATCHES_TO_RETAIN = 5
# 3.9's default for ``producer.id.expiration.ms`` (ProducerStateManagerConfig; one day).
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
INT32_MAX = 2**31 - 1
# ProducerStateEntry.empty: an entry that has seen no batch has no timestamp.
NO_TIMESTAMP = -1


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` wrapping past Int32 max to 0 (DefaultRecordBatch.incrementSequence)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement`` wrapping below 0 to Int32 max (DefaultRecordBatch.decrementSequence)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Whether ``next_seq`` directly follows ``last_seq``; after Int32 max comes 0 (ProducerAppendInfo.inSequence)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch as the window remembers it (Kafka's BatchMetadata: the first sequence and offset are
    derived from the last ones and the offset delta, so a batch's sequences and offsets advance together)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int  # the batch's max timestamp (the log append time for LogAppendTime topics)

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerEntry:
    """What a partition knows about one producer id (Kafka's ProducerStateEntry; verification entries are kept apart)."""

    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = NO_TIMESTAMP
    # The coordinator epoch of the last marker, and the first offset of the open transaction on this partition.
    coordinator_epoch: int = -1
    current_txn_first_offset: int | None = None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        # ProducerStateEntry.addBatch: a different epoch starts an empty window; the deque drops the oldest of six.
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def end_transaction(self, epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        # ProducerStateEntry.update(epoch, coordinatorEpoch, lastTimestamp) after a marker: a new epoch empties the
        # window; the transaction is over.
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = None
        self.last_timestamp = timestamp

    def duplicate_of(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        # ProducerStateEntry.findDuplicateBatch / batchWithSequenceRange: same epoch and the exact sequence range.
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.producer_id,
            self.epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.last_timestamp,
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )


class Outcome(Enum):
    ACCEPT = "accept"  # write the batch, then call record_append
    DUPLICATE = "duplicate"  # write nothing; answer with the original batch's offsets
    REJECT = "reject"  # write nothing; answer with ``error``


@dataclass(frozen=True, slots=True)
class AppendCheck:
    """Kafka's answer for a batch (or the batches of one partition in one produce request).

    ``detail`` is the text of the exception Kafka raises, worded in Kafka's style, for the broker's log. It is NOT what
    the Produce response carries: Kafka 3.9 sets ``error_message`` only for record-validation errors
    (ReplicaManager.appendToLocalLog: ``hasCustomErrorMessage = true`` only for RecordValidationException;
    ``LogAppendResult.errorMessage`` is null otherwise), so ``error_message`` is None for 45 and 47.
    """

    outcome: Outcome
    error: ErrorCode = ErrorCode.NONE
    duplicate: BatchMetadata | None = None
    detail: str | None = None

    @property
    def error_message(self) -> str | None:
        """What Kafka 3.9 puts in the Produce response's ``error_message`` (v8+): always null for these codes."""
        return None


ACCEPTED = AppendCheck(Outcome.ACCEPT)


@dataclass(frozen=True, slots=True)
class BatchSequence:
    """The producer fields of one incoming batch (a batch header's producer id, epoch, base and last sequence)."""

    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    transactional: bool = False


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended on this partition (Kafka's CompletedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class LoggedBatch:
    """A batch as the partition log holds it, for rebuilding producer state (offsets and timestamp assigned)."""

    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    max_timestamp: int


class PartitionProducers:
    """The idempotent-producer state of one partition. Not thread-safe: the partition's append path owns it."""

    def __init__(self, partition: str = "", expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> None:
        self.partition = partition  # "topic-0", only for the text of errors
        self.expiration_ms = expiration_ms
        self._producers: dict[int, ProducerEntry] = {}
        # ProducerStateManager.ongoingTxns: producer id -> first offset of its open transaction on this partition.
        self._ongoing: dict[int, int] = {}
        # ProducerStateManager.verificationStates: apart from the entries, as in Kafka (a snapshot load leaves them).
        self.verifying = VerificationEntries()

    def __len__(self) -> int:
        return len(self._producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def entries(self) -> Iterator[ProducerEntry]:
        return iter(self._producers.values())

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        """UnifiedLog.hasOngoingTransaction: the producer id has an open transaction here, whatever its epoch."""
        entry = self._producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None

    def check_append(self, producer_id: int, epoch: int, first_seq: int, last_seq: int, *, offset: int = -1) -> AppendCheck:
        """Kafka's answer for one client batch; ``offset`` (the base offset it would get) only goes into ``detail``."""
        return self.check_appends([BatchSequence(producer_id, epoch, first_seq, last_seq)], offset=offset)

    def check_appends(self, batches: Sequence[BatchSequence], *, offset: int = -1) -> AppendCheck:
        """Kafka's answer for the batches of one partition in one produce request, in order.

        As UnifiedLog.analyzeAndValidateProducerState: each batch is first compared with the *stored* window (a
        duplicate answers for the whole request), then validated against the state as the earlier batches of this
        request leave it. Batches without a producer id (``producer_id < 0``, RecordBatch.hasProducerId) are not
        checked at all.
        """
        pending: dict[int, ProducerEntry] = {}
        for batch in batches:
            if batch.producer_id < 0:
                continue
            stored = self._producers.get(batch.producer_id)
            if stored is not None:
                duplicate = stored.duplicate_of(batch.epoch, batch.first_seq, batch.last_seq)
                if duplicate is not None:
                    return AppendCheck(Outcome.DUPLICATE, duplicate=duplicate)
            if batch.producer_id not in pending:
                pending[batch.producer_id] = _updated_entry(stored, batch.producer_id)
            current = stored if stored is not None else ProducerEntry(batch.producer_id)
            updated = pending[batch.producer_id]
            refused = self._validate(current, updated, batch, offset)
            if refused is not None:
                return refused
            # The next batch of this request is checked against this one (ProducerAppendInfo.updatedEntry); the
            # offsets are placeholders: only the sequence and epoch take part in validation.
            updated.add_batch(batch.epoch, batch.last_seq, -1, _sequence_span(batch.first_seq, batch.last_seq), NO_TIMESTAMP)
            # ProducerAppendInfo.appendDataBatch: a plain batch while the producer's transaction is open is refused; a
            # transactional one opens it.
            if updated.current_txn_first_offset is not None and not batch.transactional:
                return AppendCheck(
                    Outcome.REJECT,
                    ErrorCode.INVALID_TXN_STATE,
                    detail=f"Expected transactional write from producer {batch.producer_id} at offset {offset} in "
                    f"partition {self.partition}",
                )
            if updated.current_txn_first_offset is None and batch.transactional:
                updated.current_txn_first_offset = offset
        return ACCEPTED

    def _validate(self, current: ProducerEntry, updated: ProducerEntry, batch: BatchSequence, offset: int) -> AppendCheck | None:
        where = f"producer {batch.producer_id} at offset {offset} in partition {self.partition}"
        # ProducerAppendInfo.checkProducerEpoch: an older epoch is INVALID_PRODUCER_EPOCH (47) for client appends.
        # Since 2.7 Kafka answers 47 here, not PRODUCER_FENCED (90), for transactional and plain producers alike.
        if batch.epoch < updated.epoch:
            return AppendCheck(
                Outcome.REJECT,
                ErrorCode.INVALID_PRODUCER_EPOCH,
                detail=f"Epoch of {where} is {batch.epoch}, older than the last seen epoch {updated.epoch}",
            )
        # checkSequence first holds the batch against a verification entry's lowest sequence, whatever the epochs.
        verifying = self.verifying.get(batch.producer_id)
        if verifying is not None and batch.first_seq > verifying.lowest_sequence:
            return AppendCheck(
                Outcome.REJECT,
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                detail=f"Out of order sequence number for {where}: {batch.first_seq} (incoming seq. number), "
                f"{verifying.lowest_sequence} (earliest seen sequence)",
            )
        # ProducerAppendInfo.checkSequence (3.9; the KIP-360 rules):
        if batch.epoch != updated.epoch:
            # A newer epoch must start at sequence 0 -- unless the partition has no epoch for this producer at all
            # (an unknown producer id, or one whose state expired or was removed with the log): then any sequence
            # is accepted. 3.9 never answers UNKNOWN_PRODUCER_ID (59) to a produce; since KIP-360 (2.5) that code
            # is gone from this path.
            if batch.first_seq != 0 and updated.epoch != NO_PRODUCER_EPOCH:
                return AppendCheck(
                    Outcome.REJECT,
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    detail=f"Invalid sequence number for new epoch of {where}: {batch.epoch} (request epoch), "
                    f"{batch.first_seq} (seq. number), {updated.epoch} (current producer epoch)",
                )
            return None
        if updated.batches:
            current_last_seq = updated.last_seq
        elif batch.epoch == current.epoch:
            current_last_seq = current.last_seq
        else:
            current_last_seq = NO_SEQUENCE
        # An entry with no epoch accepts any sequence; otherwise the batch must follow the last one (an entry with an
        # epoch but no batches, e.g. from a snapshot of an epoch-only entry, expects 0: NO_SEQUENCE + 1).
        if current.epoch != NO_PRODUCER_EPOCH and not in_sequence(current_last_seq, batch.first_seq):
            return AppendCheck(
                Outcome.REJECT,
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                detail=f"Out of order sequence number for {where}: {batch.first_seq} (incoming seq. number), "
                f"{current_last_seq} (current end sequence number)",
            )
        return None

    def record_append(
        self, producer_id: int, epoch: int, first_seq: int, last_seq: int, base_offset: int, last_offset: int, max_timestamp: int,
        *, transactional: bool = False,
    ) -> None:
        """Remember a batch the log has written (ProducerStateManager.update after UnifiedLog's append).

        Also the replay step when rebuilding from the log, where Kafka does no validation (AppendOrigin.REPLICATION).
        ``first_seq`` is implied by ``last_seq`` and the offsets, as in Kafka's BatchMetadata; it is taken for symmetry
        with :meth:`check_append` and checked.
        """
        if producer_id < 0:
            return
        offset_delta = last_offset - base_offset
        # A batch without sequences (NO_SEQUENCE, e.g. written by an older kafka-shim's coordinator) is replayed as
        # Kafka replays it: the entry keeps its epoch and offsets, and the sequence stays unknown.
        if first_seq != NO_SEQUENCE and decrement_sequence(last_seq, offset_delta) != first_seq:
            raise ValueError(
                f"batch of producer {producer_id}: sequences {first_seq}..{last_seq} do not span offsets {base_offset}..{last_offset}"
            )
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerEntry(producer_id)
        entry.add_batch(epoch, last_seq, last_offset, offset_delta, max_timestamp)
        if transactional:
            # UnifiedLog.updateProducers: the transaction has a first offset now, so its verification is over.
            self.verifying.clear(producer_id)
            if entry.current_txn_first_offset is None:
                entry.current_txn_first_offset = base_offset
                self._ongoing[producer_id] = base_offset

    # -- transactions -------------------------------------------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        """ProducerStateManager.firstUnstableOffset: the first offset of the earliest open transaction."""
        return min(self._ongoing.values()) if self._ongoing else None

    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of each open transaction, earliest first."""
        return dict(sorted(self._ongoing.items(), key=lambda item: item[1]))

    def check_coordinator_append(self, producer_id: int, epoch: int, *, offset: int = -1) -> AppendCheck:
        """A transactional batch a coordinator writes (origin COORDINATOR: TxnOffsetCommit's offsets): only
        ProducerAppendInfo.checkProducerEpoch applies, an older epoch INVALID_PRODUCER_EPOCH; sequences are not
        checked."""
        entry = self._producers.get(producer_id)
        if entry is None or epoch >= entry.epoch:
            return ACCEPTED
        return AppendCheck(Outcome.REJECT, ErrorCode.INVALID_PRODUCER_EPOCH,
                           detail=f"Epoch of producer {producer_id} at offset {offset} in {self.partition} is {epoch}, "
                           f"which is smaller than the last seen epoch {entry.epoch}")

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, *, offset: int = -1) -> AppendCheck:
        """ProducerAppendInfo.appendEndTxnMarker's checks for a marker the coordinator writes (origin COORDINATOR):
        an epoch older than the producer's is INVALID_PRODUCER_EPOCH (47, what Kafka answers since 2.7), a coordinator
        epoch older than the last marker's TRANSACTION_COORDINATOR_FENCED (52)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return ACCEPTED
        where = f"producer {producer_id} at offset {offset} in {self.partition}"
        if epoch < entry.epoch:
            return AppendCheck(Outcome.REJECT, ErrorCode.INVALID_PRODUCER_EPOCH,
                               detail=f"Epoch of {where} is {epoch}, which is smaller than the last seen epoch {entry.epoch}")
        if entry.coordinator_epoch > coordinator_epoch:
            return AppendCheck(Outcome.REJECT, ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                               detail=f"Invalid coordinator epoch for producerId {producer_id} at offset {offset} in "
                               f"partition {self.partition}: {coordinator_epoch} (zombie), {entry.coordinator_epoch} (current)")
        return ACCEPTED

    def record_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, offset: int, timestamp: int,
                      committed: bool) -> CompletedTxn | None:
        """A marker written at ``offset`` (also the replay step, unchecked): the producer's open transaction, if any,
        is completed; returns it (Kafka emits a CompletedTxn only for a transaction with data on this partition).
        The caller records an aborted one in the transaction index, then calls :meth:`complete_txn`."""
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerEntry(producer_id)
        first = entry.current_txn_first_offset
        entry.end_transaction(epoch, coordinator_epoch, timestamp)
        self.verifying.clear(producer_id)  # a marker ends what was being verified too (UnifiedLog.updateProducers)
        return None if first is None else CompletedTxn(producer_id, first, offset, not committed)

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """ProducerStateManager.lastStableOffset(CompletedTxn): the first offset of the earliest open transaction of
        another producer, else the offset after the marker."""
        others = [first for pid, first in self._ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """ProducerStateManager.completeTxn (a single node: replicated at once, so gone from the unstable ones)."""
        if self._ongoing.get(completed.producer_id) == completed.first_offset:
            del self._ongoing[completed.producer_id]

    def load(self, entries: Iterable[ProducerEntry], now_ms: int | None = None) -> None:
        """Replace the state with ``entries`` (from a snapshot); with ``now_ms``, expired ones are skipped as
        ProducerStateManager.loadFromSnapshot skips them."""
        self._producers = {
            entry.producer_id: entry.copy() for entry in entries if now_ms is None or not self._is_expired(entry, now_ms)
        }
        self._ongoing = {pid: entry.current_txn_first_offset for pid, entry in self._producers.items()
                         if entry.current_txn_first_offset is not None}

    def remove_expired(self, now_ms: int) -> list[int]:
        """Drop producers idle for ``expiration_ms`` (ProducerStateManager.removeExpiredProducers); returns their ids.

        Idle is measured from the last batch's max timestamp, as in Kafka (so a producer writing old CreateTime
        timestamps expires early). Kafka runs this every ``producer.id.expiration.check.interval.ms``; the caller
        decides when.
        """
        expired = [pid for pid, entry in self._producers.items() if self._is_expired(entry, now_ms)]
        for pid in expired:
            del self._producers[pid]
        # Verification entries never followed by a transactional append go by their creation time.
        self.verifying.remove_expired(now_ms, self.expiration_ms)
        return expired

    def _is_expired(self, entry: ProducerEntry, now_ms: int) -> bool:
        # ProducerStateManager.isProducerExpired: never while a transaction is open.
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= self.expiration_ms

    def clear(self) -> None:
        self._producers.clear()
        self._ongoing.clear()


def rebuild(
    batches: Iterable[LoggedBatch] | Iterable[tuple[int, int, int, int, int, int, int]],
    *,
    start: Iterable[ProducerEntry] = (),
    partition: str = "",
    expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
) -> PartitionProducers:
    """Producer state from a log: ``start`` (a snapshot's entries, or nothing) then every batch after it, in order.

    Each batch is ``(producer_id, epoch, first_seq, last_seq, base_offset, last_offset, max_timestamp)``. As Kafka's
    log recovery (UnifiedLog.loadProducersFromRecords, origin REPLICATION), no batch is validated: what is in the log
    was accepted once.
    """
    state = PartitionProducers(partition, expiration_ms)
    state.load(start)
    for batch in batches:
        state.record_append(*_fields(batch))
    return state


def _fields(batch: LoggedBatch | tuple[int, int, int, int, int, int, int]) -> tuple[int, int, int, int, int, int, int]:
    if isinstance(batch, LoggedBatch):
        return (
            batch.producer_id,
            batch.epoch,
            batch.first_seq,
            batch.last_seq,
            batch.base_offset,
            batch.last_offset,
            batch.max_timestamp,
        )
    return batch


def _updated_entry(stored: ProducerEntry | None, producer_id: int) -> ProducerEntry:
    # ProducerAppendInfo's updatedEntry starts with the stored epoch and an empty window.
    entry = ProducerEntry(producer_id)
    if stored is not None:
        entry.epoch = stored.epoch
        entry.current_txn_first_offset = stored.current_txn_first_offset
    return entry


def _sequence_span(first_seq: int, last_seq: int) -> int:
    return last_seq - first_seq if last_seq >= first_seq else INT32_MAX - first_seq + last_seq + 1

"""A partition's transaction verification entries (KIP-890), as Kafka 3.9's ProducerStateManager keeps them.

Facts from Apache Kafka 3.9 (storage/.../internals/log/VerificationStateEntry, ProducerStateManager, ProducerAppendInfo;
core UnifiedLog and ReplicaManager):

- Before a transactional batch (or a TxnOffsetCommit, on the group's ``__consumer_offsets`` partition) is verified
  with the transaction coordinator, the partition creates an entry for the producer id unless the id already has
  an open transaction there (UnifiedLog.maybeStartTransactionVerification). The entry holds its creation time, the
  lowest sequence seen and that sequence's epoch: a later start at the same epoch with a lower sequence, or at a
  higher epoch with any sequence, replaces them (VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch).
- The entry outlives a refused verification (the partition was not in the transaction, the coordinator was busy):
  it is removed only when a transactional batch or a marker of the producer is appended to the partition
  (UnifiedLog.updateProducers), or once ``producer.id.expiration.ms`` has passed since it was created
  (ProducerStateManager.removeExpiredProducers). It is kept in memory only: a restart forgets it.
- While it exists, a client batch of the producer whose first sequence is above the lowest one is refused with
  OUT_OF_ORDER_SEQUENCE_NUMBER (ProducerAppendInfo.checkSequence), so that a retried lower sequence is not
  overtaken by a higher one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class VerificationEntry:
    """One producer id's entry (Kafka's VerificationStateEntry, its guard aside: kafka-shim verifies synchronously)."""

    created_ms: int
    lowest_sequence: int
    epoch: int

    def update(self, sequence: int, epoch: int) -> None:
        # maybeUpdateLowestSequenceAndEpoch: a lower sequence of the same epoch, or any sequence of a newer epoch.
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


class VerificationEntries:
    """The entries of one partition, by producer id."""

    def __init__(self) -> None:
        self._entries: dict[int, VerificationEntry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def start(self, producer_id: int, sequence: int, epoch: int, now_ms: int) -> VerificationEntry:
        """ProducerStateManager.maybeCreateVerificationStateEntry: the producer's entry, created or updated."""
        entry = self._entries.get(producer_id)
        if entry is None:
            entry = self._entries[producer_id] = VerificationEntry(now_ms, sequence, epoch)
        entry.update(sequence, epoch)
        return entry

    def get(self, producer_id: int) -> VerificationEntry | None:
        return self._entries.get(producer_id)

    def clear(self, producer_id: int) -> None:
        self._entries.pop(producer_id, None)

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Drop the entries created ``expiration_ms`` or more ago; their producer ids."""
        expired = [pid for pid, entry in self._entries.items() if now_ms - entry.created_ms >= expiration_ms]
        for pid in expired:
            del self._entries[pid]
        return expired

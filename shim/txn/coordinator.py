"""The transaction coordinator: InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
the markers, timeouts and expiry, as Kafka 3.9's TransactionCoordinator and TransactionStateManager decide them.

The rules, in the order Kafka checks them (TransactionCoordinator, 3.9):

- InitProducerId: an empty id 42; a timeout outside (0, ``transaction.max.timeout.ms``] 50. An unknown id gets a new
  producer id at epoch 0. A producer id and epoch given (KIP-360) that match neither the current id, nor the previous
  id with an exhausted epoch, nor a metadata without epoch: PRODUCER_FENCED. A pending transition, PrepareCommit or
  PrepareAbort: CONCURRENT_TRANSACTIONS. Empty / Complete*: the epoch is bumped (or the producer id rotated once the
  epoch is exhausted). Ongoing: the transaction is fenced (epoch + 1) and aborted, and the answer is
  CONCURRENT_TRANSACTIONS; the client retries and gets the next epoch.
- AddPartitionsToTxn / AddOffsetsToTxn: unknown id or another producer id INVALID_PRODUCER_ID_MAPPING; another epoch
  PRODUCER_FENCED; pending, PrepareCommit or PrepareAbort CONCURRENT_TRANSACTIONS; Ongoing with every partition
  already added NONE (no write); else the partitions are added (Ongoing; the start time set when coming from Empty or
  a Complete state).
- Verification (KIP-890, AddPartitionsToTxn v4 ``verify_only`` and the produce path): the same id, producer and
  epoch checks (no pending check), then per partition NONE when added, else TRANSACTION_ABORTABLE.
- EndTxn: unknown id or another producer INVALID_PRODUCER_ID_MAPPING; from a client any other epoch, from the
  coordinator an older one, PRODUCER_FENCED; a pending transition (other than an epoch fence) CONCURRENT_TRANSACTIONS;
  Ongoing → PrepareCommit / PrepareAbort, written, then the markers; CompleteCommit + commit and CompleteAbort + abort
  NONE (a retry); PrepareCommit + commit and PrepareAbort + abort CONCURRENT_TRANSACTIONS; anything else
  INVALID_TXN_STATE.
- Markers go to every partition of the transaction. Kafka answers EndTxn once the Prepare state is written and sends
  the markers afterwards; kafka-shim writes them in the same turn (its partitions are in this process), so the answer
  comes with the transaction already complete unless a partition has no leader: then the transaction stays in its
  Prepare state (later requests get CONCURRENT_TRANSACTIONS) and the markers are retried every
  ``RETRY_BACKOFF_MS`` until written, as Kafka's TransactionMarkerChannelManager retries. A partition whose topic was
  deleted is dropped from the transaction. A partition that refuses its marker for a newer producer or coordinator
  epoch makes Kafka abandon the markers: the transaction stays in its Prepare state, with the Complete state pending,
  for good.
- Every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (10 s), Ongoing transactions older than their
  timeout are fenced and aborted; every ``transaction.remove.expired.transaction.cleanup.interval.ms`` (1 h), ids
  idle in Empty or a Complete state for ``transactional.id.expiration.ms`` (7 days) are removed (a tombstone).

Every transition is written to ``__transaction_state`` (txn_log.py) before it takes effect; a restart reloads the
last state of every id and finishes the markers of transactions left in a Prepare state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.txn.metadata import (
    EXPIRABLE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    Transit,
    TxnState,
    epoch_exhausted,
)
from kafka_shim.shim.txn.txn_log import TransactionLog, TxnLogError

log = get_logger(__name__)

DEFAULT_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms
DEFAULT_ABORT_INTERVAL_MS = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
DEFAULT_EXPIRATION_MS = 604_800_000  # transactional.id.expiration.ms
DEFAULT_EXPIRY_INTERVAL_MS = 3_600_000  # transaction.remove.expired.transaction.cleanup.interval.ms
RETRY_BACKOFF_MS = 100  # how soon a marker that found no leader is tried again
# TransactionMarkerRequestCompletionHandler's abortSending errors: the producer or coordinator epoch moved on.
_ABANDONING_MARKER_ERRORS = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})
# Marker errors after which Kafka's marker channel keeps trying (TransactionMarkerRequestCompletionHandler).
_RETRIABLE_MARKER_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
})


class MarkerWriter(Protocol):
    def __call__(self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                 committed: bool) -> int:
        """Write a transaction marker to a partition's log; Kafka's error code for it (0 when written)."""


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer: ...


class ProducerIds(Protocol):
    def allocate(self) -> int: ...


@dataclass(frozen=True, slots=True)
class InitResult:
    error: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TxnSettings:
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS
    abort_interval_ms: int = DEFAULT_ABORT_INTERVAL_MS
    expiration_ms: int = DEFAULT_EXPIRATION_MS
    expiry_interval_ms: int = DEFAULT_EXPIRY_INTERVAL_MS

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> TxnSettings:
        def number(key: str, default: int) -> int:
            text = properties.get(key)
            if text is None:
                return default
            try:
                return int(text)
            except ValueError:
                log.warning("transaction_setting_unreadable", key=key, value=text, used=default,
                            hint=f"set {key} to a number of milliseconds")
                return default

        return cls(number("transaction.max.timeout.ms", DEFAULT_MAX_TIMEOUT_MS),
                   number("transaction.abort.timed.out.transaction.cleanup.interval.ms", DEFAULT_ABORT_INTERVAL_MS),
                   number("transactional.id.expiration.ms", DEFAULT_EXPIRATION_MS),
                   number("transaction.remove.expired.transaction.cleanup.interval.ms", DEFAULT_EXPIRY_INTERVAL_MS))


class TransactionCoordinator:
    """Every transactional id's state. Changed only on the event loop; nothing here awaits."""

    def __init__(self, txn_log: TransactionLog, producer_ids: ProducerIds, write_marker: MarkerWriter,
                 now_ms: Callable[[], int], settings: TxnSettings = TxnSettings(), scheduler: Scheduler | None = None,
                 coordinator_epoch: Callable[[str], int] = lambda _id: 0) -> None:
        self.txn_log = txn_log
        self.producer_ids = producer_ids
        self.write_marker = write_marker
        self.now_ms = now_ms
        self.settings = settings
        self.scheduler = scheduler
        self.coordinator_epoch = coordinator_epoch
        self.transactions: dict[str, TransactionMetadata] = {}
        self._retry: Timer | None = None
        self._timers: list[Timer] = []
        # Ids whose markers are still to be written: (result, coordinator epoch, the pending Complete state).
        self._unsent: dict[str, tuple[bool, int, Transit]] = {}

    # -- start and stop -----------------------------------------------------------------------------------------------

    def load(self) -> None:
        """Read the transaction log; finish the markers of transactions it left in a Prepare state."""
        self.transactions = self.txn_log.load()
        for txn in self.transactions.values():
            if txn.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._queue_markers(txn, txn.state == TxnState.PREPARE_COMMIT)
        if self.transactions:
            log.info("transactions_loaded", count=len(self.transactions), unfinished=sorted(self._unsent))
        self._send_markers()

    def start(self) -> None:
        """Start the periodic abort of timed-out transactions and the expiry of idle ids."""
        if self.scheduler is None:
            return
        self._every(self.settings.abort_interval_ms, self.abort_timed_out)
        self._every(self.settings.expiry_interval_ms, self.remove_expired)

    def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None

    def _every(self, interval_ms: int, action: Callable[[], object]) -> None:
        assert self.scheduler is not None

        def tick() -> None:
            try:
                action()
            finally:
                self._timers.append(self.scheduler.call_later(interval_ms, tick))  # type: ignore[union-attr]

        self._timers.append(self.scheduler.call_later(interval_ms, tick))

    # -- InitProducerId -----------------------------------------------------------------------------------------------

    def valid_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.settings.max_timeout_ms

    def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None) -> InitResult:
        """TransactionCoordinator.handleInitProducerId for a transactional id (the handler checked ACLs and the
        producer id / epoch pairing)."""
        if transactional_id == "":
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not self.valid_timeout(timeout_ms):
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        txn = self.transactions.get(transactional_id)
        if txn is None:
            txn = TransactionMetadata(transactional_id, self.producer_ids.allocate(), timeout_ms=timeout_ms,
                                      update_ms=self.now_ms())
            self.transactions[transactional_id] = txn
        if txn.pending_transition:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._valid_expected(txn, *expected):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if txn.state == TxnState.ONGOING:
            # Fence the current producer and abort its transaction; the client retries (CONCURRENT_TRANSACTIONS).
            fence = txn.prepare_fence_epoch()
            error = self._end(txn, fence.producer_id, fence.producer_epoch, committed=False, from_client=False)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS if error == ErrorCode.NONE else error)
        now = self.now_ms()
        if txn.epoch_exhausted and (expected is None or expected[1] == txn.producer_epoch):
            transit: Transit | int = txn.prepare_producer_id_rotation(self.producer_ids.allocate(), timeout_ms, now,
                                                                      expected is not None)
        else:
            transit = txn.prepare_increment_epoch(timeout_ms, None if expected is None else expected[1], now)
        if not isinstance(transit, Transit):
            return InitResult(transit)
        error = self._write(txn, transit)
        if error != ErrorCode.NONE:
            return InitResult(error)
        log.info("transactional_producer_initialized", transactional_id=transactional_id, producer_id=txn.producer_id,
                 producer_epoch=txn.producer_epoch, partition=self.txn_log.partition_of(transactional_id))
        return InitResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)

    @staticmethod
    def _valid_expected(txn: TransactionMetadata, producer_id: int, epoch: int) -> bool:
        return (txn.producer_epoch == NO_PRODUCER_EPOCH or producer_id == txn.producer_id
                or (producer_id == txn.last_producer_id and epoch_exhausted(epoch)))

    # -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------------------------------

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition]) -> int:
        """handleAddPartitionsToTransaction: one error for the whole set."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        wanted = set(partitions)
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if txn.pending_transition or txn.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if txn.state == TxnState.ONGOING and wanted <= txn.partitions:
            return ErrorCode.NONE
        return self._write(txn, txn.prepare_add_partitions(wanted, self.now_ms()))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """handleVerifyPartitionsInTransaction: each partition's error."""
        wanted = list(partitions)
        if not transactional_id:
            return dict.fromkeys(wanted, ErrorCode.INVALID_REQUEST)
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return dict.fromkeys(wanted, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if txn.producer_epoch != producer_epoch:
            return dict.fromkeys(wanted, ErrorCode.PRODUCER_FENCED)
        if txn.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return dict.fromkeys(wanted, ErrorCode.CONCURRENT_TRANSACTIONS)
        return {tp: ErrorCode.NONE if tp in txn.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in wanted}

    # -- EndTxn -------------------------------------------------------------------------------------------------------

    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool) -> int:
        """handleEndTransaction from a client."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        txn = self.transactions.get(transactional_id)
        if txn is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        return self._end(txn, producer_id, producer_epoch, committed, from_client=True)

    def _end(self, txn: TransactionMetadata, producer_id: int, producer_epoch: int, committed: bool, *,
             from_client: bool) -> int:
        if txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if (from_client and producer_epoch != txn.producer_epoch) or producer_epoch < txn.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if txn.pending_transition and txn.pending != TxnState.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = txn.state
        if state == TxnState.ONGOING:
            if not committed and txn.pending == TxnState.PREPARE_EPOCH_FENCE:
                # The fence is written with the abort: the bumped epoch goes into the PrepareAbort record.
                txn.pending = None
                txn.producer_epoch = producer_epoch
                txn.last_producer_epoch = NO_PRODUCER_EPOCH
                fenced = True
            else:
                fenced = False
            transit = txn.prepare_abort_or_commit(TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT,
                                                  self.now_ms())
            error = self._write(txn, transit)
            if error != ErrorCode.NONE:
                if fenced:
                    txn.failed_epoch_fence = True
                    log.warning("transaction_epoch_fence_not_written", transactional_id=txn.transactional_id,
                                error=ErrorCode(error).name, epoch=txn.producer_epoch)
                return error
            self._queue_markers(txn, committed)
            self._send_markers()
            return ErrorCode.NONE
        if (state == TxnState.COMPLETE_COMMIT and committed) or (state == TxnState.COMPLETE_ABORT and not committed):
            return ErrorCode.NONE
        if (state == TxnState.PREPARE_COMMIT and committed) or (state == TxnState.PREPARE_ABORT and not committed):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        log.debug("invalid_txn_state", transactional_id=txn.transactional_id, state=state.display_name,
                  result="COMMIT" if committed else "ABORT")
        return ErrorCode.INVALID_TXN_STATE

    # -- markers ------------------------------------------------------------------------------------------------------

    def _queue_markers(self, txn: TransactionMetadata, committed: bool) -> None:
        """The markers go out with the Complete state already prepared (sendTxnMarkersCallback, or the load of a
        Prepare state): until it is written the id's requests answer CONCURRENT_TRANSACTIONS, an EndTxn of the other
        result too, and a transaction whose markers are abandoned keeps it pending for good, as on Kafka."""
        self._unsent[txn.transactional_id] = (committed, self.coordinator_epoch(txn.transactional_id),
                                              txn.prepare_complete(self.now_ms()))

    def _send_markers(self) -> None:
        """Write the markers of every transaction waiting for them; complete those that are done."""
        for transactional_id, (committed, coordinator_epoch, completion) in list(self._unsent.items()):
            txn = self.transactions.get(transactional_id)
            if txn is None or txn.state not in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._unsent.pop(transactional_id, None)
                continue
            abandoned = False
            for topic, partition in sorted(txn.partitions):
                error = self.write_marker(topic, partition, txn.producer_id, txn.producer_epoch, coordinator_epoch, committed)
                if error in _RETRIABLE_MARKER_ERRORS:
                    log.debug("transaction_marker_retry", transactional_id=transactional_id, partition=f"{topic}-{partition}",
                              error=ErrorCode(error).name)
                    continue
                if error in _ABANDONING_MARKER_ERRORS:
                    # TransactionMarkerRequestCompletionHandler: "this txn can now be ignored": the markers are
                    # dropped and the transaction is never completed, so it stays prepared (and its id answers
                    # CONCURRENT_TRANSACTIONS) as on Kafka, listing this partition. The leader wrote the other
                    # partitions' markers of the same request, so the loop goes on.
                    log.warning("transaction_markers_abandoned", transactional_id=transactional_id,
                                partition=f"{topic}-{partition}", error=ErrorCode(error).name, state=txn.state.name,
                                hint="the partition's producer epoch is newer than this transaction's (e.g. after "
                                     "kafka-transactions.sh abort with a higher epoch, or a TxnOffsetCommit of a "
                                     "newer epoch): Kafka leaves it prepared too")
                    abandoned = True
                    continue
                if error not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    log.warning("transaction_marker_not_written", transactional_id=transactional_id,
                                partition=f"{topic}-{partition}", error=ErrorCode(error).name,
                                hint="the marker is dropped and the transaction completes without it")
                txn.partitions.discard((topic, partition))
            if abandoned:
                del self._unsent[transactional_id]
                continue
            if txn.partitions:
                continue
            del self._unsent[transactional_id]
            self._write(txn, completion)
            log.info("transaction_completed", transactional_id=transactional_id, producer_id=txn.producer_id,
                     producer_epoch=txn.producer_epoch, result="COMMIT" if committed else "ABORT")
        if self._unsent and self.scheduler is not None and self._retry is None:
            self._retry = self.scheduler.call_later(RETRY_BACKOFF_MS, self._retry_markers)

    def _retry_markers(self) -> None:
        self._retry = None
        self._send_markers()

    # -- timeouts and expiry ------------------------------------------------------------------------------------------

    def abort_timed_out(self) -> list[str]:
        """abortTimedOutTransactions: fence and abort every Ongoing transaction older than its timeout."""
        now = self.now_ms()
        aborted = []
        for txn in list(self.transactions.values()):
            if txn.pending_transition or txn.state != TxnState.ONGOING or txn.start_ms + txn.timeout_ms >= now:
                continue
            fence = txn.prepare_fence_epoch()
            error = self._end(txn, fence.producer_id, fence.producer_epoch, committed=False, from_client=False)
            log.info("transaction_timed_out", transactional_id=txn.transactional_id, producer_id=txn.producer_id,
                     timeout_ms=txn.timeout_ms, error=ErrorCode(error).name)
            aborted.append(txn.transactional_id)
        return aborted

    def remove_expired(self) -> list[str]:
        """removeExpiredTransactionalIds: ids idle in Empty or a Complete state for transactional.id.expiration.ms."""
        cutoff = self.now_ms() - self.settings.expiration_ms
        expired = []
        for transactional_id, txn in list(self.transactions.items()):
            if txn.pending_transition or txn.state not in EXPIRABLE or txn.update_ms > cutoff:
                continue
            try:
                self.txn_log.append(transactional_id, None, self.now_ms())
            except TxnLogError as exc:
                log.warning("transactional_id_expiry_not_written", transactional_id=transactional_id, error=str(exc))
                continue
            del self.transactions[transactional_id]
            expired.append(transactional_id)
        if expired:
            log.info("transactional_ids_expired", transactional_ids=expired)
        return expired

    # -- views --------------------------------------------------------------------------------------------------------

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        txn = self.transactions.get(transactional_id)
        return None if txn is None or txn.state == TxnState.DEAD else txn

    def listed(self, producer_ids: set[int], states: set[TxnState], duration_ms: int, state_filtered: bool) -> list[TransactionMetadata]:
        """listTransactionStates' filters (Dead never listed)."""
        now = self.now_ms()
        out = []
        for txn in self.transactions.values():
            if txn.state == TxnState.DEAD:
                continue
            if producer_ids and txn.producer_id not in producer_ids:
                continue
            if state_filtered and txn.state not in states:
                continue
            if duration_ms >= 0 and now - txn.start_ms <= duration_ms:
                continue
            out.append(txn)
        return out

    # -- inside -------------------------------------------------------------------------------------------------------

    def _write(self, txn: TransactionMetadata, transit: Transit) -> int:
        """appendTransactionToLog, then completeTransitionTo; a failed write leaves the state as it was."""
        try:
            self.txn_log.append(txn.transactional_id, transit, transit.update_ms)
        except TxnLogError as exc:
            txn.abandon()
            log.error("transaction_log_write_failed", transactional_id=txn.transactional_id,
                      state=transit.state.display_name, error=str(exc),
                      hint="the __transaction_state partition cannot be written (full disk or deleted topic)")
            return exc.error_code
        txn.complete(transit)
        return ErrorCode.NONE

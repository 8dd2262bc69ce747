"""One transactional id's state and its legal transitions, as Kafka 3.9's TransactionMetadata keeps them.

The rules (kafka.coordinator.transaction.TransactionMetadata / TransactionState, 3.9):

- States and their ids (written in the transaction log): Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
  CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7.
- A state may only be entered from its ``valid previous`` states (``VALID_PREVIOUS``): Empty from Empty and the
  Complete states (InitProducerId); Ongoing from Empty, Ongoing and the Complete states (AddPartitionsToTxn);
  PrepareCommit from Ongoing; PrepareAbort from Ongoing and PrepareEpochFence; the Complete states from their Prepare
  state (after the markers); PrepareEpochFence from Ongoing (a new producer, or a timed-out transaction).
- A transition is *prepared* (``prepare_*`` returns the target as a :class:`Transit` and sets ``pending``), written to
  the transaction log, then *completed* (:meth:`TransactionMetadata.complete`). While one is pending, another request
  gets CONCURRENT_TRANSACTIONS. kafka-shim writes the log synchronously, so ``pending`` only lasts while markers wait
  for a partition leader (the Complete state is prepared as they go out), or for good once they are abandoned.
- Epochs: InitProducerId bumps the epoch (a new metadata goes from -1 to 0); at ``Short.MaxValue - 1`` the epoch is
  exhausted and the next InitProducerId rotates to a new producer id at epoch 0. Fencing an ongoing transaction bumps
  the epoch once more (never returned to the client).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

from kafka_shim.protocol.codes import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767


class TxnState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name DescribeTransactions and ListTransactions carry (TransactionState.name)."""
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_NAMES = {
    TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing", TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort", TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort", TxnState.DEAD: "Dead", TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}

VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset({TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}
# States whose transactional id may expire after transactional.id.expiration.ms (TransactionState.isExpirationAllowed).
EXPIRABLE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})

TopicPartition = tuple[str, int]


def epoch_exhausted(epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: the last usable epoch is Short.MaxValue - 1."""
    return epoch >= SHORT_MAX - 1


class IllegalTransition(RuntimeError):
    """A transition Kafka treats as a bug (it logs fatal and throws IllegalStateException)."""


@dataclass(frozen=True, slots=True)
class Transit:
    """The target of a prepared transition (Kafka's TxnTransitMetadata), what the transaction log records."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    update_ms: int


@dataclass(eq=False)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    pending: TxnState | None = None
    # A fence whose log write failed: the next fence reuses the bumped epoch (hasFailedEpochFence).
    failed_epoch_fence: bool = False

    @property
    def pending_transition(self) -> bool:
        return self.pending is not None

    @property
    def epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    # -- preparing ------------------------------------------------------------------------------------------------

    def prepare_fence_epoch(self) -> Transit:
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransition("Cannot fence producer with epoch equal to Short.MaxValue since this would overflow")
        bumped = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(TxnState.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.timeout_ms,
                             frozenset(self.partitions), self.start_ms, self.update_ms)

    def prepare_increment_epoch(self, timeout_ms: int, expected_epoch: int | None, now_ms: int) -> Transit | ErrorCode:
        """InitProducerId on an Empty or completed transaction (prepareIncrementProducerEpoch)."""
        if self.epoch_exhausted:
            raise IllegalTransition(f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)  # a retry of a bump whose answer was lost
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(TxnState.EMPTY, self.producer_id, epochs[0], epochs[1], timeout_ms, frozenset(), -1, now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool) -> Transit:
        return self._prepare(TxnState.EMPTY, new_producer_id, 0, self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, added: set[TopicPartition], now_ms: int) -> Transit:
        start = now_ms if self.state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT) else self.start_ms
        return self._prepare(TxnState.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(self.partitions | added), start, now_ms)

    def prepare_abort_or_commit(self, state: TxnState, now_ms: int) -> Transit:
        return self._prepare(state, self.producer_id, self.producer_epoch, self.last_producer_epoch, self.timeout_ms,
                             frozenset(self.partitions), self.start_ms, now_ms)

    def prepare_complete(self, now_ms: int) -> Transit:
        state = TxnState.COMPLETE_COMMIT if self.state == TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        self.failed_epoch_fence = False
        return self._prepare(state, self.producer_id, self.producer_epoch, self.last_producer_epoch, self.timeout_ms,
                             frozenset(), self.start_ms, now_ms)

    def prepare_dead(self) -> Transit:
        return self._prepare(TxnState.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(), self.start_ms, self.update_ms)

    def _prepare(self, state: TxnState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[TopicPartition], start_ms: int, now_ms: int) -> Transit:
        if self.pending is not None:
            raise IllegalTransition(f"Preparing transaction state transition to {state.display_name} while it already "
                                    f"a pending state {self.pending.display_name}")
        if producer_id < 0:
            raise IllegalTransition(f"Illegal new producer id {producer_id}")
        if state != TxnState.DEAD and epoch < 0:
            raise IllegalTransition(f"Illegal new producer epoch {epoch}")
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(f"Preparing transaction state transition to {state.display_name} failed since the "
                                    f"target state {state.display_name} is not a valid previous state of the current "
                                    f"state {self.state.display_name}")
        self.pending = state
        return Transit(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, state, partitions, start_ms, now_ms)

    # -- completing ---------------------------------------------------------------------------------------------------

    def complete(self, transit: Transit) -> None:
        """completeTransitionTo: apply a transit once its log record is written."""
        if self.pending != transit.state:
            raise IllegalTransition(f"TransactionalId {self.transactional_id} completing a transition to "
                                    f"{transit.state.display_name} while pending {self.pending}")
        state = transit.state
        if state == TxnState.EMPTY:
            self.timeout_ms = transit.timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.last_producer_id = transit.last_producer_id
            self.producer_id = transit.producer_id
            self.partitions.clear()
        elif state == TxnState.ONGOING:
            self.start_ms = transit.start_ms
            self.partitions |= transit.partitions
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            self.start_ms = transit.start_ms
            self.partitions.clear()
        elif state in (TxnState.PREPARE_EPOCH_FENCE, TxnState.DEAD):
            raise IllegalTransition(f"TransactionalId {self.transactional_id} cannot complete a transition to "
                                    f"{state.display_name}")
        self.update_ms = transit.update_ms
        self.pending = None
        self.state = state

    def abandon(self) -> None:
        """The log write of the pending transition failed: keep the current state."""
        self.pending = None

    def snapshot(self) -> Transit:
        """The current state as a transit (for writing it again, e.g. after a fence)."""
        return Transit(self.producer_id, self.last_producer_id, self.producer_epoch, self.last_producer_epoch,
                       self.timeout_ms, self.state, frozenset(self.partitions), self.start_ms, self.update_ms)


def with_epoch(transit: Transit, epoch: int) -> Transit:
    return replace(transit, producer_epoch=epoch)

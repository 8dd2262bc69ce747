"""The idempotent-producer rules of Kafka 3.9 (ProducerAppendInfo, ProducerStateEntry, UnifiedLog) on plain state."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.producers.state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    INT32_MAX,
    NUM_BATCHES_TO_RETAIN,
    BatchSequence,
    LoggedBatch,
    Outcome,
    PartitionProducers,
    rebuild,
)

PID = 4000


@dataclass
class FakeLog:
    """A partition log just big enough for the produce path: offsets, timestamps, and what was written."""

    producers: PartitionProducers = field(default_factory=lambda: PartitionProducers("orders-0"))
    end: int = 0
    written: list[LoggedBatch] = field(default_factory=list)

    def produce(self, pid: int, epoch: int, first_seq: int, count: int, timestamp: int = 1_000):
        """What a Produce of one batch of ``count`` records answers: (error, base offset, log append time)."""
        last_seq = (first_seq + count - 1) % (INT32_MAX + 1) if first_seq >= 0 else first_seq
        check = self.producers.check_append(pid, epoch, first_seq, last_seq, offset=self.end)
        if check.outcome is Outcome.REJECT:
            return check.error, -1, -1
        if check.outcome is Outcome.DUPLICATE:
            assert check.duplicate is not None
            return ErrorCode.NONE, check.duplicate.first_offset, check.duplicate.timestamp
        base = self.end
        self.end += count
        self.written.append(LoggedBatch(pid, epoch, first_seq, last_seq, base, self.end - 1, timestamp))
        self.producers.record_append(pid, epoch, first_seq, last_seq, base, self.end - 1, timestamp)
        return ErrorCode.NONE, base, -1


def test_batches_in_sequence_are_accepted_and_remembered() -> None:
    log = FakeLog()
    assert log.produce(PID, 0, 0, 3) == (ErrorCode.NONE, 0, -1)
    assert log.produce(PID, 0, 3, 2) == (ErrorCode.NONE, 3, -1)
    entry = log.producers.entry(PID)
    assert entry is not None and entry.epoch == 0 and entry.last_seq == 4 and entry.last_offset == 4


def test_a_retry_gets_the_original_offset_and_timestamp_and_writes_nothing() -> None:
    log = FakeLog()
    log.produce(PID, 0, 0, 3, timestamp=111)
    log.produce(PID, 0, 3, 3, timestamp=222)
    assert log.produce(PID, 0, 0, 3, timestamp=999) == (ErrorCode.NONE, 0, 111)
    assert log.produce(PID, 0, 3, 3, timestamp=999) == (ErrorCode.NONE, 3, 222)
    assert log.end == 6 and len(log.written) == 2


def test_the_window_holds_five_batches_and_the_sixth_last_is_out_of_order() -> None:
    log = FakeLog()
    for batch in range(6):
        log.produce(PID, 0, batch * 2, 2)
    # The last five (sequences 2..11) are still duplicates.
    for batch in range(1, 6):
        assert log.produce(PID, 0, batch * 2, 2) == (ErrorCode.NONE, batch * 2, 1_000)
    # The first batch fell out of the window: Kafka no longer recognises it and it is out of order.
    assert log.produce(PID, 0, 0, 2)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert len(log.producers.entry(PID).batches) == NUM_BATCHES_TO_RETAIN
    assert log.end == 12


def test_a_retry_with_another_range_is_not_a_duplicate() -> None:
    log = FakeLog()
    log.produce(PID, 0, 0, 3)
    assert log.produce(PID, 0, 0, 2)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_gap_is_out_of_order_with_a_message_for_the_log_and_none_on_the_wire() -> None:
    producers = PartitionProducers("orders-0")
    producers.record_append(PID, 0, 0, 4, 0, 4, 1)
    check = producers.check_append(PID, 0, 6, 6, offset=5)
    assert check.outcome is Outcome.REJECT and check.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
    assert check.detail is not None and "6 (incoming seq. number), 4 (current end sequence number)" in check.detail
    assert "orders-0" in check.detail and "offset 5" in check.detail
    # Kafka 3.9 leaves error_message null for everything but record-validation errors.
    assert check.error_message is None


def test_an_older_epoch_is_invalid_producer_epoch() -> None:
    log = FakeLog()
    log.produce(PID, 0, 0, 1)
    log.produce(PID, 1, 0, 1)
    assert log.produce(PID, 0, 1, 1)[0] == ErrorCode.INVALID_PRODUCER_EPOCH == 47
    # Even a retry of a batch written under the old epoch: the duplicate check needs the current epoch.
    assert log.produce(PID, 0, 0, 1)[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    check = log.producers.check_append(PID, 0, 1, 1)
    assert check.detail is not None and "older than the last seen epoch 1" in check.detail


def test_a_new_epoch_must_start_at_sequence_zero_and_clears_the_window() -> None:
    log = FakeLog()
    log.produce(PID, 0, 0, 3)
    assert log.produce(PID, 1, 3, 1)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "new epoch" in (log.producers.check_append(PID, 1, 3, 3).detail or "")
    assert log.produce(PID, 1, 0, 2) == (ErrorCode.NONE, 3, -1)
    entry = log.producers.entry(PID)
    assert entry.epoch == 1 and len(entry.batches) == 1
    # The old epoch's batch is no duplicate any more; under the new epoch its range is simply out of order.
    assert log.produce(PID, 1, 0, 3)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_an_unknown_producer_is_accepted_at_any_sequence() -> None:
    # KIP-360 (2.5+): ProducerAppendInfo.checkSequence accepts any sequence when the partition has no epoch for
    # the producer; 3.9 never answers UNKNOWN_PRODUCER_ID (59) to a produce.
    log = FakeLog()
    assert log.produce(PID, 0, 17, 3) == (ErrorCode.NONE, 0, -1)
    assert log.produce(PID, 0, 20, 1) == (ErrorCode.NONE, 3, -1)
    assert log.produce(PID, 0, 22, 1)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_an_expired_producer_is_unknown_again() -> None:
    producers = PartitionProducers("orders-0")
    producers.record_append(PID, 3, 0, 9, 0, 9, 5_000)
    assert producers.remove_expired(5_000 + DEFAULT_PRODUCER_ID_EXPIRATION_MS - 1) == []
    assert producers.remove_expired(5_000 + DEFAULT_PRODUCER_ID_EXPIRATION_MS) == [PID]
    assert producers.entry(PID) is None
    assert producers.check_append(PID, 3, 40, 40).outcome is Outcome.ACCEPT


def test_expiry_follows_the_configured_time_and_spares_open_transactions() -> None:
    producers = PartitionProducers(expiration_ms=1_000)
    producers.record_append(1, 0, 0, 0, 0, 0, 100)
    producers.record_append(2, 0, 0, 0, 1, 1, 100)
    producers.entry(2).current_txn_first_offset = 1
    assert producers.remove_expired(1_100) == [1]
    assert [entry.producer_id for entry in producers.entries()] == [2]


def test_sequences_wrap_at_int32_max() -> None:
    log = FakeLog()
    log.produce(PID, 0, INT32_MAX - 1, 2)  # INT32_MAX-1, INT32_MAX
    assert log.produce(PID, 0, 0, 2) == (ErrorCode.NONE, 2, -1)
    # A batch that itself crosses the wrap, and its retry.
    log2 = FakeLog()
    log2.produce(PID, 0, INT32_MAX - 1, 4)  # INT32_MAX-1 .. 1
    entry = log2.producers.entry(PID)
    assert entry.batches[-1].first_seq == INT32_MAX - 1 and entry.last_seq == 1
    assert log2.produce(PID, 0, INT32_MAX - 1, 4) == (ErrorCode.NONE, 0, 1_000)
    assert log2.produce(PID, 0, 2, 1) == (ErrorCode.NONE, 4, -1)


def test_a_non_idempotent_batch_skips_every_check() -> None:
    log = FakeLog()
    log.produce(PID, 5, 0, 1)
    for _ in range(2):
        check = log.producers.check_append(-1, -1, -1, -1)
        assert check.outcome is Outcome.ACCEPT
        log.producers.record_append(-1, -1, -1, -1, 10, 10, 0)
    assert log.producers.entry(-1) is None and len(log.producers) == 1


def test_batches_of_one_request_are_checked_one_after_the_other() -> None:
    producers = PartitionProducers()
    producers.record_append(PID, 0, 0, 1, 0, 1, 0)
    in_order = [BatchSequence(PID, 0, 2, 3), BatchSequence(PID, 0, 4, 4)]
    assert producers.check_appends(in_order).outcome is Outcome.ACCEPT
    gap = [BatchSequence(PID, 0, 2, 3), BatchSequence(PID, 0, 5, 5)]
    assert producers.check_appends(gap).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # A duplicate anywhere answers for the request (UnifiedLog returns on the first duplicate found).
    with_duplicate = [BatchSequence(-1, -1, -1, -1), BatchSequence(PID, 0, 0, 1)]
    check = producers.check_appends(with_duplicate)
    assert check.outcome is Outcome.DUPLICATE and check.duplicate.first_offset == 0
    # Checking changed nothing.
    assert producers.entry(PID).last_seq == 1


def test_rebuild_from_the_log_equals_the_live_state() -> None:
    log = FakeLog()
    log.produce(1, 0, 0, 3)
    for batch in range(7):
        log.produce(2, 0, batch, 1, timestamp=batch)
    log.produce(1, 0, 3, 1)
    log.produce(1, 1, 0, 2)
    log.producers.record_append(-1, -1, -1, -1, log.end, log.end, 0)
    rebuilt = rebuild(log.written)
    assert _state(rebuilt) == _state(log.producers)
    as_tuples = rebuild(
        (b.producer_id, b.epoch, b.first_seq, b.last_seq, b.base_offset, b.last_offset, b.max_timestamp) for b in log.written
    )
    assert _state(as_tuples) == _state(log.producers)


def _state(producers: PartitionProducers) -> dict:
    return {e.producer_id: (e.epoch, list(e.batches), e.last_timestamp) for e in producers.entries()}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_retrying_any_of_the_last_batches_never_writes_twice(data: st.DataObject) -> None:
    """A producer that retries random subsets of its in-flight batches (as a client with up to 5 in flight does)
    never gets a record written twice and always gets each batch's original offset."""
    log = FakeLog()
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=30), label="batch sizes")
    start_seq = data.draw(st.sampled_from([0, INT32_MAX - 5]), label="first sequence")
    sent: list[tuple[int, int, int]] = []  # (first_seq, size, base offset answered)
    seq = start_seq
    for size in sizes:
        error, base, _ = log.produce(PID, 0, seq, size)
        assert error == ErrorCode.NONE
        sent.append((seq, size, base))
        seq = (seq + size) % (INT32_MAX + 1)
        window = sent[-NUM_BATCHES_TO_RETAIN:]
        for first_seq, retry_size, original in data.draw(st.lists(st.sampled_from(window), max_size=6), label="retries"):
            assert log.produce(PID, 0, first_seq, retry_size) == (ErrorCode.NONE, original, 1_000)
    assert log.end == sum(sizes)
    assert [batch.base_offset for batch in log.written] == [base for _, _, base in sent]


def test_a_verification_entry_holds_back_higher_sequences_until_a_transactional_append() -> None:
    # VerificationStateEntry: the lowest sequence of the epoch, replaced by any sequence of a newer epoch.
    log = FakeLog()
    log.producers.verifying.start(PID, 3, 0, now_ms=1_000)
    log.producers.verifying.start(PID, 1, 0, now_ms=2_000)
    log.producers.verifying.start(PID, 2, 0, now_ms=3_000)
    assert log.producers.verifying.get(PID).lowest_sequence == 1
    assert log.produce(PID, 0, 2, 1)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.produce(PID, 0, 1, 1)[0] == ErrorCode.NONE  # a plain batch leaves the entry
    assert log.produce(PID, 0, 2, 1)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    log.producers.verifying.start(PID, 7, 1, now_ms=4_000)
    assert log.producers.verifying.get(PID).lowest_sequence == 7
    log.producers.record_append(PID, 1, 0, 0, 10, 10, 5_000, transactional=True)
    assert log.producers.verifying.get(PID) is None


def test_a_marker_clears_a_verification_entry_and_expiry_counts_from_its_creation() -> None:
    producers = PartitionProducers(expiration_ms=1_000)
    producers.verifying.start(1, 0, 0, now_ms=100)
    producers.verifying.start(2, 0, 0, now_ms=500)
    producers.record_marker(1, 0, 0, offset=0, timestamp=600, committed=False)
    assert producers.verifying.get(1) is None
    producers.verifying.start(2, -1, 0, now_ms=1_400)  # an update keeps the creation time
    producers.remove_expired(1_499)
    assert producers.verifying.get(2) is not None
    producers.remove_expired(1_500)
    assert producers.verifying.get(2) is None

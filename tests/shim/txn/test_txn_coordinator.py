"""The transaction coordinator's state table without a socket: Kafka 3.9's TransactionCoordinator decisions, the
transaction log it writes, timeouts, fencing, markers that must wait for a leader, and a reload from the log."""

from __future__ import annotations

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.groups.timers import ManualScheduler
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.partition_log import PartitionLog, wall_clock_ms
from kafka_shim.shim.log.storage import MemoryDirectory
from kafka_shim.shim.producers.ids import ProducerIdAllocator
from kafka_shim.shim.txn.coordinator import TransactionCoordinator, TxnSettings
from kafka_shim.shim.txn.metadata import TxnState
from kafka_shim.shim.txn.txn_log import TransactionLog, key_bytes, partition_for, read_value, value_bytes


class _Topic:
    """A three-partition __transaction_state in memory."""

    def __init__(self) -> None:
        self.logs = [PartitionLog.open(MemoryDirectory(f"__transaction_state-{p}", wall_clock_ms), LogConfig()) for p in range(3)]

    def partition_count(self) -> int:
        return len(self.logs)

    def log(self, partition: int) -> PartitionLog:
        return self.logs[partition]

    def leader_epoch(self, partition: int) -> int:
        return 0

    def appended(self, partition: int) -> None:
        pass


class _Markers:
    """Records markers; ``refuse`` holds partitions that answer NOT_LEADER_OR_FOLLOWER."""

    def __init__(self) -> None:
        self.written: list[tuple[str, int, int, int, bool]] = []
        self.refuse: set[tuple[str, int]] = set()
        self.fenced: set[tuple[str, int]] = set()  # partitions whose producer epoch is newer: INVALID_PRODUCER_EPOCH

    def __call__(self, topic: str, partition: int, producer_id: int, epoch: int, coordinator_epoch: int, committed: bool) -> int:
        if (topic, partition) in self.refuse:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if (topic, partition) in self.fenced:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        self.written.append((topic, partition, producer_id, epoch, committed))
        return ErrorCode.NONE


class _Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def parts() -> tuple[TransactionCoordinator, _Markers, _Topic, _Clock, ManualScheduler]:
    topic, markers, clock, scheduler = _Topic(), _Markers(), _Clock(), ManualScheduler()
    coordinator = TransactionCoordinator(TransactionLog(topic), ProducerIdAllocator(), markers, clock,
                                         TxnSettings(max_timeout_ms=60_000, abort_interval_ms=1_000), scheduler)
    return coordinator, markers, topic, clock, scheduler


def test_init_gives_a_new_id_at_epoch_0_then_bumps_the_epoch(parts) -> None:
    coordinator, *_ = parts
    first = coordinator.init_producer_id("t", 30_000, None)
    assert (first.error, first.producer_epoch) == (ErrorCode.NONE, 0)
    again = coordinator.init_producer_id("t", 30_000, None)
    assert (again.error, again.producer_id, again.producer_epoch) == (ErrorCode.NONE, first.producer_id, 1)
    other = coordinator.init_producer_id("u", 30_000, None)
    assert other.producer_id != first.producer_id


def test_init_refuses_a_bad_timeout_and_an_empty_id(parts) -> None:
    coordinator, *_ = parts
    assert coordinator.init_producer_id("t", 0, None).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert coordinator.init_producer_id("t", 60_001, None).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert coordinator.init_producer_id("", 1000, None).error == ErrorCode.INVALID_REQUEST


def test_a_commit_writes_markers_to_every_partition_and_completes(parts) -> None:
    coordinator, markers, *_ = parts
    p = coordinator.init_producer_id("t", 30_000, None)
    assert coordinator.add_partitions("t", p.producer_id, p.producer_epoch, [("a", 0), ("b", 1)]) == ErrorCode.NONE
    assert coordinator.get("t").state == TxnState.ONGOING
    assert coordinator.end_transaction("t", p.producer_id, p.producer_epoch, True) == ErrorCode.NONE
    assert sorted(markers.written) == [("a", 0, p.producer_id, 0, True), ("b", 1, p.producer_id, 0, True)]
    txn = coordinator.get("t")
    assert txn.state == TxnState.COMPLETE_COMMIT and not txn.partitions
    # A retried commit is fine; an abort of a committed transaction is not.
    assert coordinator.end_transaction("t", p.producer_id, p.producer_epoch, True) == ErrorCode.NONE
    assert coordinator.end_transaction("t", p.producer_id, p.producer_epoch, False) == ErrorCode.INVALID_TXN_STATE


def test_kafkas_errors_for_wrong_ids_epochs_and_states(parts) -> None:
    coordinator, *_ = parts
    p = coordinator.init_producer_id("t", 30_000, None)
    pid, epoch = p.producer_id, p.producer_epoch
    assert coordinator.add_partitions("nobody", pid, epoch, [("a", 0)]) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.add_partitions("t", pid + 1, epoch, [("a", 0)]) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.add_partitions("t", pid, epoch + 1, [("a", 0)]) == ErrorCode.PRODUCER_FENCED
    assert coordinator.end_transaction("t", pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # Empty
    assert coordinator.end_transaction("nobody", pid, epoch, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.verify_partitions("t", pid, epoch, [("a", 0)]) == {("a", 0): ErrorCode.TRANSACTION_ABORTABLE}
    coordinator.add_partitions("t", pid, epoch, [("a", 0)])
    assert coordinator.verify_partitions("t", pid, epoch, [("a", 0), ("a", 1)]) == {
        ("a", 0): ErrorCode.NONE, ("a", 1): ErrorCode.TRANSACTION_ABORTABLE}
    assert coordinator.verify_partitions("t", pid, epoch - 1, [("a", 0)]) == {("a", 0): ErrorCode.PRODUCER_FENCED}


def test_a_new_producer_fences_the_ongoing_transaction(parts) -> None:
    coordinator, markers, *_ = parts
    old = coordinator.init_producer_id("t", 30_000, None)
    coordinator.add_partitions("t", old.producer_id, old.producer_epoch, [("a", 0)])
    # The zombie's successor: the ongoing transaction is aborted under a bumped epoch, the client told to retry.
    assert coordinator.init_producer_id("t", 30_000, None).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert markers.written == [("a", 0, old.producer_id, 1, False)]
    assert coordinator.get("t").state == TxnState.COMPLETE_ABORT
    new = coordinator.init_producer_id("t", 30_000, None)
    assert (new.error, new.producer_epoch) == (ErrorCode.NONE, 2)
    # The zombie is fenced everywhere.
    assert coordinator.add_partitions("t", old.producer_id, old.producer_epoch, [("a", 0)]) == ErrorCode.PRODUCER_FENCED
    assert coordinator.end_transaction("t", old.producer_id, old.producer_epoch, True) == ErrorCode.PRODUCER_FENCED


def test_kip_360_expected_epoch(parts) -> None:
    coordinator, *_ = parts
    p = coordinator.init_producer_id("t", 30_000, None)
    bumped = coordinator.init_producer_id("t", 30_000, (p.producer_id, p.producer_epoch))
    assert (bumped.error, bumped.producer_epoch) == (ErrorCode.NONE, 1)
    # A retry of that bump (its answer lost) gets the same epoch back.
    retried = coordinator.init_producer_id("t", 30_000, (p.producer_id, p.producer_epoch))
    assert (retried.error, retried.producer_epoch) == (ErrorCode.NONE, 1)
    assert coordinator.init_producer_id("t", 30_000, (p.producer_id + 7, 0)).error == ErrorCode.PRODUCER_FENCED


def test_timed_out_transactions_are_aborted_by_the_timer(parts) -> None:
    coordinator, markers, _, clock, scheduler = parts
    coordinator.start()
    p = coordinator.init_producer_id("t", 5_000, None)
    coordinator.add_partitions("t", p.producer_id, p.producer_epoch, [("a", 0)])
    clock.now += 4_000
    scheduler.advance(1_000)
    assert coordinator.get("t").state == TxnState.ONGOING
    clock.now += 2_000
    scheduler.advance(1_000)
    txn = coordinator.get("t")
    assert txn.state == TxnState.COMPLETE_ABORT and txn.producer_epoch == 1
    assert markers.written == [("a", 0, p.producer_id, 1, False)]
    assert coordinator.end_transaction("t", p.producer_id, p.producer_epoch, True) == ErrorCode.PRODUCER_FENCED
    coordinator.close()


def test_markers_wait_for_a_leader_and_the_transaction_stays_prepared(parts) -> None:
    coordinator, markers, _, _, scheduler = parts
    p = coordinator.init_producer_id("t", 30_000, None)
    coordinator.add_partitions("t", p.producer_id, p.producer_epoch, [("a", 0), ("a", 1)])
    markers.refuse.add(("a", 1))
    assert coordinator.end_transaction("t", p.producer_id, p.producer_epoch, True) == ErrorCode.NONE
    assert coordinator.get("t").state == TxnState.PREPARE_COMMIT
    assert coordinator.add_partitions("t", p.producer_id, p.producer_epoch, [("a", 0)]) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert coordinator.end_transaction("t", p.producer_id, p.producer_epoch, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    # The Complete state is pending while the markers go out, so the other end is CONCURRENT_TRANSACTIONS too.
    assert coordinator.end_transaction("t", p.producer_id, p.producer_epoch, False) == ErrorCode.CONCURRENT_TRANSACTIONS
    markers.refuse.clear()
    scheduler.advance(200)
    assert coordinator.get("t").state == TxnState.COMPLETE_COMMIT
    assert [m[:2] for m in markers.written] == [("a", 0), ("a", 1)]


def test_a_marker_refused_for_a_newer_producer_epoch_leaves_the_transaction_prepared(parts) -> None:
    """Kafka abandons the markers of a transaction when a partition answers INVALID_PRODUCER_EPOCH (its producer
    epoch was raised, e.g. by kafka-transactions.sh abort with a higher epoch) and never completes it: the id then
    answers CONCURRENT_TRANSACTIONS, as on Kafka 3.9 (found with the Java Admin's abortTransaction, fenceProducers).
    The other partitions of the transaction get their markers (the leader wrote them all) and leave its list."""
    coordinator, markers, _, _, scheduler = parts
    p = coordinator.init_producer_id("t", 30_000, None)
    coordinator.add_partitions("t", p.producer_id, p.producer_epoch, [("a", 0), ("a", 1)])
    markers.fenced.add(("a", 0))
    assert coordinator.end_transaction("t", p.producer_id, p.producer_epoch, False) == ErrorCode.NONE
    scheduler.advance(10_000)
    txn = coordinator.get("t")
    assert (txn.state, txn.partitions) == (TxnState.PREPARE_ABORT, {("a", 0)})
    assert markers.written == [("a", 1, p.producer_id, p.producer_epoch, False)]
    assert coordinator.init_producer_id("t", 30_000, None).error == ErrorCode.CONCURRENT_TRANSACTIONS


def test_the_log_brings_every_state_back_and_finishes_prepared_ones(parts) -> None:
    coordinator, markers, topic, clock, _ = parts
    a = coordinator.init_producer_id("done", 30_000, None)
    coordinator.add_partitions("done", a.producer_id, a.producer_epoch, [("x", 0)])
    coordinator.end_transaction("done", a.producer_id, a.producer_epoch, False)
    b = coordinator.init_producer_id("open", 20_000, None)
    coordinator.add_partitions("open", b.producer_id, b.producer_epoch, [("x", 0), ("y", 2)])
    c = coordinator.init_producer_id("half", 30_000, None)
    coordinator.add_partitions("half", c.producer_id, c.producer_epoch, [("z", 0)])
    markers.refuse.add(("z", 0))
    coordinator.end_transaction("half", c.producer_id, c.producer_epoch, True)

    reloaded_markers = _Markers()
    again = TransactionCoordinator(TransactionLog(topic), ProducerIdAllocator(), reloaded_markers, clock)
    again.load()
    assert again.get("done").state == TxnState.COMPLETE_ABORT
    opened = again.get("open")
    assert (opened.state, opened.partitions, opened.timeout_ms) == (TxnState.ONGOING, {("x", 0), ("y", 2)}, 20_000)
    assert (opened.producer_id, opened.producer_epoch) == (b.producer_id, b.producer_epoch)
    assert again.get("half").state == TxnState.COMPLETE_COMMIT  # its marker was written at load
    assert reloaded_markers.written == [("z", 0, c.producer_id, c.producer_epoch, True)]


def test_records_are_kafkas_bytes() -> None:
    # TransactionLogKey v0: version 0, then the id as a short-length string.
    assert key_bytes("tx") == b"\x00\x00\x00\x02tx"
    assert partition_for("tx", 50) == abs(sum(ord(c) * 31 ** (1 - i) for i, c in enumerate("tx"))) % 50
    from kafka_shim.shim.txn.metadata import Transit

    transit = Transit(5, -1, 3, -1, 60_000, TxnState.ONGOING, frozenset({("a", 1), ("a", 0)}), 100, 200)
    value = value_bytes(transit)
    assert value[:2] == b"\x00\x00"
    back = read_value("tx", value)
    assert (back.producer_id, back.producer_epoch, back.timeout_ms, back.state, back.partitions, back.start_ms, back.update_ms) == (
        5, 3, 60_000, TxnState.ONGOING, {("a", 0), ("a", 1)}, 100, 200)


def test_expired_ids_are_removed(parts) -> None:
    coordinator, _, topic, clock, _ = parts
    coordinator.settings = TxnSettings(expiration_ms=10_000)
    coordinator.init_producer_id("idle", 30_000, None)
    p = coordinator.init_producer_id("busy", 30_000, None)
    coordinator.add_partitions("busy", p.producer_id, p.producer_epoch, [("a", 0)])
    clock.now += 20_000
    assert coordinator.remove_expired() == ["idle"]
    assert coordinator.get("idle") is None and coordinator.get("busy") is not None
    again = TransactionCoordinator(TransactionLog(topic), ProducerIdAllocator(), _Markers(), clock)
    again.load()
    assert again.get("idle") is None

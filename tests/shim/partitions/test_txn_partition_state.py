"""The partition side of transactions without a socket: open transactions, markers, the last stable offset, the
aborted transactions a READ_COMMITTED fetch gets, ListOffsets' view, and the .txnindex across restarts and retention
(Kafka's ProducerAppendInfo, ProducerStateManager, UnifiedLog/LocalLog, TransactionIndex)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.records import build_batch, decode_batches, encode_batch
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.storage import FileStorage
from kafka_shim.shim.log.txn_index import ENTRY_SIZE, AbortedTxn
from kafka_shim.shim.partitions.append import append_records
from kafka_shim.shim.partitions.fetch_sessions import PartitionRequest, TopicPartitionId
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.read import ReadParams, read_partitions
from kafka_shim.shim.partitions.transactions import marker_records, write_marker

ZERO = uuid.UUID(int=0)
NOW = 1_700_000_000_000
COMMITTED = ReadParams(max_bytes=1 << 20, hard_max_bytes_limit=False, read_committed=True, from_follower=False)
UNCOMMITTED = ReadParams(max_bytes=1 << 20, hard_max_bytes_limit=False, read_committed=False, from_follower=False)


def _partitions(data_dir: Path | None = None, **props: str) -> Partitions:
    logs = LogManager(FileStorage(data_dir) if data_dir is not None else None)
    partitions = Partitions(ClusterState(cluster_id="c", node_id=1), logs, dict(props), data_dir)
    partitions.load()
    return partitions


class Producer:
    """A producer writing to partition t-0 by hand (what the produce path commits once the lead's verification
    passed)."""

    def __init__(self, partitions: Partitions, pid: int, epoch: int = 0, topic: str = "t") -> None:
        self.partitions, self.pid, self.epoch, self.topic, self.seq = partitions, pid, epoch, topic, 0

    def send(self, count: int = 1, *, transactional: bool = True) -> tuple[ErrorCode, int]:
        records = encode_batch(build_batch([(b"k", b"v%d" % (self.seq + i), [], NOW) for i in range(count)],
                                           transactional=transactional, producer_id=self.pid, producer_epoch=self.epoch,
                                           base_sequence=self.seq))
        result = append_records(self.partitions, self.topic, 0, records, now_ms=NOW)
        if result.error == ErrorCode.NONE:
            self.seq += count
        return result.error, result.base_offset

    def end(self, committed: bool, *, coordinator_epoch: int = 0, epoch: int | None = None) -> ErrorCode:
        return write_marker(self.partitions, self.topic, 0, self.pid, self.epoch if epoch is None else epoch,
                            coordinator_epoch, committed, now_ms=NOW + 5)


def plain(partitions: Partitions, count: int = 1) -> int:
    result = append_records(partitions, "t", 0, encode_batch(build_batch([(b"k", b"p", [], NOW)] * count)), now_ms=NOW)
    assert result.error == ErrorCode.NONE
    return result.base_offset


def fetch(partitions: Partitions, offset: int, params: ReadParams = COMMITTED, max_bytes: int = 1 << 20):
    [(_, answer)] = read_partitions(partitions, [(TopicPartitionId(ZERO, "t", 0), PartitionRequest(offset, max_bytes=max_bytes))],
                                    params)
    return answer


@pytest.fixture
def partitions() -> Partitions:
    p = _partitions()
    p.create_topic("t", 1)
    return p


def lso(partitions: Partitions) -> int:
    return partitions.get("t", 0).last_stable_offset


def test_marker_bytes_are_kafkas_control_batch() -> None:
    [batch] = decode_batches(marker_records(7, 3, 11, True, NOW))
    assert batch.is_control and batch.is_transactional and batch.base_sequence == -1
    assert (batch.producer_id, batch.producer_epoch, batch.base_timestamp, batch.max_timestamp) == (7, 3, NOW, NOW)
    [record] = batch.records
    assert record.key == b"\x00\x00\x00\x01" and record.value == b"\x00\x00\x00\x00\x00\x0b" and record.headers == []
    [abort] = decode_batches(marker_records(7, 3, 11, False, NOW))[0].records
    assert abort.key == b"\x00\x00\x00\x00"


def test_lso_follows_open_transactions_of_several_producers(partitions) -> None:
    a, b = Producer(partitions, 1000), Producer(partitions, 2000)
    assert lso(partitions) == 0
    plain(partitions, 2)  # 0-1
    assert lso(partitions) == 2
    assert a.send(2) == (ErrorCode.NONE, 2)  # 2-3: a's transaction opens at 2
    assert lso(partitions) == 2 and partitions.get("t", 0).log.high_watermark == 4
    assert b.send() == (ErrorCode.NONE, 4)  # b's at 4
    assert a.send() == (ErrorCode.NONE, 5)
    assert partitions.get("t", 0).producers.entry(1000).current_txn_first_offset == 2
    assert b.end(True) == ErrorCode.NONE  # marker at 6: b done, a still open
    assert lso(partitions) == 2
    assert a.end(False) == ErrorCode.NONE  # marker at 7
    assert lso(partitions) == 8 == partitions.get("t", 0).log.high_watermark
    assert partitions.get("t", 0).producers.entry(1000).current_txn_first_offset is None
    # a's aborted transaction: first offset 2, marker 7, and b's transaction had ended: the LSO after it is 8.
    assert partitions.get("t", 0).log.active.txn_index.entries == [AbortedTxn(1000, 2, 7, 8)]


def test_aborted_entry_keeps_the_lso_of_another_open_transaction(partitions) -> None:
    a, b = Producer(partitions, 1), Producer(partitions, 2)
    a.send()  # 0
    b.send()  # 1
    assert a.end(False) == ErrorCode.NONE  # 2; b still open at 1
    assert partitions.get("t", 0).log.active.txn_index.entries == [AbortedTxn(1, 0, 2, 1)]
    assert lso(partitions) == 1


def test_plain_batch_while_a_transaction_is_open_is_invalid_txn_state(partitions) -> None:
    a = Producer(partitions, 5)
    a.send()
    assert a.send(transactional=False) == (ErrorCode.INVALID_TXN_STATE, -1)
    assert a.end(True) == ErrorCode.NONE
    assert a.send(transactional=False)[0] == ErrorCode.NONE  # after the marker it may write plain batches again
    # Two batches of one producer checked together (ProducerAppendInfo.updatedEntry): the transactional first one
    # opens the transaction, the plain second is refused.
    from kafka_shim.shim.producers.state import BatchSequence, Outcome
    verdict = partitions.get("t", 0).producers.check_appends([BatchSequence(6, 0, 0, 0, True), BatchSequence(6, 0, 1, 1, False)])
    assert (verdict.outcome, verdict.error) == (Outcome.REJECT, ErrorCode.INVALID_TXN_STATE)


def test_marker_epoch_fencing(partitions) -> None:
    a = Producer(partitions, 9, epoch=3)
    a.send()
    assert a.end(True, epoch=2) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert a.end(False, coordinator_epoch=4) == ErrorCode.NONE
    assert a.end(True, coordinator_epoch=3) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    end = partitions.get("t", 0).log.log_end_offset
    assert a.end(True, coordinator_epoch=4, epoch=4) == ErrorCode.NONE  # a newer epoch: a marker with no data
    assert partitions.get("t", 0).log.log_end_offset == end + 1
    entry = partitions.get("t", 0).producers.entry(9)
    assert (entry.epoch, entry.coordinator_epoch, entry.current_txn_first_offset, entry.last_seq) == (4, 4, None, -1)
    assert partitions.get("t", 0).log.active.txn_index.entries == [AbortedTxn(9, 0, 1, 2)]  # only the one with data


def test_marker_refusals_and_listeners(partitions) -> None:
    heard: list[tuple] = []
    partitions.add_marker_listener(lambda *args: heard.append(args))
    woken: list[tuple] = []
    partitions.add_append_listener(lambda *args: woken.append(args))
    assert write_marker(partitions, "nope", 0, 1, 0, 0, True) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert write_marker(partitions, "t", 3, 1, 0, 0, True) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partitions.cluster.topics["t"].partitions[0].leader_id = -1
    assert write_marker(partitions, "t", 0, 1, 0, 0, True) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    partitions.cluster.topics["t"].partitions[0].leader_id = 1
    assert heard == [] and woken == []
    assert write_marker(partitions, "t", 0, 1, 0, 0, True) == ErrorCode.NONE
    assert heard == [("t", 0, 1, True)] and woken == [("t", 0)]


def test_marker_needs_min_insync_replicas_up_to_the_replication_factor() -> None:
    p = _partitions()
    p.create_topic("t", 1, {"min.insync.replicas": "2"})  # one replica: effectively 1 (Partition.effectiveMinIsr)
    assert write_marker(p, "t", 0, 1, 0, 0, True) == ErrorCode.NONE
    p.cluster.topics["t"].partitions[0].isr.clear()  # no replica in sync (as after its broker stopped)
    assert write_marker(p, "t", 0, 1, 0, 0, True) == ErrorCode.NOT_ENOUGH_REPLICAS


def test_read_committed_stops_at_the_lso_and_lists_aborted_transactions(partitions) -> None:
    a, b = Producer(partitions, 1), Producer(partitions, 2)
    a.send(2)  # 0-1
    plain(partitions)  # 2
    open_answer = fetch(partitions, 0)
    assert open_answer.last_stable_offset == 0 and open_answer.high_watermark == 3 and open_answer.records == b""
    assert open_answer.aborted_transactions == []
    uncommitted = fetch(partitions, 0, UNCOMMITTED)
    assert uncommitted.last_stable_offset == 0 and uncommitted.aborted_transactions is None
    assert len(decode_batches(uncommitted.records)) == 2
    a.end(False)  # 3
    b.send()  # 4
    b.end(False)  # 5
    a.send()  # 6
    a.end(True)  # 7
    answer = fetch(partitions, 0)
    assert answer.last_stable_offset == 8
    assert answer.aborted_transactions == [(1, 0), (2, 4)]
    assert [b.base_offset for b in decode_batches(answer.records)] == [0, 2, 3, 4, 5, 6, 7]
    # From inside the first aborted transaction, and from after it: the overlap decides.
    assert fetch(partitions, 1).aborted_transactions == [(1, 0), (2, 4)]
    assert fetch(partitions, 4).aborted_transactions == [(2, 4)]
    assert fetch(partitions, 6).aborted_transactions == []
    assert fetch(partitions, 8).aborted_transactions == []  # at the LSO: nothing to read


def test_aborted_transactions_bounded_by_the_offset_index() -> None:
    # A small index interval: every batch gets an offset-index entry, so the upper bound is the last offset of the
    # batch after the fetched bytes.
    p = _partitions(**{"log.index.interval.bytes": "1"})
    p.create_topic("t", 1)
    a, b = Producer(p, 1), Producer(p, 2)
    a.send()  # 0
    a.end(False)  # 1
    plain(p)  # 2
    plain(p)  # 3
    b.send()  # 4
    b.end(False)  # 5
    one = len(p.get("t", 0).log.read(0, 1).records)
    small = fetch(p, 0, max_bytes=one)
    assert len(decode_batches(small.records)) == 1
    assert small.aborted_transactions == [(1, 0)]
    assert fetch(p, 0).aborted_transactions == [(1, 0), (2, 4)]
    log = p.get("t", 0).log
    assert log.collect_aborted_transactions(0, 4) == [AbortedTxn(1, 0, 1, 2)]
    assert log.collect_aborted_transactions(1, 5) == [AbortedTxn(1, 0, 1, 2), AbortedTxn(2, 4, 5, 6)]
    assert log.collect_aborted_transactions(2, 5) == [AbortedTxn(2, 4, 5, 6)]


def test_first_batch_that_does_not_fit_drops_the_aborted_list(partitions) -> None:
    a = Producer(partitions, 1)
    a.send(3)
    a.end(False)
    [(_, first), (_, second)] = read_partitions(partitions, [
        (TopicPartitionId(ZERO, "t", 0), PartitionRequest(0, max_bytes=1 << 20)),
        (TopicPartitionId(ZERO, "t", 0), PartitionRequest(0, max_bytes=10))], COMMITTED)
    assert first.aborted_transactions == [(1, 0)]
    assert second.records == b"" and second.aborted_transactions is None


def test_aborted_transactions_across_segments() -> None:
    p = _partitions(**{"log.segment.bytes": "150"})
    p.create_topic("t", 1)
    a, b = Producer(p, 1), Producer(p, 2)
    a.send()
    for _ in range(4):
        plain(p)
    a.end(False)
    b.send()
    b.end(False)
    log = p.get("t", 0).log
    assert len(log.segments) > 2
    assert fetch(p, 0).aborted_transactions == [(1, 0)]  # the read ends with the first segment
    everything = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [t.producer_id for t in everything] == [1, 2]


def test_list_offsets_last_fetchable(partitions) -> None:
    from kafka_shim.shim.partitions import offsets

    a = Producer(partitions, 1)
    plain(partitions)
    a.send()
    state = partitions.get("t", 0)
    assert offsets.offset_for_timestamp(state.log, offsets.LATEST, 0, state.last_stable_offset).offset == 1
    assert offsets.offset_for_timestamp(state.log, NOW, 0, state.last_stable_offset).offset == 0
    assert offsets.offset_for_timestamp(state.log, offsets.MAX_TIMESTAMP, 0, state.last_stable_offset).offset == 0


def test_describe_producers_sees_the_open_transaction(partitions) -> None:
    a = Producer(partitions, 1)
    plain(partitions)
    a.send()
    assert partitions.get("t", 0).producers.entry(1).current_txn_first_offset == 1


# -- persistence ------------------------------------------------------------------------------------------------------


def _txnindex_files(data_dir: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in (data_dir / "t-0").glob("*.txnindex")}


def test_recovery_after_close_keeps_open_and_aborted_transactions(tmp_path: Path) -> None:
    p = _partitions(tmp_path)
    p.create_topic("t", 1)
    a, b = Producer(p, 1), Producer(p, 2)
    a.send()  # 0
    b.send()  # 1
    a.end(False)  # 2 -> aborted (1, 0, 2, lso 1)
    plain(p)  # 3
    p.close()
    files = _txnindex_files(tmp_path)
    assert list(files) == ["00000000000000000000.txnindex"] and len(files["00000000000000000000.txnindex"]) == ENTRY_SIZE
    assert files["00000000000000000000.txnindex"] == (b"\x00\x00" + (1).to_bytes(8, "big") + (0).to_bytes(8, "big")
                                                      + (2).to_bytes(8, "big") + (1).to_bytes(8, "big"))
    again = _partitions(tmp_path)
    assert again.get("t", 0).last_stable_offset == 1  # b's transaction is still open (from the snapshot)
    assert fetch(again, 0).aborted_transactions == [(1, 0)]
    assert Producer(again, 2).end(True) == ErrorCode.NONE
    assert again.get("t", 0).last_stable_offset == 5
    again.close()


def test_recovery_after_kill9_replays_markers(tmp_path: Path) -> None:
    p = _partitions(tmp_path)
    p.create_topic("t", 1)
    a, b = Producer(p, 1), Producer(p, 2)
    a.send()  # 0
    b.send()  # 1
    a.end(False)  # 2
    b.send()  # 3
    p.logs.flush_due()
    # No close: no snapshot; the index entry is lost too (as if killed between the marker and its entry).
    (tmp_path / "t-0" / "00000000000000000000.txnindex").unlink()
    again = _partitions(tmp_path)
    state = again.get("t", 0)
    assert state.last_stable_offset == 1
    assert state.producers.ongoing_transactions() == {2: 1}
    assert state.log.active.txn_index.entries == [AbortedTxn(1, 0, 2, 1)]  # rebuilt by the replay


def test_recovery_after_a_torn_marker(tmp_path: Path) -> None:
    p = _partitions(tmp_path)
    p.create_topic("t", 1)
    a = Producer(p, 1)
    a.send()  # 0
    a.end(False)  # 1
    log_file = tmp_path / "t-0" / "00000000000000000000.log"
    size = log_file.stat().st_size
    with open(log_file, "r+b") as out:  # kill -9 in the middle of writing the marker
        out.truncate(size - 10)
    again = _partitions(tmp_path)
    state = again.get("t", 0)
    assert state.log.log_end_offset == 1
    assert state.last_stable_offset == 0 and state.producers.ongoing_transactions() == {1: 0}
    assert state.log.active.txn_index.entries == []  # the entry of the cut marker is gone
    assert (tmp_path / "t-0" / "00000000000000000000.txnindex").stat().st_size == 0


def test_retention_drops_the_txnindex_of_deleted_segments(tmp_path: Path) -> None:
    p = _partitions(tmp_path, **{"log.segment.bytes": "300"})
    p.create_topic("t", 1)
    a = Producer(p, 1)
    a.send()
    a.end(False)
    for _ in range(4):
        plain(p)
    log = p.get("t", 0).log
    first = log.segments[0]
    assert first.txn_index.entries and (tmp_path / "t-0" / first.txn_index.file).exists()
    log.delete_records(log.segments[1].base_offset)
    assert log.apply_retention() >= 1
    assert not (tmp_path / "t-0" / first.txn_index.file).exists()
    assert fetch(p, log.log_start_offset).aborted_transactions == []

"""Reading the partitions of a fetch (ReplicaManager.readFromLog) and the offset lookups, without a socket."""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.records import Compression, decode_batches
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.partitions import offsets
from kafka_shim.shim.partitions.down_convert import UnsupportedForDownConversion, down_convert
from kafka_shim.shim.partitions.fetch_sessions import PartitionRequest, TopicPartitionId
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.read import ReadParams, read_partitions
from tests.support.log_batches import batch_bytes, visible

ZERO = uuid.UUID(int=0)
CONSUMER = ReadParams(max_bytes=1 << 20, hard_max_bytes_limit=False, read_committed=False, from_follower=False)


@pytest.fixture
def partitions() -> Partitions:
    p = Partitions(ClusterState(cluster_id="c", node_id=1), LogManager(None), {})
    p.create_topic("t", 2)
    for n in range(3):
        p.get("t", 0).log.append(batch_bytes([b"v%d-%d" % (n, i) + b"." * 100 for i in range(2)]))
    return p


def fetch(partition: int, offset: int, max_bytes: int = 1 << 20, **kw) -> tuple[TopicPartitionId, PartitionRequest]:
    return TopicPartitionId(ZERO, "t", partition), PartitionRequest(offset, max_bytes=max_bytes, **kw)


def test_reads_stored_batches_with_offsets(partitions) -> None:
    [(_, answer)] = read_partitions(partitions, [fetch(0, 2)], CONSUMER)
    assert answer.error_code == ErrorCode.NONE
    assert (answer.high_watermark, answer.last_stable_offset, answer.log_start_offset) == (6, 6, 0)
    assert [o for o, _ in visible(answer.records)] == [2, 3, 4, 5]
    assert answer.aborted_transactions is None


def test_first_batch_whole_then_limits_apply(partitions) -> None:
    one = len(partitions.get("t", 0).log.read(0, 1).records)
    answers = read_partitions(partitions, [fetch(0, 0, max_bytes=1), fetch(0, 2, max_bytes=1)], CONSUMER)
    assert len(answers[0][1].records) == one  # above partition_max_bytes: the first batch is whole
    assert answers[1][1].records == b""  # after that, a batch that does not fit is left for the next fetch
    shared = read_partitions(partitions, [fetch(0, 0), fetch(0, 2)], ReadParams(one + 10, False, False, False))
    assert len(shared[0][1].records) == one + 10 and shared[1][1].records == b""


def test_old_versions_get_cut_bytes(partitions) -> None:
    [(_, answer)] = read_partitions(partitions, [fetch(0, 0, max_bytes=50)], ReadParams(1 << 20, True, False, False))
    assert len(answer.records) == 50 and decode_batches(answer.records, allow_partial_tail=True) == []


def test_errors_carry_unknown_offsets(partitions) -> None:
    out = read_partitions(partitions, [fetch(0, 7), fetch(0, -1), fetch(0, 0, current_leader_epoch=3),
                                       fetch(0, 0, current_leader_epoch=0), fetch(0, 6)], CONSUMER)
    codes = [a.error_code for _, a in out]
    assert codes == [ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.UNKNOWN_LEADER_EPOCH,
                     ErrorCode.NONE, ErrorCode.NONE]
    assert (out[0][1].high_watermark, out[0][1].log_start_offset, out[0][1].records) == (-1, -1, b"")
    assert out[4][1].records == b"" and out[4][1].high_watermark == 6


def test_read_committed_answers_an_empty_aborted_list(partitions) -> None:
    [(_, answer)] = read_partitions(partitions, [fetch(1, 0)], ReadParams(1 << 20, False, True, False))
    assert answer.aborted_transactions == [] and answer.records == b""


def test_diverging_epoch_and_unknown_epoch(partitions) -> None:
    [(_, ok), (_, unknown)] = read_partitions(partitions, [fetch(0, 6, last_fetched_epoch=0), fetch(0, 0, last_fetched_epoch=4)], CONSUMER)
    assert ok.diverging_epoch is None
    partitions.get("t", 0).log.delete_records(2)
    [(_, below)] = read_partitions(partitions, [fetch(0, 0, last_fetched_epoch=0)], CONSUMER)
    assert below.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert unknown.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    [(_, ahead)] = read_partitions(partitions, [fetch(0, 9, last_fetched_epoch=0)], CONSUMER)
    assert ahead.diverging_epoch == (0, 6) and ahead.error_code == ErrorCode.NONE


def test_a_follower_is_not_a_replica_here(partitions) -> None:
    follower = ReadParams(1 << 20, False, False, True)
    [(_, a), (_, b)] = read_partitions(partitions, [fetch(0, 0), fetch(0, 0, current_leader_epoch=0)], follower)
    assert (a.error_code, b.error_code) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH)


def test_epoch_end_offsets(partitions) -> None:
    log = partitions.get("t", 0).log
    assert offsets.end_offset_for_epoch(log, 0, 0) == (0, 6)
    assert offsets.end_offset_for_epoch(log, 0, 1) == (-1, -1)
    assert offsets.end_offset_for_epoch(log, 0, -1) == (-1, -1)
    assert offsets.end_offset_for_epoch(log, 0, -5) == (-5, 0)
    log.delete_records(4)
    assert offsets.end_offset_for_epoch(log, 0, -5) == (-5, 4)


def test_offsets_by_timestamp(partitions) -> None:
    log = partitions.get("t", 0).log
    assert offsets.offset_for_timestamp(log, offsets.LATEST, 0, 6) == offsets.Found(-1, 6, 0)
    assert offsets.offset_for_timestamp(log, offsets.EARLIEST, 0, 6) == offsets.Found(-1, 0, 0)
    assert offsets.offset_for_timestamp(log, 1_700_000_000_001, 0, 6) == offsets.Found(1_700_000_000_001, 1, 0)
    assert offsets.offset_for_timestamp(log, offsets.MAX_TIMESTAMP, 0, 6) == offsets.Found(1_700_000_000_001, 1, 0)
    assert offsets.offset_for_timestamp(log, 1_800_000_000_000, 0, 6) is None
    assert offsets.offset_for_timestamp(log, offsets.LATEST_TIERED, 0, 6) == offsets.Found(-1, -1, -1)


def test_legacy_offsets(partitions) -> None:
    log = partitions.get("t", 0).log
    assert offsets.legacy_offsets_before(log, offsets.LATEST, 5) == [6, 0]
    assert offsets.legacy_offsets_before(log, offsets.EARLIEST, 5) == [0]
    assert offsets.legacy_offsets_before(log, 0, 5) == []
    assert offsets.for_consumer([9, 6, 0], 6) == [6, 6, 0]


def test_down_conversion_to_magic_1_and_0(partitions) -> None:
    records = partitions.get("t", 0).log.read(0, 1 << 20).records
    for magic in (0, 1):
        converted = down_convert(records, magic, 1)
        # Uncompressed: the records from the fetch offset on, as messages with their absolute offsets.
        assert len(converted) == len(records)  # padded to the bytes read with an overflow message
        assert converted[:8] == (1).to_bytes(8, "big") and converted[16] == magic


def test_down_conversion_refuses_zstd_first() -> None:
    pytest.importorskip("zstandard")
    with pytest.raises(UnsupportedForDownConversion):
        down_convert(batch_bytes([b"a"], compression=Compression.ZSTD), 1, 0)
    assert down_convert(b"", 1, 0) == b""

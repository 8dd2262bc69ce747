"""The append path without a socket: Kafka 3.9's checks of a leader append, the idempotent producer, conversion and
recompression, a failing disk, and producer state across restarts (clean, kill -9, torn tail)."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.records import Compression, TimestampType, build_batch, decode_batches, encode_batch
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.errors import CorruptBatch, StorageFailure
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.storage import FileStorage
from kafka_shim.shim.partitions.append import TRANSACTION_UNVERIFIED_MESSAGE, append_records
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.validator import check_request
from tests.support.produce import records_of

NOW = 1_700_000_000_000


def _partitions(data_dir: Path | None = None) -> Partitions:
    partitions = Partitions(ClusterState(cluster_id="c", node_id=1), LogManager(FileStorage(data_dir) if data_dir else None),
                            {}, data_dir)
    partitions.load()
    return partitions


@pytest.fixture
def parts() -> Partitions:
    partitions = _partitions()
    partitions.create_topic("t", 1)
    return partitions


def _batch(values: list[bytes], *, pid: int = -1, epoch: int = -1, seq: int = -1, compression: Compression = Compression.NONE,
           key: bytes | None = b"k", timestamps: list[int] | None = None, transactional: bool = False, **kw: object) -> bytes:
    stamps = timestamps or [NOW + i for i in range(len(values))]
    return encode_batch(build_batch([(key, v, [("h", b"x")], ts) for v, ts in zip(values, stamps, strict=True)],
                                    producer_id=pid, producer_epoch=epoch, base_sequence=seq, compression=compression,
                                    transactional=transactional, **kw))


def _stored(partitions: Partitions, topic: str = "t") -> list:
    state = partitions.get(topic, 0)
    return records_of(state.log.read(0, 1 << 30).records)


def _patch(data: bytes, at: int, fmt: str, value: int, *, fix_crc: bool = True) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    if fix_crc:
        struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


# -- the checks of a leader append ---------------------------------------------------------------------------------


def test_records_are_written_as_sent_with_offsets(parts: Partitions) -> None:
    first = append_records(parts, "t", 0, _batch([b"a", b"b"]), now_ms=NOW)
    second = append_records(parts, "t", 0, _batch([b"c"]), now_ms=NOW)
    assert (first.error, first.base_offset, first.log_append_time, first.log_start_offset) == (ErrorCode.NONE, 0, -1, 0)
    assert second.base_offset == 2
    assert [(s.offset, s.value, s.headers) for s in _stored(parts)] == [(0, b"a", (("h", b"x"),)), (1, b"b", (("h", b"x"),)),
                                                                         (2, b"c", (("h", b"x"),))]


def test_a_bad_crc_is_corrupt_and_nothing_is_written(parts: Partitions) -> None:
    data = bytearray(_batch([b"a"]))
    data[-1] ^= 0xFF
    result = append_records(parts, "t", 0, bytes(data), now_ms=NOW)
    assert (result.error, result.log_start_offset, result.error_message) == (ErrorCode.CORRUPT_MESSAGE, -1, None)
    assert _stored(parts) == []


def test_a_batch_above_max_message_bytes_is_too_large(parts: Partitions) -> None:
    parts.create_topic("small", 1, {"max.message.bytes": "100"})
    result = append_records(parts, "small", 0, _batch([b"x" * 200]), now_ms=NOW)
    assert (result.error, result.log_start_offset) == (ErrorCode.MESSAGE_TOO_LARGE, -1)


def test_a_batch_above_segment_bytes_is_record_list_too_large(parts: Partitions) -> None:
    parts.create_topic("seg", 1, {"segment.bytes": "200"})
    result = append_records(parts, "seg", 0, _batch([b"x" * 300]), now_ms=NOW)
    assert (result.error, result.log_start_offset) == (ErrorCode.RECORD_LIST_TOO_LARGE, -1)


def test_a_base_offset_other_than_zero_is_invalid(parts: Partitions) -> None:
    result = append_records(parts, "t", 0, _batch([b"a"], base_offset=7), now_ms=NOW)
    assert (result.error, result.log_start_offset, result.error_message, result.record_errors) == (ErrorCode.INVALID_RECORD, 0, None, ())


@pytest.mark.parametrize("case", ["control", "negative_sequence", "count"])
def test_batch_rules_are_invalid_record_without_a_message(parts: Partitions, case: str) -> None:
    if case == "control":
        data = _batch([b"a"], control=True)
    elif case == "negative_sequence":
        data = _batch([b"a"], pid=5, epoch=0, seq=-1)
    else:
        data = _patch(_batch([b"a", b"b"]), 57, ">i", 3)  # recordsCount disagrees with lastOffsetDelta
    result = append_records(parts, "t", 0, data, now_ms=NOW)
    assert (result.error, result.error_message) == (ErrorCode.INVALID_RECORD, None)
    assert _stored(parts) == []


def test_a_compacted_topic_refuses_records_without_key_with_record_errors(parts: Partitions) -> None:
    parts.create_topic("compact", 1, {"cleanup.policy": "compact"})
    result = append_records(parts, "compact", 0, _batch([b"a", b"b"], key=None), now_ms=NOW)
    assert result.error == ErrorCode.INVALID_RECORD and result.log_start_offset == 0
    assert [e.batch_index for e in result.record_errors] == [0, 1]
    assert result.record_errors[0].message == "Compacted topic cannot accept message without key in topic partition compact-0"
    assert result.error_message.startswith("One or more records have been rejected due to 2 record errors in total, and only "
                                           "showing the first three errors at most: [RecordError(batchIndex=0, message='Compacted")


def test_timestamps_outside_the_bounds_are_invalid_timestamp(parts: Partitions) -> None:
    parts.create_topic("bounded", 1, {"message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "500"})
    data = _batch([b"old", b"ok", b"future"], timestamps=[NOW - 1001, NOW, NOW + 501])
    result = append_records(parts, "bounded", 0, data, now_ms=NOW)
    assert (result.error, result.error_message) == (ErrorCode.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp")
    assert [e.batch_index for e in result.record_errors] == [0, 2]
    assert result.record_errors[0].message == (f"Timestamp {NOW - 1001} of message with offset 0 is out of range. "
                                               f"The timestamp should be within [{NOW - 1000}, {NOW + 500}]")
    assert append_records(parts, "bounded", 0, _batch([b"ok"], timestamps=[NOW - 1000]), now_ms=NOW).error == ErrorCode.NONE


def test_log_append_time_topics_are_stamped(parts: Partitions) -> None:
    parts.create_topic("lat", 1, {"message.timestamp.type": "LogAppendTime"})
    result = append_records(parts, "lat", 0, _batch([b"a", b"b"], timestamps=[5, 6]))
    assert result.error == ErrorCode.NONE and result.log_append_time > NOW
    (batch,) = decode_batches(parts.get("lat", 0).log.read(0, 1 << 20).records)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.max_timestamp == result.log_append_time


def test_create_time_max_timestamp_is_corrected_to_the_records(parts: Partitions) -> None:
    data = _patch(_batch([b"a", b"b"], timestamps=[NOW, NOW + 5]), 35, ">q", NOW + 999)
    assert append_records(parts, "t", 0, data, now_ms=NOW).error == ErrorCode.NONE
    (batch,) = decode_batches(parts.get("t", 0).log.read(0, 1 << 20).records)
    assert batch.max_timestamp == NOW + 5


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_compressed_batches_are_kept_as_sent(parts: Partitions, codec: Compression) -> None:
    data = _batch([b"v" * 100, b"w" * 100], compression=codec)
    assert append_records(parts, "t", 0, data, now_ms=NOW).error == ErrorCode.NONE
    stored = parts.get("t", 0).log.read(0, 1 << 20).records
    assert stored[8:12] == data[8:12] and stored[16:] == data[16:]  # only base offset and leader epoch differ


def test_a_topic_codec_recompresses_keeping_the_producer_fields(parts: Partitions) -> None:
    parts.create_topic("gz", 1, {"compression.type": "gzip"})
    result = append_records(parts, "gz", 0, _batch([b"a", b"b"], pid=9, epoch=2, seq=0, compression=Compression.LZ4), now_ms=NOW)
    assert result.error == ErrorCode.NONE
    (batch,) = decode_batches(parts.get("gz", 0).log.read(0, 1 << 20).records)
    assert (batch.compression, batch.producer_id, batch.producer_epoch, batch.base_sequence) == (Compression.GZIP, 9, 2, 0)
    assert [(r.key, r.value, r.headers[0].key) for r in batch.records] == [(b"k", b"a", "h"), (b"k", b"b", "h")]
    assert parts.get("gz", 0).producers.entry(9).last_seq == 1
    parts.create_topic("plain", 1, {"compression.type": "uncompressed"})
    assert append_records(parts, "plain", 0, _batch([b"z"], compression=Compression.ZSTD), now_ms=NOW).error == ErrorCode.NONE
    assert decode_batches(parts.get("plain", 0).log.read(0, 1 << 20).records)[0].compression is Compression.NONE


@pytest.mark.parametrize(("magic", "codec"), [(0, 0), (1, 0), (1, 1), (0, 1), (1, 2)])
def test_magic_0_and_1_message_sets_are_converted(parts: Partitions, magic: int, codec: int) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    builder.append(0, timestamp=NOW, key=b"k0", value=b"v0")
    builder.append(1, timestamp=NOW + 1, key=None, value=b"v1")
    result = append_records(parts, "t", 0, bytes(builder.build()), now_ms=NOW)
    assert (result.error, result.base_offset) == (ErrorCode.NONE, 0)
    stored = _stored(parts)
    assert [(s.offset, s.key, s.value) for s in stored] == [(0, b"k0", b"v0"), (1, None, b"v1")]
    assert [s.timestamp for s in stored] == ([-1, -1] if magic == 0 else [NOW, NOW + 1])


def test_a_legacy_message_with_a_bad_crc_is_corrupt(parts: Partitions) -> None:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=NOW, key=b"k", value=b"v")
    data = bytearray(builder.build())
    data[-1] ^= 1
    assert append_records(parts, "t", 0, bytes(data), now_ms=NOW).error == ErrorCode.CORRUPT_MESSAGE


def test_request_checks_from_v3() -> None:
    one, zstd = _batch([b"a"]), _batch([b"a"], compression=Compression.ZSTD)
    legacy = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(0, timestamp=NOW, key=None, value=b"v")
    assert check_request(3, one) is None and check_request(2, one + one) is None
    assert check_request(3, one + one).error == ErrorCode.INVALID_RECORD
    assert check_request(3, b"").error == ErrorCode.INVALID_RECORD
    assert check_request(3, one[:-1]).error == ErrorCode.INVALID_RECORD  # a partial batch is no batch
    assert check_request(3, bytes(legacy.build())).error == ErrorCode.INVALID_RECORD
    assert check_request(6, zstd).error == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE and check_request(7, zstd) is None
    assert check_request(9, _patch(one, 8, ">i", 3, fix_crc=False)).error == ErrorCode.CORRUPT_MESSAGE


def test_min_insync_replicas_above_the_replication_factor_counts_as_the_factor(parts: Partitions) -> None:
    # Partition.effectiveMinIsr (Kafka 3.7+): one replica in sync satisfies min.insync.replicas=2 on a topic of one
    # replica; refusals when the ISR shrinks below it: tests/shim/cluster/test_cluster_with_clients.py.
    parts.create_topic("isr", 1, {"min.insync.replicas": "2"})
    assert append_records(parts, "isr", 0, _batch([b"a"]), acks=-1, now_ms=NOW).error == ErrorCode.NONE
    assert append_records(parts, "isr", 0, _batch([b"a"]), acks=1, now_ms=NOW).error == ErrorCode.NONE


def test_before_kafka_3_7_min_insync_replicas_above_the_replicas_refuses_acks_all() -> None:
    """An emulated release before 3.7 had no effectiveMinIsr: the configured value stands, and one in-sync replica
    is too few for acks=all (acks=1 still writes)."""
    parts = Partitions(ClusterState("c", 1), LogManager(), {}, min_isr_capped=False)
    parts.create_topic("isr", 1, {"min.insync.replicas": "2"})
    refused = append_records(parts, "isr", 0, _batch([b"a"]), acks=-1, now_ms=NOW)
    assert (refused.error, refused.error_message) == (ErrorCode.NOT_ENOUGH_REPLICAS, None)  # Kafka's text only in its log
    assert append_records(parts, "isr", 0, _batch([b"a"]), acks=1, now_ms=NOW).error == ErrorCode.NONE


def test_a_failing_disk_is_a_storage_error_and_the_log_stays_whole(parts: Partitions, monkeypatch: pytest.MonkeyPatch) -> None:
    append_records(parts, "t", 0, _batch([b"a"], pid=1, epoch=0, seq=0), now_ms=NOW)
    directory = parts.get("t", 0).log.directory

    def full(file: str, data: bytes) -> None:
        raise StorageFailure("No space left on device")

    monkeypatch.setattr(directory, "append", full)
    failed = append_records(parts, "t", 0, _batch([b"b"], pid=1, epoch=0, seq=1), now_ms=NOW)
    assert (failed.error, failed.log_start_offset) == (ErrorCode.KAFKA_STORAGE_ERROR, -1)
    monkeypatch.undo()
    retried = append_records(parts, "t", 0, _batch([b"b"], pid=1, epoch=0, seq=1), now_ms=NOW)
    assert (retried.error, retried.base_offset) == (ErrorCode.NONE, 1)
    assert [s.value for s in _stored(parts)] == [b"a", b"b"]


def test_transactional_batches_answer_what_kafka_answers_without_a_coordinator(parts: Partitions) -> None:
    from kafka_shim.shim.partitions.append import transaction_unverified

    result = transaction_unverified(parts.get("t", 0))
    assert (result.error, result.error_message, result.log_start_offset) == (
        ErrorCode.NOT_ENOUGH_REPLICAS, TRANSACTION_UNVERIFIED_MESSAGE, -1)


# -- the idempotent producer ---------------------------------------------------------------------------------------


def test_a_retried_batch_gets_its_original_offsets_and_is_written_once(parts: Partitions) -> None:
    first = append_records(parts, "t", 0, _batch([b"a", b"b"], pid=3, epoch=0, seq=0), now_ms=NOW)
    append_records(parts, "t", 0, _batch([b"c"], pid=3, epoch=0, seq=2), now_ms=NOW)
    retry = append_records(parts, "t", 0, _batch([b"a", b"b"], pid=3, epoch=0, seq=0), now_ms=NOW)
    assert (retry.error, retry.base_offset, retry.log_append_time) == (ErrorCode.NONE, first.base_offset, NOW + 1)
    assert [s.value for s in _stored(parts)] == [b"a", b"b", b"c"]


def test_a_sequence_gap_and_an_old_epoch_are_refused(parts: Partitions) -> None:
    append_records(parts, "t", 0, _batch([b"a"], pid=3, epoch=1, seq=0), now_ms=NOW)
    gap = append_records(parts, "t", 0, _batch([b"c"], pid=3, epoch=1, seq=5), now_ms=NOW)
    old = append_records(parts, "t", 0, _batch([b"d"], pid=3, epoch=0, seq=1), now_ms=NOW)
    assert (gap.error, gap.log_start_offset, gap.error_message) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, None)
    assert (old.error, old.log_start_offset) == (ErrorCode.INVALID_PRODUCER_EPOCH, 0)
    assert [s.value for s in _stored(parts)] == [b"a"]


# -- producer state across restarts --------------------------------------------------------------------------------


def _write_three(partitions: Partitions) -> None:
    for seq, value in enumerate([b"a", b"b", b"c"]):
        assert append_records(partitions, "t", 0, _batch([value], pid=7, epoch=0, seq=seq), now_ms=NOW).error == ErrorCode.NONE


@pytest.mark.parametrize("shutdown", ["clean", "kill"])
def test_producer_state_survives_a_restart(tmp_path: Path, shutdown: str) -> None:
    first = _partitions(tmp_path)
    first.create_topic("t", 1)
    _write_three(first)
    if shutdown == "clean":
        first.close()
        assert list((tmp_path / "t-0").glob("*.snapshot"))
    else:  # kill -9: no close, no snapshot; the bytes were handed to the operating system at each append
        first.logs.storage.close()
    second = _partitions(tmp_path)
    retry = append_records(second, "t", 0, _batch([b"c"], pid=7, epoch=0, seq=2), now_ms=NOW)
    assert (retry.error, retry.base_offset) == (ErrorCode.NONE, 2)
    gap = append_records(second, "t", 0, _batch([b"e"], pid=7, epoch=0, seq=9), now_ms=NOW)
    assert gap.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert append_records(second, "t", 0, _batch([b"d"], pid=7, epoch=0, seq=3), now_ms=NOW).base_offset == 3
    assert [s.value for s in _stored(second)] == [b"a", b"b", b"c", b"d"]


def test_a_torn_last_batch_is_not_remembered_so_its_retry_is_written_once(tmp_path: Path) -> None:
    first = _partitions(tmp_path)
    first.create_topic("t", 1)
    _write_three(first)
    first.logs.storage.close()
    log_file = tmp_path / "t-0" / f"{0:020d}.log"
    whole = log_file.read_bytes()
    last = len(_batch([b"c"], pid=7, epoch=0, seq=2))
    log_file.write_bytes(whole[: len(whole) - last // 2])  # the crash tore the third batch
    second = _partitions(tmp_path)
    retry = append_records(second, "t", 0, _batch([b"c"], pid=7, epoch=0, seq=2), now_ms=NOW)
    assert (retry.error, retry.base_offset) == (ErrorCode.NONE, 2)
    assert append_records(second, "t", 0, _batch([b"b"], pid=7, epoch=0, seq=1), now_ms=NOW).base_offset == 1  # duplicate
    assert [s.value for s in _stored(second)] == [b"a", b"b", b"c"]


def test_a_snapshot_ahead_of_the_log_is_ignored(tmp_path: Path) -> None:
    first = _partitions(tmp_path)
    first.create_topic("t", 1)
    _write_three(first)
    first.close()
    directory = tmp_path / "t-0"
    (directory / f"{99:020d}.snapshot").write_bytes((directory / f"{3:020d}.snapshot").read_bytes())
    second = _partitions(tmp_path)
    assert not (directory / f"{99:020d}.snapshot").exists()
    assert second.get("t", 0).producers.entry(7).last_seq == 2


@pytest.mark.parametrize("configs", [{}, {"message.timestamp.before.max.ms": "99999999999999"}], ids=["scan", "records"])
@pytest.mark.parametrize(("codec", "at", "error"), [
    (Compression.NONE, 61, ErrorCode.INVALID_RECORD),  # a record's length
    (Compression.NONE, 66, ErrorCode.INVALID_RECORD),  # its key length
    (Compression.GZIP, 70, ErrorCode.UNKNOWN_SERVER_ERROR),  # the gzip stream: Kafka's KafkaException
])
def test_unreadable_records_are_refused_by_both_readers(parts: Partitions, configs: dict, codec: Compression, at: int,
                                                        error: ErrorCode) -> None:
    """The fast scan (defaults: no record can be refused) and the full record reader refuse the same batches."""
    parts.create_topic("r", 1, configs)
    data = bytearray(_batch([b"a" * 40, b"b" * 40], compression=codec))
    data[at : at + 4] = b"\xff\xfe\xfd\xfc"
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    result = append_records(parts, "r", 0, bytes(data), now_ms=NOW)
    assert (result.error, result.error_message) == (error, None)


def test_timestamps_that_wrap_a_java_long_are_read_the_slow_way(parts: Partitions) -> None:
    from kafka_shim.protocol.records import Record, RecordBatch

    top = 2**63 - 1  # the second record's base + delta wraps to Long.MIN_VALUE, as Kafka's sum does
    data = encode_batch(RecordBatch(last_offset_delta=1, base_timestamp=top, max_timestamp=top,
                                    records=[Record(0, 0, b"k", b"a"), Record(1, 1, b"k", b"b")]))
    assert append_records(parts, "t", 0, data, now_ms=NOW).error == ErrorCode.NONE
    (batch,) = decode_batches(parts.get("t", 0).log.read(0, 1 << 20).records)
    assert batch.max_timestamp == 2**63 - 1


def test_idle_producers_expire_as_kafka_expires_them() -> None:
    partitions = Partitions(ClusterState(cluster_id="c", node_id=1), LogManager(), {"producer.id.expiration.ms": "60000"}, None)
    partitions.load()
    partitions.create_topic("t", 1)
    append_records(partitions, "t", 0, _batch([b"a"], pid=5, epoch=0, seq=0, timestamps=[NOW]), now_ms=NOW)
    # Within the check interval the producer is remembered: a gap is refused.
    gap = append_records(partitions, "t", 0, _batch([b"b"], pid=5, epoch=0, seq=7, timestamps=[NOW]), now_ms=NOW + 120_000)
    assert gap.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # Once producer.id.expiration.check.interval.ms has passed, the idle producer is dropped: any sequence is new.
    later = NOW + 600_000
    assert append_records(partitions, "t", 0, _batch([b"b"], pid=5, epoch=0, seq=7, timestamps=[later]), now_ms=later).error == 0
    assert partitions.get("t", 0).producers.entry(5).last_seq == 7


def test_two_magic_2_batches_in_one_append_are_invalid(parts: Partitions) -> None:
    """Produce v0-2 may carry several batches, but Kafka 3.9's LogValidator takes one magic-2 batch per append."""
    result = append_records(parts, "t", 0, _batch([b"a"]) + _batch([b"b"]), now_ms=NOW)
    assert (result.error, result.log_start_offset) == (ErrorCode.INVALID_RECORD, 0)
    assert _stored(parts) == []


def test_config_changes_reach_the_next_append(parts: Partitions) -> None:
    """The append settings are kept between Produce requests; a topic override or a dynamic broker property changed in
    between must still be obeyed by the very next append."""
    batch = _batch([b"v" * 200])
    assert append_records(parts, "t", 0, batch, now_ms=NOW).error == ErrorCode.NONE
    parts.set_topic_configs("t", {"max.message.bytes": "100"})
    assert append_records(parts, "t", 0, batch, now_ms=NOW).error == ErrorCode.MESSAGE_TOO_LARGE
    parts.set_topic_configs("t", {})
    assert append_records(parts, "t", 0, batch, now_ms=NOW).error == ErrorCode.NONE
    parts.set_broker_properties({"message.max.bytes": "100"})
    assert append_records(parts, "t", 0, batch, now_ms=NOW).error == ErrorCode.MESSAGE_TOO_LARGE
    parts.set_broker_properties({})
    assert append_records(parts, "t", 0, batch, now_ms=NOW).error == ErrorCode.NONE
    parts.create_topic("u", 1, {"max.message.bytes": "100"})
    assert append_records(parts, "u", 0, batch, now_ms=NOW).error == ErrorCode.MESSAGE_TOO_LARGE
    assert append_records(parts, "t", 0, batch, now_ms=NOW).error == ErrorCode.NONE


def test_the_log_still_refuses_a_batch_whose_crc_fails_when_not_told_otherwise() -> None:
    """The produce path tells the log the CRCs were checked; any other caller still gets the log's own check."""
    state = _partitions()
    state.create_topic("t", 1)
    log = state.get("t", 0).log
    bad = _patch(_batch([b"v"]), 40, ">q", NOW + 5, fix_crc=False)
    with pytest.raises(CorruptBatch, match="CRC"):
        log.append(bad)
    assert log.log_end_offset == 0

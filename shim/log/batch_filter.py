"""One stored batch through the log cleaner's filter: dropped, copied as it is, rebuilt with the records kept, or
kept as an empty header.

Kafka's counterpart: ``MemoryRecords.filterTo`` with ``buildRetainedRecordsInto`` and
``DefaultRecordBatch.writeEmptyHeader``. Facts kept from Kafka 3.9:

- a batch the retention check deletes is not looked into;
- a batch whose records are all kept is copied byte for byte, unless it holds a tombstone (or is a marker whose
  transaction has no data left) and has no delete horizon yet: then, as a rebuilt batch, it gets one;
- a rebuilt batch keeps the base offset, last offset delta (so the producer's last sequence survives), leader epoch,
  producer id, epoch, base sequence, codec, timestamp type and transactional and control flags; its records are
  written again with their offsets and timestamps (a LogAppendTime batch's records take its max timestamp), relative
  to the delete horizon when it has one (the horizon is then the base timestamp and attribute bit 6 is set), else to
  the first kept record; the max timestamp is the largest kept one (the append time for LogAppendTime);
- with no record kept, a batch that must stay (the last of an active producer) becomes a 61-byte header: no records,
  no codec, no base timestamp (-1), the original max timestamp and offsets;
- for the segment's indexes, each kept batch reports its max timestamp with its last offset, and its largest offset
  (the last kept record's offset for a rebuilt batch).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from kafka_shim.protocol.records import Record, RecordBatch, TimestampType, encode_batch
from kafka_shim.protocol.records.batch import batch_attributes

NO_TIMESTAMP = -1


class BatchRetention(enum.Enum):
    DELETE = "delete"  # drop the batch without looking at its records
    RETAIN_EMPTY = "retain_empty"  # keep the batch even when no record is kept
    DELETE_EMPTY = "delete_empty"  # drop the batch when no record is kept


@dataclass(frozen=True, slots=True)
class FilteredBatch:
    data: bytes | memoryview
    max_timestamp: int
    offset_of_max_timestamp: int  # the batch's last offset (Kafka's shallow offset)
    max_offset: int
    records_kept: int


def record_timestamp(batch: RecordBatch, record: Record) -> int:
    """Record.timestamp() of a stored record: the batch's max timestamp for LogAppendTime."""
    if batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return batch.max_timestamp
    return batch.base_timestamp + record.timestamp_delta


def filter_batch(
    raw: bytes | memoryview,
    batch: RecordBatch,
    retention: BatchRetention,
    keep: Callable[[Record], bool],
    *,
    marker_for_empty_txn: bool,
    now_ms: int,
    delete_retention_ms: int,
) -> FilteredBatch | None:
    """What of ``batch`` (stored as ``raw``) the cleaned segment gets, or None when nothing."""
    if retention is BatchRetention.DELETE:
        return None
    kept = [record for record in batch.records if keep(record)]
    if not kept:
        if retention is not BatchRetention.RETAIN_EMPTY:
            return None
        empty = RecordBatch(
            base_offset=batch.base_offset, partition_leader_epoch=batch.partition_leader_epoch,
            attributes=batch_attributes(timestamp_type=batch.timestamp_type, transactional=batch.is_transactional,
                                        control=batch.is_control),
            last_offset_delta=batch.last_offset_delta, base_timestamp=NO_TIMESTAMP, max_timestamp=batch.max_timestamp,
            producer_id=batch.producer_id, producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
        )
        return FilteredBatch(encode_batch(empty), batch.max_timestamp, batch.last_offset, batch.last_offset, 0)
    tombstones = any(record.value is None for record in kept)
    needs_horizon = (tombstones or marker_for_empty_txn) and not batch.has_delete_horizon
    max_offset = batch.base_offset + kept[-1].offset_delta
    if len(kept) == len(batch.records) and not needs_horizon:
        return FilteredBatch(raw, batch.max_timestamp, batch.last_offset, batch.last_offset, len(kept))
    if needs_horizon:
        horizon = now_ms + delete_retention_ms
    else:
        horizon = batch.base_timestamp if batch.has_delete_horizon else NO_TIMESTAMP
    rebuilt = _rebuilt(batch, kept, horizon)
    return FilteredBatch(encode_batch(rebuilt), rebuilt.max_timestamp, batch.last_offset, max_offset, len(kept))


def _rebuilt(batch: RecordBatch, kept: list[Record], horizon: int) -> RecordBatch:
    timestamps = [record_timestamp(batch, record) for record in kept]
    base_timestamp = horizon if horizon >= 0 else timestamps[0]
    if batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
        max_timestamp = batch.max_timestamp
    else:
        max_timestamp = max([NO_TIMESTAMP, *timestamps])
    return RecordBatch(
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        attributes=batch_attributes(batch.compression, batch.timestamp_type, transactional=batch.is_transactional,
                                    control=batch.is_control, delete_horizon=horizon >= 0),
        last_offset_delta=batch.last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        records=[
            Record(record.offset_delta, timestamp - base_timestamp, record.key, record.value, record.headers)
            for record, timestamp in zip(kept, timestamps, strict=True)
        ],
    )

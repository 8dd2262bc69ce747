"""Idempotent-producer state across restarts: a snapshot at a clean shutdown, the log replayed after it.

Kafka's counterparts: ``UnifiedLog.rebuildProducerState`` / ``loadProducersFromRecords`` (at open: the newest
snapshot at or below the recovered log end, then every batch after it, unvalidated, origin REPLICATION) and
``ProducerStateManager.takeSnapshot`` (at roll and at a clean shutdown; here at a clean shutdown only, so after a
kill -9 the replay starts at the last clean shutdown's snapshot or at the log start). Snapshots are
``<offset>.snapshot`` files in Kafka's format (:mod:`kafka_shim.shim.producers.snapshot`) in the partition directory,
written through the same storage as the log (so in memory too).

Transactions replay too (``UnifiedLog.loadProducersFromRecords`` / ``LogSegment.updateProducerState``): a
transactional batch opens its producer's transaction, a marker (control batch) ends it, and an aborted one is written
back to its segment's ``.txnindex`` if that lacks it (a kill -9 between the marker and its index entry); the
snapshot carries the transactions open at a clean shutdown (``current_txn_first_offset``).

Because the replay reads only what recovery kept of the log, a batch torn by a crash is not remembered: its retry is
written once, and a batch that was acknowledged (whole in the log) is recognised as a duplicate when retried.
"""

from __future__ import annotations

import struct

from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.records import NO_SEQUENCE, decode_batch
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.batches import BatchHeader
from kafka_shim.shim.log.errors import LogError
from kafka_shim.shim.log.partition_log import PartitionLog
from kafka_shim.shim.log.segment import Segment
from kafka_shim.shim.log.txn_index import AbortedTxn
from kafka_shim.shim.producers.snapshot import SNAPSHOT_SUFFIX, CorruptSnapshotError, decode_snapshot, encode_snapshot
from kafka_shim.shim.producers.state import PartitionProducers, increment_sequence

log = get_logger(__name__)

_PRODUCER_FIELDS = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence at byte 43 of a batch
_PRODUCER_AT = 43
_HEADER_SIZE = 61
_CONTROL_BIT = 0x20
_TRANSACTIONAL_BIT = 0x10
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")
_KEEP_SNAPSHOTS = 2


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offsets(partition_log: PartitionLog) -> list[int]:
    names = (f[: -len(SNAPSHOT_SUFFIX)] for f in partition_log.directory.list() if f.endswith(SNAPSHOT_SUFFIX))
    return sorted(int(stem) for stem in names if stem.isdigit())


def recover_producers(partition_log: PartitionLog, partition: str, expiration_ms: int | None = None) -> PartitionProducers:
    """The partition's producer state: the newest readable snapshot at or below the log end, then the log after it."""
    producers = PartitionProducers(partition) if expiration_ms is None else PartitionProducers(partition, expiration_ms)
    directory = partition_log.directory
    end = partition_log.log_end_offset
    start = partition_log.log_start_offset
    for offset in reversed(snapshot_offsets(partition_log)):
        name = snapshot_name(offset)
        if offset > end:  # written before a truncation: it knows batches the log no longer has
            directory.delete(name)
            continue
        try:
            producers.load(decode_snapshot(directory.read(name, 0, directory.size(name))))
        except CorruptSnapshotError as exc:
            log.warning("producer_snapshot_corrupt", partition=partition, file=name, error=str(exc))
            directory.delete(name)
            continue
        start = max(offset, start)
        break
    replayed = _replay(partition_log, producers, start)
    if replayed or len(producers):
        log.info("producer_state_loaded", partition=partition, producers=len(producers), replayed_batches=replayed,
                 from_offset=start)
    return producers


def _replay(partition_log: PartitionLog, producers: PartitionProducers, start: int) -> int:
    replayed = 0
    for segment in partition_log.segments:
        if segment.next_offset <= start:
            continue
        for header in segment.batches_from(0):
            if header.last_offset < start:
                continue
            producer_id, epoch, base_sequence = _PRODUCER_FIELDS.unpack(
                segment.read(header.position + _PRODUCER_AT, _PRODUCER_FIELDS.size))
            if producer_id < 0:
                continue
            if header.attributes & _CONTROL_BIT:
                _replay_marker(segment, header, producers, producer_id, epoch)
            else:
                count = header.last_offset - header.base_offset
                # DefaultRecordBatch.lastSequence: a batch without a base sequence has none at its end either
                last_sequence = NO_SEQUENCE if base_sequence == NO_SEQUENCE else increment_sequence(base_sequence, count)
                producers.record_append(producer_id, epoch, base_sequence, last_sequence,
                                        header.base_offset, header.last_offset, header.max_timestamp,
                                        transactional=bool(header.attributes & _TRANSACTIONAL_BIT))
            replayed += 1
    return replayed


def _replay_marker(segment: Segment, header: BatchHeader, producers: PartitionProducers, producer_id: int, epoch: int) -> None:
    """ProducerAppendInfo.append of a control batch (origin REPLICATION, nothing checked)."""
    try:
        batch = decode_batch(segment.read(header.position, header.size))
    except DecodeError as exc:
        log.warning("control_batch_unreadable", segment=segment.log_file, offset=header.base_offset, error=str(exc))
        return
    if not batch.records:  # compacted away: nothing to end
        return
    record = batch.records[0]
    if record.key is None or len(record.key) < _CONTROL_KEY.size or record.value is None or len(record.value) < _MARKER_VALUE.size:
        return
    _version, kind = _CONTROL_KEY.unpack_from(record.key)
    if kind not in (0, 1):  # not an end-transaction marker
        return
    _version, coordinator_epoch = _MARKER_VALUE.unpack_from(record.value)
    timestamp = batch.max_timestamp if header.attributes & 0x08 else batch.base_timestamp + record.timestamp_delta
    completed = producers.record_marker(producer_id, epoch, coordinator_epoch, header.base_offset, timestamp, kind == 1)
    if completed is None:
        return
    if completed.is_aborted:
        index = segment.txn_index
        if not index.entries or index.entries[-1].last_offset < completed.last_offset:
            index.append(AbortedTxn(producer_id, completed.first_offset, completed.last_offset,
                                    producers.last_stable_offset_after(completed)))
    producers.complete_txn(completed)


def save_snapshot(partition_log: PartitionLog, producers: PartitionProducers) -> None:
    """Write ``<log end offset>.snapshot`` (a clean shutdown), keeping the newest two; a failing disk is logged."""
    offset = partition_log.log_end_offset
    try:
        partition_log.directory.replace(snapshot_name(offset), encode_snapshot(producers.entries()))
        for old in snapshot_offsets(partition_log)[:-_KEEP_SNAPSHOTS]:
            partition_log.directory.delete(snapshot_name(old))
    except (LogError, OSError) as exc:
        log.warning("producer_snapshot_not_written", partition=partition_log.directory.name, error=str(exc),
                    hint="the next start replays the log instead")

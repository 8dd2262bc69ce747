"""Idempotent-producer state across restarts: a snapshot at a clean shutdown, the log replayed after it.

Kafka's counterparts: ``UnifiedLog.rebuildProducerState`` / ``loadProducersFromRecords`` (at open: the newest
snapshot at or below the recovered log end, then every batch after it, unvalidated, origin REPLICATION) and
``ProducerStateManager.takeSnapshot`` (at roll and at a clean shutdown; here at a clean shutdown only, so after a
kill -9 the replay starts at the last clean shutdown's snapshot or at the log start). Snapshots are
``<offset>.snapshot`` files in Kafka's format (:mod:`kafka_shim.shim.producers.snapshot`) in the partition directory,
written through the same storage as the log (so in memory too).

Because the replay reads only what recovery kept of the log, a batch torn by a crash is not remembered: its retry is
written once, and a batch that was acknowledged (whole in the log) is recognised as a duplicate when retried.
"""

from __future__ import annotations

import struct

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.errors import LogError
from kafka_shim.shim.log.partition_log import PartitionLog
from kafka_shim.shim.producers.snapshot import SNAPSHOT_SUFFIX, CorruptSnapshotError, decode_snapshot, encode_snapshot
from kafka_shim.shim.producers.state import PartitionProducers, increment_sequence

log = get_logger(__name__)

_PRODUCER_FIELDS = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence at byte 43 of a batch
_PRODUCER_AT = 43
_HEADER_SIZE = 61
_CONTROL_BIT = 0x20
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
            if header.last_offset < start or header.attributes & _CONTROL_BIT:
                continue
            producer_id, epoch, base_sequence = _PRODUCER_FIELDS.unpack(
                segment.read(header.position + _PRODUCER_AT, _PRODUCER_FIELDS.size))
            if producer_id < 0:
                continue
            count = header.last_offset - header.base_offset
            producers.record_append(producer_id, epoch, base_sequence, increment_sequence(base_sequence, count),
                                    header.base_offset, header.last_offset, header.max_timestamp)
            replayed += 1
    return replayed


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

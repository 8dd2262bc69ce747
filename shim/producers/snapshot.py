"""Producer-state snapshots in Kafka 3.9's own file format, so ``kafka-dump-log.sh`` reads them.

A partition directory holds ``<offset>.snapshot`` files (the offset zero-padded to 20 digits, LogFileUtils
.producerSnapshotFile); ``<offset>`` is the log end offset when the snapshot was taken, and a restart replays the log's
batches from there on (:func:`kafka_shim.shim.producers.state.rebuild`).

The format (ProducerStateManager.writeSnapshot / readSnapshot, version 1), big-endian:

    int16 version (1) | uint32 crc | int32 count | count x entry
    entry: int64 producer_id | int16 epoch | int32 last_sequence | int64 last_offset | int32 offset_delta
           | int64 timestamp | int32 coordinator_epoch | int64 current_txn_first_offset (-1: none)

The CRC is CRC-32C of everything after it (from the count on). Like Kafka, a snapshot keeps only the LAST batch of each
producer, not the five-batch window: after a restart from a snapshot at the log end, only a retry of each producer's
last batch is recognised as a duplicate, exactly as Kafka 3.9 behaves. An entry with ``last_offset < 0`` has an
epoch but no batch.

Files are written to a temporary name, fsynced, then renamed over the target (Kafka writes in place; the rename makes
a torn snapshot impossible). A corrupt snapshot is skipped in favour of the previous one, as
ProducerStateManager.loadFromSnapshot does (it deletes it; so does :func:`latest_snapshot`).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kafka_shim.protocol.records.crc import crc32c
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.producers.state import ProducerEntry

log = get_logger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_ENTRIES_OFFSET = _HEADER.size  # where the CRC starts counting (PRODUCER_ENTRIES_OFFSET in Kafka)


class CorruptSnapshotError(ValueError):
    """The file is not a readable version-1 producer snapshot (Kafka's CorruptSnapshotException)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    offset: int
    entries: list[ProducerEntry]


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def encode_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    rows = [
        _ENTRY.pack(
            entry.producer_id,
            entry.epoch,
            entry.last_seq,
            entry.last_offset,
            entry.batches[-1].offset_delta if entry.batches else 0,
            entry.last_timestamp,
            entry.coordinator_epoch,
            -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset,
        )
        for entry in entries
    ]
    body = _COUNT.pack(len(rows)) + b"".join(rows)
    return _HEADER.pack(SNAPSHOT_VERSION, crc32c(body)) + body


def decode_snapshot(data: bytes) -> list[ProducerEntry]:
    if len(data) < _HEADER.size + _COUNT.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is shorter than its header")
    version, crc = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = crc32c(data[_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}")
    (count,) = _COUNT.unpack_from(data, _ENTRIES_OFFSET)
    start = _ENTRIES_OFFSET + _COUNT.size
    if count < 0 or len(data) != start + count * _ENTRY.size:
        raise CorruptSnapshotError(f"snapshot announces {count} entries but holds {len(data) - start} bytes of them")
    entries = []
    for producer_id, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch, txn_first in _ENTRY.iter_unpack(
        data[start:]
    ):
        entry = ProducerEntry(producer_id, epoch, coordinator_epoch=coordinator_epoch)
        entry.current_txn_first_offset = txn_first if txn_first >= 0 else None
        if last_offset >= 0:  # readSnapshot: an entry without a batch has offset -1
            entry.add_batch(epoch, last_seq, last_offset, offset_delta, timestamp)
        entry.last_timestamp = timestamp
        entries.append(entry)
    return entries


def write_snapshot(directory: Path, offset: int, entries: Iterable[ProducerEntry]) -> Path:
    """Write ``<offset>.snapshot`` in ``directory`` atomically and durably; returns its path."""
    target = snapshot_path(directory, offset)
    temporary = target.with_name(target.name + ".tmp")
    with open(temporary, "wb") as file:
        file.write(encode_snapshot(entries))
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, target)
    _fsync_directory(directory)
    return target


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshots in ``directory``, lowest first."""
    offsets = []
    for path in directory.glob(f"*{SNAPSHOT_SUFFIX}"):
        stem = path.name[: -len(SNAPSHOT_SUFFIX)]
        if stem.isdigit():
            offsets.append(int(stem))
    return sorted(offsets)


def read_snapshot(directory: Path, offset: int) -> Snapshot:
    return Snapshot(offset, decode_snapshot(snapshot_path(directory, offset).read_bytes()))


def latest_snapshot(directory: Path, *, at_most: int | None = None) -> Snapshot | None:
    """The newest readable snapshot (at or below ``at_most``, e.g. the recovered log end), deleting corrupt ones on
    the way as ProducerStateManager.loadFromSnapshot does; None when there is none."""
    for offset in reversed(snapshot_offsets(directory)):
        if at_most is not None and offset > at_most:
            continue
        try:
            return read_snapshot(directory, offset)
        except CorruptSnapshotError as error:
            log.warning("producer_snapshot_corrupt", path=str(snapshot_path(directory, offset)), error=str(error))
            snapshot_path(directory, offset).unlink(missing_ok=True)
    return None


def delete_snapshots(directory: Path, *, below: int | None = None, above: int | None = None) -> list[int]:
    """Delete snapshots with offset < ``below`` (log start moved) or > ``above`` (log truncated); returns their offsets."""
    deleted = []
    for offset in snapshot_offsets(directory):
        if (below is not None and offset < below) or (above is not None and offset > above):
            snapshot_path(directory, offset).unlink(missing_ok=True)
            deleted.append(offset)
    return deleted


def _fsync_directory(directory: Path) -> None:
    # The rename is durable only once the directory entry is; not every platform can open a directory.
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)

"""``leader-epoch-checkpoint``: a partition's leader-epoch cache, kept beside its segments as Kafka keeps it.

Kafka's counterpart: ``LeaderEpochCheckpointFile`` (a ``CheckpointFile`` of ``EpochEntry``): the lines ``0`` (the
version), the number of entries, then ``<epoch> <start offset>`` per entry, oldest first. Written beside and renamed
over, so it is whole or absent; an unreadable file reads as absent (Kafka would stop the log dir; kafka-shim starts
the cache afresh from the log start, and says so).
"""

from __future__ import annotations

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.storage import Directory

log = get_logger(__name__)

FILE = "leader-epoch-checkpoint"
VERSION = 0


def write(directory: Directory, entries: list[tuple[int, int]]) -> None:
    lines = [str(VERSION), str(len(entries)), *(f"{epoch} {start}" for epoch, start in entries)]
    directory.replace(FILE, ("\n".join(lines) + "\n").encode("ascii"))


def read(directory: Directory) -> list[tuple[int, int]] | None:
    """The recorded (epoch, start offset) entries, or None when there is no readable file."""
    if not directory.exists(FILE):
        return None
    text = directory.read(FILE, 0, directory.size(FILE)).decode("ascii", "replace")
    lines = text.split("\n")
    try:
        if lines[0].strip() != str(VERSION):
            raise ValueError(f"version {lines[0]!r}")
        count = int(lines[1])
        entries = [(int(epoch), int(start)) for epoch, start in (line.split() for line in lines[2 : 2 + count])]
        if len(entries) != count:
            raise ValueError(f"{len(entries)} entries, expected {count}")
    except (IndexError, ValueError) as exc:
        log.warning("leader_epoch_checkpoint_unreadable", directory=directory.name, error=str(exc),
                    hint="the partition's leader epochs start again from its log start offset")
        return None
    return entries

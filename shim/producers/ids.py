"""Producer ids for InitProducerId without a transactional id, never handed out twice.

Kafka 3.9 (KRaft): the controller hands brokers blocks of ``PRODUCER_ID_BLOCK_SIZE`` (1000) ids, the first block
starting at 0 (ProducerIdControlManager, ProducerIdsBlock.EMPTY), and records the next block's start in the metadata
log (ProducerIdsRecord) before the block is used; the broker takes ids from its block in order (RPCProducerIdManager).
A restarted broker asks for a fresh block, so ids skip the rest of the old one and never repeat. For a producer
without a transactional id, TransactionCoordinator.handleInitProducerId always takes a new id and answers epoch 0,
whatever producer id and epoch the request carries.

kafka-shim does the same with a file instead of the metadata log: with a path, the start of the next unused block is
written (atomically, fsynced) before any id of a block is handed out; without one (no data directory) ids start at 0
in memory. A single process needs no prefetch, so Kafka's COORDINATOR_LOAD_IN_PROGRESS while a block is on its way
never happens here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.config.logging import get_logger

log = get_logger(__name__)

PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
INT64_MAX = 2**63 - 1
# The epoch a new idempotent producer starts with (TransactionCoordinator.handleInitProducerId: producerEpoch = 0).
INITIAL_EPOCH = 0
# The file beside the partition directories that records the next block (Kafka keeps it in __cluster_metadata).
ID_FILE_NAME = "kafka-shim-producer-ids.json"
_FILE_VERSION = 1


class ProducerIdsExhausted(Exception):
    """No block is left below Int64 max; Kafka's controller answers UnknownServerException (ProducerIdControlManager)."""

    error = ErrorCode.UNKNOWN_SERVER_ERROR


class ProducerIdFileError(ValueError):
    """The id file exists but cannot be read: refusing to guess rather than risk handing out an id twice."""


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    producer_id: int
    epoch: int


class ProducerIdAllocator:
    """Hands out increasing producer ids; with ``path``, ids survive restarts without repeating."""

    def __init__(self, path: Path | None = None, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        self._path = path
        self._block_size = block_size
        self._next_block = _read_next_block(path) if path is not None else 0
        # No block claimed yet: the first allocation claims one (persisting it first).
        self._next_id = self._block_end = self._next_block

    @property
    def next_block_start(self) -> int:
        """Where the next block starts (what the file says, or would say)."""
        return self._next_block

    def allocate(self) -> int:
        """A producer id no earlier allocation (in this process or, with a path, any earlier one) has returned."""
        if self._next_id >= self._block_end:
            self._claim_block()
        producer_id = self._next_id
        self._next_id += 1
        return producer_id

    def init_idempotent_producer(self) -> ProducerIdAndEpoch:
        """InitProducerId without a transactional id: a new producer id at epoch 0."""
        return ProducerIdAndEpoch(self.allocate(), INITIAL_EPOCH)

    def _claim_block(self) -> None:
        first = self._next_block
        if first > INT64_MAX - self._block_size:
            raise ProducerIdsExhausted(
                "Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit"
            )
        following = first + self._block_size
        if self._path is not None:
            _write_next_block(self._path, following)  # durable before any id of the block leaves
        self._next_block = following
        self._next_id, self._block_end = first, following
        log.info("producer_id_block_claimed", first=first, end=following, persisted=self._path is not None)


def _read_next_block(path: Path) -> int:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0
    try:
        data = json.loads(text)
        if data.get("version") != _FILE_VERSION:
            raise ProducerIdFileError(f"{path}: unknown version {data.get('version')!r}")
        value = data["next_block_start"]
    except (json.JSONDecodeError, KeyError, AttributeError) as error:
        raise ProducerIdFileError(f"{path}: not a producer id file ({error})") from error
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProducerIdFileError(f"{path}: next_block_start {value!r} is not a non-negative integer")
    return value


def _write_next_block(path: Path, next_block_start: int) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump({"version": _FILE_VERSION, "next_block_start": next_block_start}, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    try:
        descriptor = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)

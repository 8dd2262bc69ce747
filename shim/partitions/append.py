"""Writing a producer's records to a partition, as a single-node Kafka 3.9 leader does.

Kafka's counterparts: ``ReplicaManager.appendRecords`` / ``appendToLocalLog`` → ``Partition.appendRecordsToLeader``
→ ``UnifiedLog.appendAsLeader`` (with ``LogValidator``, see :mod:`.validator`) and the producer-state update
(``ProducerStateManager``). Plain state: no wire types. A Produce handler calls, per partition:

1. :func:`validate` — pure (request bytes, topic settings, clock), so a large request can run it off the loop;
2. :func:`commit` — on the event loop: ``min.insync.replicas``, the segment size, the idempotent producer's checks
   (a retried batch answers with its original offsets and writes nothing, a gap 45, an old epoch 47, a plain batch
   while the producer's transaction is open 48), the append, the producer-state update (a transactional batch opens
   the producer's transaction: the last stable offset stops there) and :meth:`Partitions.appended` so waiting
   fetches wake. Whether a transactional batch may be written at all (KIP-890 verification) is the caller's.

What a response carries follows ReplicaManager: the log start offset, except for the errors Kafka answers with
``UNKNOWN_LOG_APPEND_INFO`` (unknown partition, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE,
KAFKA_STORAGE_ERROR); ``error_message`` only for record validation (RecordValidationException) and the transaction
verification failure; a duplicate answers ``log_append_time`` with the original batch's max timestamp.

A full or failing disk (:class:`StorageFailure`) is KAFKA_STORAGE_ERROR (56) to the producer; the broker goes on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from weakref import WeakKeyDictionary

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.errors import BatchTooLarge, CorruptBatch, LogError, StorageFailure
from kafka_shim.shim.partitions.manager import Partitions, PartitionState
from kafka_shim.shim.partitions.validator import AppendSettings, RecordError, Refusal, Validated
from kafka_shim.shim.partitions.validator import validate as validate_records
from kafka_shim.shim.producers.state import BatchSequence, Outcome

log = get_logger(__name__)

ACKS = (-1, 0, 1)
# ReplicaManager answers these with UNKNOWN_LOG_APPEND_INFO: no log start offset.
_WITHOUT_LOG_START = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.UNKNOWN_TOPIC_ID,
})
# What Kafka 3.9 answers a transactional batch whose partition it cannot verify with a transaction coordinator (KIP-890
# verification; kafka-shim has no coordinator yet): ReplicaManager turns COORDINATOR_NOT_AVAILABLE into this.
TRANSACTION_UNVERIFIED_MESSAGE = (
    "Unable to verify the partition has been added to the transaction. Underlying error: COORDINATOR_NOT_AVAILABLE"
)


@dataclass(frozen=True, slots=True)
class AppendResult:
    """One partition's answer (Kafka's PartitionResponse)."""

    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    record_errors: tuple[RecordError, ...] = ()
    error_message: str | None = None


def request_refused(error: ErrorCode, message: str | None = None) -> AppendResult:
    """A partition refused before it reaches the log (authorization, existence, request checks, acks)."""
    return AppendResult(error, error_message=message)


def settings_of(partitions: Partitions, topic: str) -> AppendSettings:
    """The topic's append settings. Building them parses every topic key (~2% of a Produce), so they are kept per
    set of inputs: the topic's overrides (by content) and the broker properties (by identity: Partitions replaces
    its dict whenever a dynamic broker config changes, never edits it). A config change therefore misses the cache
    and builds afresh; nothing has to remember to invalidate it."""
    overrides = partitions.cluster.topics[topic].configs
    key = frozenset(overrides.items()) if overrides else _NO_OVERRIDES
    cached = _settings_cache.get(partitions)
    if cached is None or cached[0] is not partitions.broker_properties:
        cached = _settings_cache[partitions] = (partitions.broker_properties, {})
    by_overrides = cached[1]
    settings = by_overrides.get(key)
    if settings is None:
        if len(by_overrides) >= _SETTINGS_KEPT:
            by_overrides.clear()
        settings = by_overrides[key] = AppendSettings.from_values(partitions.topic_values(topic))
    return settings


_NO_OVERRIDES: frozenset = frozenset()
_SETTINGS_KEPT = 1024  # distinct override sets remembered; topics usually share a few
_settings_cache: WeakKeyDictionary[Partitions, tuple[object, dict[frozenset, AppendSettings]]] = WeakKeyDictionary()


def validate(records: bytes | None, settings: AppendSettings, now_ms: int, partition: str) -> Validated | Refusal:
    """LogValidator's checks and the bytes to write (pure: may run in the worker thread)."""
    return validate_records(records, settings, now_ms, partition)


def transaction_unverified(state: PartitionState) -> AppendResult:
    """A transactional batch: Kafka 3.9 first checks with the transaction coordinator that the partition was added to
    the transaction; without one (no ``__transaction_state``) it answers NOT_ENOUGH_REPLICAS with this message."""
    return AppendResult(ErrorCode.NOT_ENOUGH_REPLICAS, error_message=TRANSACTION_UNVERIFIED_MESSAGE)


def _isr(partitions: Partitions, state: PartitionState) -> list[int]:
    topic = partitions.cluster.topics.get(state.topic)
    if topic is None or state.index >= len(topic.partitions):
        return [partitions.cluster.node_id]
    return topic.partitions[state.index].isr


def effective_min_isr(partitions: Partitions, topic: str, index: int, min_insync_replicas: int) -> int:
    """Partition.effectiveMinIsr (Kafka 3.7+): a ``min.insync.replicas`` above the replication factor, which Kafka
    accepts as a config, counts as the replication factor (older releases used the configured value as it is)."""
    if not partitions.min_isr_capped:
        return min_insync_replicas
    known = partitions.cluster.topics.get(topic)
    replicas = len(known.partitions[index].replicas) if known is not None and index < len(known.partitions) else 1
    return min(min_insync_replicas, replicas)


def commit(partitions: Partitions, state: PartitionState, checked: Validated | Refusal, acks: int,
           settings: AppendSettings, *, now_ms: int | None = None) -> AppendResult:
    """Write what :func:`validate` accepted to the partition's log (Partition.appendRecordsToLeader on)."""
    partition_log = state.log
    expire_idle_producers(partitions, state, time.time_ns() // 1_000_000 if now_ms is None else now_ms)
    # Partition.appendRecordsToLeader: the in-sync replicas (fewer once a node of the cluster stopped) against
    # min.insync.replicas.
    if acks == -1 and settings.min_insync_replicas > 1:
        isr = _isr(partitions, state)
        min_isr = effective_min_isr(partitions, state.topic, state.index, settings.min_insync_replicas)
        if len(isr) < min_isr:
            # Scala's small immutable Sets (up to 4 elements) print in insertion order.
            shown = ", ".join(map(str, isr)) if len(isr) <= 4 else ", ".join(map(str, sorted(isr)))
            return _refused(state, ErrorCode.NOT_ENOUGH_REPLICAS,
                            f"The size of the current ISR Set({shown}) is insufficient to satisfy the min.isr requirement of "
                            f"{min_isr} for partition {state.topic}-{state.index}")
    if isinstance(checked, Refusal):
        return replace(_refused(state, checked.error, checked.detail, message=checked.message),
                       record_errors=checked.record_errors)
    if checked.empty:  # nothing whole to write: UnifiedLog answers without offsets
        return AppendResult(log_start_offset=partition_log.log_start_offset)
    if len(checked.records) > partition_log.config.segment_bytes:
        return _refused(state, ErrorCode.RECORD_LIST_TOO_LARGE,
                        f"Message batch size is {len(checked.records)} bytes in append to partition {state.topic}-{state.index} which exceeds "
                        f"the maximum configured segment size of {partition_log.config.segment_bytes}.")
    sequences = [BatchSequence(b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence, b.transactional)
                 for b in checked.batches if b.producer_id >= 0]
    if sequences:
        verdict = state.producers.check_appends(sequences, offset=partition_log.log_end_offset)
        if verdict.outcome is Outcome.DUPLICATE:
            duplicate = verdict.duplicate
            assert duplicate is not None
            log.debug("produce_duplicate", partition=f"{state.topic}-{state.index}", base_offset=duplicate.first_offset)
            return AppendResult(ErrorCode.NONE, duplicate.first_offset, duplicate.timestamp, partition_log.log_start_offset)
        if verdict.outcome is Outcome.REJECT:
            return _refused(state, verdict.error, verdict.detail or verdict.error.name)
    leader_epoch = _leader_epoch(partitions, state)
    try:
        # validate() checked every batch's CRC (or computed it, for a rebuilt batch): the log need not again.
        info = partition_log.append(checked.records, leader_epoch=leader_epoch, crc_checked=True)
    except StorageFailure as exc:
        log.error("produce_storage_failure", partition=f"{state.topic}-{state.index}", reason=str(exc),
                  hint="the log directory cannot be written (full disk or I/O error); free space or fix the disk")
        return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR)
    except BatchTooLarge as exc:
        return _refused(state, ErrorCode.RECORD_LIST_TOO_LARGE, str(exc))
    except CorruptBatch as exc:
        return _refused(state, ErrorCode.CORRUPT_MESSAGE, str(exc))
    except LogError as exc:
        return _refused(state, exc.error_code, str(exc))
    for batch in checked.batches:
        if batch.producer_id < 0:
            continue
        base = info.base_offset + batch.first_offset_delta
        timestamp = info.log_append_time if info.log_append_time != -1 else batch.max_timestamp
        # A transactional batch opens the producer's transaction on the partition (ProducerAppendInfo.appendDataBatch):
        # the last stable offset stays at its first offset until a marker ends it.
        state.producers.record_append(batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence,
                                      base, base + batch.record_count - 1, timestamp, transactional=batch.transactional)
    partitions.appended(state.topic, state.index)
    return AppendResult(ErrorCode.NONE, info.base_offset, info.log_append_time, info.log_start_offset)


# producer.id.expiration.check.interval.ms: how often Kafka drops producers idle for producer.id.expiration.ms.
EXPIRATION_CHECK_INTERVAL_MS = 600_000
_last_expiry_check: WeakKeyDictionary[PartitionState, int] = WeakKeyDictionary()


def expire_idle_producers(partitions: Partitions, state: PartitionState, now: int) -> None:
    """ProducerStateManager.removeExpiredProducers, run as Kafka's scheduler runs it every
    ``producer.id.expiration.check.interval.ms`` but lazily: when the partition is appended to or cleaned once the
    check interval has passed (an idle partition keeps its entries until then)."""
    try:
        interval = int(partitions.broker_properties.get("producer.id.expiration.check.interval.ms", EXPIRATION_CHECK_INTERVAL_MS))
    except ValueError:
        interval = EXPIRATION_CHECK_INTERVAL_MS
    last = _last_expiry_check.setdefault(state, now)
    if now - last >= interval:
        _last_expiry_check[state] = now
        expired = state.producers.remove_expired(now)
        if expired:
            log.info("producers_expired", partition=f"{state.topic}-{state.index}", producer_ids=expired)


def _refused(state: PartitionState, error: ErrorCode, detail: str, *, message: str | None = None) -> AppendResult:
    log.info("produce_refused", partition=f"{state.topic}-{state.index}", error=error.name, reason=detail)
    start = -1 if error in _WITHOUT_LOG_START else state.log.log_start_offset
    return AppendResult(error, log_start_offset=start, error_message=message)


def _leader_epoch(partitions: Partitions, state: PartitionState) -> int:
    topic = partitions.cluster.topics.get(state.topic)
    if topic is None or state.index >= len(topic.partitions):
        return 0
    return topic.partitions[state.index].leader_epoch


def append_records(partitions: Partitions, topic: str, partition: int, records: bytes | None, *, acks: int = -1,
                   now_ms: int | None = None) -> AppendResult:
    """Validate and write one partition's records in one call (what a Produce handler does per partition, minus the
    request checks); an unknown partition is UNKNOWN_TOPIC_OR_PARTITION."""
    state = partitions.get(topic, partition)
    if state is None:
        return request_refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    settings = settings_of(partitions, topic)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    return commit(partitions, state, validate(records, settings, now, f"{topic}-{partition}"), acks, settings, now_ms=now)

"""Transaction markers: the coordinator ends a producer's transaction on a partition by appending a control batch.

Kafka's counterparts: ``KafkaApis.handleWriteTxnMarkersRequest`` → ``ReplicaManager.appendRecords(origin =
COORDINATOR)`` → ``Partition.appendRecordsToLeader`` → ``UnifiedLog.append`` with ``ProducerAppendInfo.
appendEndTxnMarker``, ``ProducerStateManager.lastStableOffset(CompletedTxn)`` / ``completeTxn`` and
``LogSegment.updateTxnIndex``; the batch is ``MemoryRecords.withEndTransactionMarker``.

The marker (``EndTransactionMarker`` / ``ControlRecordType``): one batch, magic 2, attributes transactional and
control (CreateTime, no compression), the producer id and epoch, base sequence -1, holding one record at offset
delta 0 whose timestamp is the broker's clock (the batch's base and max timestamp too): key = version int16 0 + type
int16 (0 ABORT, 1 COMMIT), value = version int16 0 + coordinator epoch int32, no headers.

Refusals, in Kafka's order: a partition this node has no log of UNKNOWN_TOPIC_OR_PARTITION (ReplicaManager.getMagic
finds none), one it does not lead NOT_LEADER_OR_FOLLOWER, too few in-sync replicas for ``min.insync.replicas``
NOT_ENOUGH_REPLICAS (the marker is written with acks -1), a marker epoch older than the producer's
INVALID_PRODUCER_EPOCH, a coordinator epoch older than the last marker's TRANSACTION_COORDINATOR_FENCED, a failing
disk KAFKA_STORAGE_ERROR. On success the producer's open transaction on the partition ends (an aborted one goes to
the segment's ``.txnindex`` with the last stable offset it leaves), the last stable offset moves, waiting fetches
wake, and the marker listeners hear of it (the group coordinator, for ``__consumer_offsets``).
"""

from __future__ import annotations

import struct
import time

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.log.errors import LogError, StorageFailure
from kafka_shim.shim.log.txn_index import AbortedTxn
from kafka_shim.shim.partitions.append import effective_min_isr, settings_of
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.producers.state import Outcome

log = get_logger(__name__)

ABORT, COMMIT = 0, 1  # ControlRecordType
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_MARKER_VALUE = struct.Struct(">hi")  # version, coordinator epoch


def marker_records(producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool, timestamp: int) -> bytes:
    """MemoryRecords.withEndTransactionMarker: the control batch of one marker, base offset 0."""
    key = _CONTROL_KEY.pack(0, COMMIT if committed else ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    return encode_batch(build_batch([(key, value, [], timestamp)], transactional=True, control=True,
                                    producer_id=producer_id, producer_epoch=producer_epoch))


def write_marker(partitions: Partitions, topic: str, partition: int, producer_id: int, producer_epoch: int,
                 coordinator_epoch: int, committed: bool, *, node_id: int = -1, now_ms: int | None = None) -> ErrorCode:
    """Append a COMMIT or ABORT marker for ``producer_id`` to the partition's log, as the leader does for the
    transaction coordinator; ``node_id`` is the node the request reached (-1: the cluster's first)."""
    name = f"{topic}-{partition}"
    state = partitions.get(topic, partition)
    known = partitions.cluster.topics.get(topic)
    node = node_id if node_id >= 0 else partitions.cluster.node_id
    if state is None or known is None or node not in known.partitions[partition].replicas:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    replica = known.partitions[partition]
    if replica.leader_id != node:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    settings = settings_of(partitions, topic)
    min_isr = effective_min_isr(partitions, topic, partition, settings.min_insync_replicas)  # as for records
    if len(replica.isr) < min_isr:
        log.info("txn_marker_refused", partition=name, producer_id=producer_id, error="NOT_ENOUGH_REPLICAS",
                 isr=list(replica.isr), min_insync_replicas=settings.min_insync_replicas)
        return ErrorCode.NOT_ENOUGH_REPLICAS
    partition_log = state.log
    verdict = state.producers.check_marker(producer_id, producer_epoch, coordinator_epoch, offset=partition_log.log_end_offset)
    if verdict.outcome is Outcome.REJECT:
        log.info("txn_marker_refused", partition=name, producer_id=producer_id, error=verdict.error.name, reason=verdict.detail)
        return verdict.error
    timestamp = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    records = marker_records(producer_id, producer_epoch, coordinator_epoch, committed, timestamp)
    try:
        info = partition_log.append(records, leader_epoch=replica.leader_epoch)
    except StorageFailure as exc:
        log.error("txn_marker_storage_failure", partition=name, reason=str(exc),
                  hint="the log directory cannot be written (full disk or I/O error); free space or fix the disk")
        return ErrorCode.KAFKA_STORAGE_ERROR
    except LogError as exc:
        return exc.error_code
    # A LogAppendTime topic stamps the marker: its record's timestamp is then the append time.
    record_timestamp = info.log_append_time if info.log_append_time != -1 else timestamp
    error = ErrorCode.NONE
    completed = state.producers.record_marker(producer_id, producer_epoch, coordinator_epoch, info.base_offset,
                                              record_timestamp, committed)
    if completed is not None:
        if completed.is_aborted:
            last_stable = state.producers.last_stable_offset_after(completed)
            try:
                partition_log.add_aborted_txn(AbortedTxn(producer_id, completed.first_offset, completed.last_offset, last_stable))
            except StorageFailure as exc:
                log.error("txn_index_storage_failure", partition=name, reason=str(exc),
                          hint="the marker is in the log but its .txnindex entry is not; free space or fix the disk")
                error = ErrorCode.KAFKA_STORAGE_ERROR
        state.producers.complete_txn(completed)
    log.debug("txn_marker_written", partition=name, producer_id=producer_id, committed=committed, offset=info.base_offset)
    partitions.appended(topic, partition)
    partitions.marker_written(topic, partition, producer_id, committed)
    return error

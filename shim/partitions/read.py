"""Reading the partitions of one fetch: Kafka's ``ReplicaManager.readFromLog`` with ``Partition.fetchRecords``.

- Partitions are read in the fetch's order. The request's ``max_bytes`` is shared: each read takes at most
  ``min(partition_max_bytes, what is left)``; until some partition returned bytes the first batch is returned whole
  even above those limits (v3+; Fetch v0-2 set a hard limit and get the cut bytes instead). A later partition whose
  first batch does not fit gets no records rather than a cut batch (v3+).
- A consumer reads up to the high watermark (READ_UNCOMMITTED) or the last stable offset (READ_COMMITTED: the
  first offset of the earliest open transaction, else the high watermark); a follower up to the log end. Every
  answer carries the last stable offset; READ_COMMITTED ones the aborted transactions overlapping the read
  (``LocalLog.read`` / ``addAbortedTransactions``: :meth:`PartitionLog.aborted_for_read`), READ_UNCOMMITTED ones none
  (null). A v3+ first batch that does not fit is dropped with its aborted transactions (null), as ReplicaManager's
  ``readFromLog`` replaces such a read by an empty one.
- A ``current_leader_epoch`` other than the partition's gives FENCED_LEADER_EPOCH (74) or UNKNOWN_LEADER_EPOCH (75);
  an offset outside [log start, log end] OFFSET_OUT_OF_RANGE (1); with ``last_fetched_epoch`` (v12+) a fetch past
  the end of that epoch gets a diverging epoch instead of records. Such errors carry -1 offsets, as in Kafka.
- Records are the stored bytes (``PartitionLog.read``), never re-encoded.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.log.errors import LogError, OffsetOutOfRange
from kafka_shim.shim.partitions.fetch_sessions import ZERO_UUID, PartitionAnswer, PartitionRequest, TopicPartitionId
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.offsets import UNDEFINED_EPOCH, UNDEFINED_OFFSET, end_offset_for_epoch, leader_epoch_error

_BATCH_LENGTH = struct.Struct(">i")
_LOG_OVERHEAD = 12


@dataclass(frozen=True, slots=True)
class ReadParams:
    max_bytes: int
    hard_max_bytes_limit: bool  # Fetch v0-2: no "first batch whole"
    read_committed: bool
    from_follower: bool
    # Partitions a stalled-fetch fault holds back: read as if nothing were there (shim.faults.partition_faults).
    stalled: Mapping[tuple[str, int], int] | None = None
    node_id: int = -1  # the node the fetch reached (a cluster in one process); -1: the cluster's first
    # before 3.3 (KAFKA-13837): a replica id the partition does not know is read for all the same, and only its
    # records are dropped (ReplicaManager.updateFollowerFetchState's withEmptyFetchInfo), so read errors still show
    unknown_follower_read: bool = False

    @property
    def upper_bound_is_log_end(self) -> bool:
        return self.from_follower


def error_answer(code: int) -> PartitionAnswer:
    """ReplicaManager.createLogReadResult: an error with unknown offsets and no records."""
    return PartitionAnswer(error_code=code, high_watermark=-1, last_stable_offset=-1, log_start_offset=-1, records=b"")


def read_partitions(partitions: Partitions, fetches: list[tuple[TopicPartitionId, PartitionRequest]],
                    params: ReadParams) -> list[tuple[TopicPartitionId, PartitionAnswer]]:
    """Read each (existing, authorized) partition of a fetch, in order, sharing ``params.max_bytes``."""
    limit = params.max_bytes
    min_one_batch = not params.hard_max_bytes_limit
    out: list[tuple[TopicPartitionId, PartitionAnswer]] = []
    for tp, request in fetches:
        answer = read_partition(partitions, tp, request, min(request.max_bytes, limit), min_one_batch, params)
        size = answer.records_size
        if size > 0:
            min_one_batch = False
        limit = max(0, limit - size)
        out.append((tp, answer))
    return out


def read_partition(partitions: Partitions, tp: TopicPartitionId, request: PartitionRequest, max_bytes: int,
                   min_one_batch: bool, params: ReadParams) -> PartitionAnswer:
    assert tp.topic is not None
    topic = partitions.cluster.topics.get(tp.topic)
    state = partitions.get(tp.topic, tp.partition)
    if topic is None or state is None:
        return error_answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if tp.topic_id != ZERO_UUID and tp.topic_id != topic.topic_id:
        return error_answer(ErrorCode.INCONSISTENT_TOPIC_ID)
    leader_epoch = topic.partitions[tp.partition].leader_epoch
    error = leader_epoch_error(request.current_leader_epoch, leader_epoch)
    if error == ErrorCode.NONE and topic.partitions[tp.partition].leader_id != (
            params.node_id if params.node_id >= 0 else partitions.cluster.node_id):
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER  # Partition.localLogWithEpochOrThrow: another node (or none) leads it
    elif error == ErrorCode.NONE and params.from_follower and not params.unknown_follower_read:
        # A single node has no followers: Partition.followerReplicaOrThrow refuses every replica id.
        error = ErrorCode.UNKNOWN_LEADER_EPOCH if request.current_leader_epoch is not None else ErrorCode.NOT_LEADER_OR_FOLLOWER
    if error != ErrorCode.NONE:
        return error_answer(error)
    log = state.log
    high_watermark, log_start, log_end = log.high_watermark, log.log_start_offset, log.log_end_offset
    last_stable = state.last_stable_offset
    aborted: list[tuple[int, int]] | None = [] if params.read_committed else None
    answer = PartitionAnswer(ErrorCode.NONE, high_watermark, last_stable, log_start, b"", aborted)
    offset = request.fetch_offset
    if request.last_fetched_epoch is not None:
        epoch, end = end_offset_for_epoch(log, leader_epoch, request.last_fetched_epoch, state.epoch_cache)
        if epoch == UNDEFINED_EPOCH or end == UNDEFINED_OFFSET or offset < log_start:
            return error_answer(ErrorCode.OFFSET_OUT_OF_RANGE)
        if epoch < request.last_fetched_epoch or end < offset:
            answer.diverging_epoch = (epoch, end)
            answer.aborted_transactions = None
            return answer
    if params.stalled and (tp.topic, tp.partition) in params.stalled:
        return answer
    upper = log_end if params.upper_bound_is_log_end else last_stable if params.read_committed else high_watermark
    if max_bytes < 0:
        # Kafka's LogSegment.read refuses a negative size (IllegalArgumentException: UNKNOWN_SERVER_ERROR), but is
        # only reached when there is something to read.
        if log_start <= offset < upper:
            return error_answer(ErrorCode.UNKNOWN_SERVER_ERROR)
        max_bytes = 0
    try:
        info = log.read(offset, max_bytes, upper_bound=upper, min_one_batch=min_one_batch, view=True)
    except OffsetOutOfRange:
        return error_answer(ErrorCode.OFFSET_OUT_OF_RANGE)
    except LogError as exc:
        return error_answer(exc.error_code)
    records = info.records
    if records and not min_one_batch and not params.hard_max_bytes_limit and _first_batch_size(records) > max_bytes:
        # v3+: a first batch that does not fit is left for the next fetch rather than sent cut.
        answer.records = b""
        answer.aborted_transactions = None
        return answer
    if params.from_follower and params.unknown_follower_read:
        answer.records = b""
        answer.aborted_transactions = None  # an empty FetchDataInfo's: none
        return answer
    answer.records = records
    if aborted is not None and not params.upper_bound_is_log_end:
        answer.aborted_transactions = [(t.producer_id, t.first_offset)
                                       for t in log.aborted_for_read(offset, len(records), last_stable)]
    return answer


def _first_batch_size(records: bytes) -> int:
    if len(records) < _LOG_OVERHEAD:
        return _LOG_OVERHEAD
    return _LOG_OVERHEAD + _BATCH_LENGTH.unpack_from(records, 8)[0]

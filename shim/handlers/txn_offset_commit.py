"""TxnOffsetCommit (key 28), v0-4: a transactional producer commits a consumer group's offsets inside its
transaction, as a Kafka 3.9 broker answers (KafkaApis.handleTxnOffsetCommitRequest, GroupCoordinator.
handleTxnCommitOffsets with the KIP-890 verification of the group's ``__consumer_offsets`` partition).

Behaviour. WRITE on the TRANSACTIONAL_ID, else 53 on every partition; READ on the GROUP, else 30 on every partition;
READ on each topic, else 29 on its partitions; unknown topics and partitions 3 (all three listed first, in request
order; before 3.5 every partition once, in hash maps' orders). The other partitions go to the group coordinator: an empty group id INVALID_GROUP_ID (24), a node that does
not coordinate the group NOT_COORDINATOR (16); then the transaction coordinator verifies that the group's partition
was added to the transaction (AddOffsetsToTxn): another producer id INVALID_PRODUCER_ID_MAPPING (49), another epoch
INVALID_PRODUCER_EPOCH (47), not added INVALID_TXN_STATE (48; TRANSACTION_ABORTABLE (120) from v4 on) -- unless the
producer id already has an open transaction in that ``__consumer_offsets`` partition, whatever the epoch: then the
partition's epoch check answers an older epoch 47 when the offsets are written, and epoch -1 fails in Kafka's record
builder (UNKNOWN_SERVER_ERROR: on the whole request with the old coordinator, on its partitions with the new); then the
member checks of a transactional commit (GroupCoordinator.commit_transactional_offsets: a generation and member id,
v3+, must match when given; a KIP-848 member's epoch on the new coordinator); then the offsets are stored, and become the
group's committed offsets when the transaction commits (its marker reaches the group's partition) or are dropped when
it aborts. Until then an OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for them.

Version notes. v2 committed leader epoch; v3 generation id, member id, group instance id (KIP-447), flexible; v4
(KIP-890): a partition not added to the transaction answers TRANSACTION_ABORTABLE, as the coordinator verifies with
``genericError`` from v4 on.
"""

from __future__ import annotations

import time

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import TxnOffsetCommitResponse
from kafka_shim.protocol.records import NO_SEQUENCE
from kafka_shim.shim.groups.offsets import OffsetAndMetadata, RecordsNotBuilt
from kafka_shim.shim.groups.offsets_log import OFFSETS_TOPIC, partition_for
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import java_hash_map_order, scala_mutable_map_order, topic_partition_hash
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.requests.authz import allowed, allowed_names, check, hidden_topics
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.coordination import coordinates, verification_enabled, verifying_coordinator

_TXN, _GROUP, _TOPICS = (check(ApiKey.TXN_OFFSET_COMMIT, key) for key in ("transactional_id", "group", "topics"))
_Topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
_Partition = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition


def txn_offset_commit_error_response(request: messages.TxnOffsetCommitRequest, code: int,
                                     message: str | None) -> TxnOffsetCommitResponse:
    """TxnOffsetCommitRequest.getErrorResponse: the error on every partition, in request order."""
    return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
        _Topic(name=t.name, partitions=[_Partition(partition_index=p.partition_index, error_code=code) for p in t.partitions])
        for t in request.topics])


@handles(ApiKey.TXN_OFFSET_COMMIT, 0, 4, error_response=txn_offset_commit_error_response)
def txn_offset_commit(ctx: RequestContext, request: messages.TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    if not allowed(ctx, _TXN, request.transactional_id):
        return txn_offset_commit_error_response(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    if not allowed(ctx, _GROUP, request.group_id):
        return txn_offset_commit_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    known = ctx.services.cluster.topics
    hidden = hidden_topics(ctx, [t.name for t in request.topics], known.__contains__)
    readable = allowed_names(ctx, _TOPICS, [t.name for t in request.topics if t.name not in hidden])
    answer: dict[str, list[_Partition]] = {}  # the response Builder: one entry per topic, in first-seen order
    echo_empty = not ctx.services.release_rules.offset_commit_topics_in_hash_order  # the Builder since 3.5

    def add(topic: str, partition: int, code: int) -> None:
        answer.setdefault(topic, []).append(_Partition(partition_index=partition, error_code=code))

    wanted: list[tuple[tuple[str, int], OffsetAndMetadata]] = []
    entries: list[tuple[str, int]] = []  # the topics passed on to the coordinator: (name, partitions), as requested
    now = ctx.services.groups.offsets.now_ms() if ctx.services.groups is not None else 0
    for t in request.topics:
        if t.name in hidden:
            for p in t.partitions:
                add(t.name, p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif t.name not in readable or t.name not in known:
            if echo_empty:  # Builder.addPartitions creates the topic's entry before adding what it lists
                answer.setdefault(t.name, [])
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if t.name in readable else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            for p in t.partitions:
                add(t.name, p.partition_index, code)
        else:
            before = len(wanted)
            for p in t.partitions:
                if 0 <= p.partition_index < len(known[t.name].partitions):
                    epoch = p.committed_leader_epoch if ctx.api_version >= 2 else -1
                    wanted.append(((t.name, p.partition_index),
                                   OffsetAndMetadata(p.committed_offset, epoch, p.committed_metadata or "", now)))
                else:
                    add(t.name, p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if len(wanted) > before:
                entries.append((t.name, len(wanted) - before))
    hash_maps = ctx.services.release_rules.txn_offset_commit_in_hash_order
    if hash_maps:  # before 3.5 the request's offsets() is a HashMap by partition: one entry each, the last one's
        wanted = list(dict(wanted).items())
    if wanted:
        coordinator = ctx.services.groups
        assert coordinator is not None
        version = ctx.api_version
        member_id = request.member_id if version >= 3 else ""
        generation = request.generation_id if version >= 3 else -1
        instance = request.group_instance_id if version >= 3 else None
        try:
            results = coordinator.commit_transactional_offsets(
                request.group_id, member_id, instance, generation, request.producer_id, request.producer_epoch, wanted,
                verified=_verify(ctx, request), local=coordinates(ctx, request.group_id))
        except RecordsNotBuilt:
            # The old coordinator's exception reaches KafkaApis, whose error answer covers the whole request.
            return txn_offset_commit_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None)
        if coordinator.settings.new_coordinator:
            return _merged(answer, entries, results)
        for (topic, partition), code in results:
            add(topic, partition, code)
    if hash_maps:
        return _answer_in_hash_order(answer)
    return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[_Topic(name=name, partitions=parts) for name, parts in answer.items()])


def _answer_in_hash_order(answer: dict[str, list[_Partition]]) -> TxnOffsetCommitResponse:
    """The answer as Kafka built it before 3.5 (api_checks.releases): every partition's code in one Scala
    mutable.HashMap (KafkaApis' combinedCommitStatus), grouped by topic in a java.util.HashMap (TxnOffsetCommitResponse's
    constructor from a map)."""
    codes = {(name, p.partition_index): p.error_code for name, parts in answer.items() for p in parts}
    order = scala_mutable_map_order(codes, topic_partition_hash)
    return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
        _Topic(name=name, partitions=[_Partition(partition_index=p, error_code=codes[(t, p)]) for t, p in order if t == name])
        for name in java_hash_map_order([t for t, _ in order], java_string_hash)])


def _merged(errors: dict[str, list[_Partition]], entries: list[tuple[str, int]],
            results: list[tuple[tuple[str, int], int]]) -> TxnOffsetCommitResponse:
    """TxnOffsetCommitResponse.Builder.merge of the new coordinator's answer, which has the request's shape (a topic
    entry per requested one, partitions in order, repeats kept): taken whole when nothing was refused before it,
    else each of its topics appended to the refused entry of that name or added after them."""
    answered, at = [], 0
    for name, count in entries:
        answered.append(_Topic(name=name, partitions=[_Partition(partition_index=partition, error_code=code)
                                                      for (_, partition), code in results[at : at + count]]))
        at += count
    if not errors:
        return TxnOffsetCommitResponse(throttle_time_ms=0, topics=answered)
    topics = [_Topic(name=name, partitions=parts) for name, parts in errors.items()]
    by_name = {topic.name: topic for topic in topics}
    for topic in answered:
        if topic.name in by_name:
            by_name[topic.name].partitions.extend(topic.partitions)
        else:
            topics.append(topic)
            by_name[topic.name] = topic
    return TxnOffsetCommitResponse(throttle_time_ms=0, topics=topics)


def _verify(ctx: RequestContext, request: messages.TxnOffsetCommitRequest) -> int:
    """ReplicaManager.maybeStartTransactionVerificationForPartition on the group's ``__consumer_offsets`` partition,
    with the errors turned into what an OffsetCommit answers (AddPartitionsToTxnManager: not added is
    INVALID_TXN_STATE below v4, a fenced epoch INVALID_PRODUCER_EPOCH). Nothing is verified when the producer id
    already has an open transaction in that partition, whatever the request's epoch (UnifiedLog.hasOngoingTransaction):
    the partition's epoch check on the append, or Kafka's record builder for epoch -1, answers instead."""
    if not request.group_id:
        return ErrorCode.NONE  # the group coordinator answers INVALID_GROUP_ID first
    if not verification_enabled(ctx, offsets=True):
        return ErrorCode.NONE
    offsets_topic = ctx.services.cluster.topics.get(OFFSETS_TOPIC)
    if offsets_topic is None:
        return ErrorCode.NONE  # the group coordinator answers NOT_COORDINATOR
    partition = (OFFSETS_TOPIC, partition_for(request.group_id, len(offsets_topic.partitions)))
    state = ctx.services.partitions.get(*partition) if ctx.services.partitions is not None else None
    if state is not None:
        if state.producers.has_ongoing_transaction(request.producer_id):
            return ErrorCode.NONE
        # GroupCoordinator starts it with RecordBatch.NO_SEQUENCE: its own appends are never sequence-checked.
        state.producers.verifying.start(request.producer_id, NO_SEQUENCE, request.producer_epoch, time.time_ns() // 1_000_000)
    coordinator = verifying_coordinator(ctx, request.transactional_id)
    if isinstance(coordinator, int):
        return _as_commit_error(coordinator, ctx.api_version)
    errors = coordinator.verify_partitions(request.transactional_id, request.producer_id, request.producer_epoch, [partition])
    return _as_commit_error(errors[partition], ctx.api_version)


def _as_commit_error(code: int, version: int) -> int:
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code == ErrorCode.TRANSACTION_ABORTABLE and version < 4:
        # AddPartitionsToTxnManager keeps TRANSACTION_ABORTABLE only for a v4+ request (genericError).
        return ErrorCode.INVALID_TXN_STATE
    # GroupMetadataManager.maybeConvertOffsetCommitError for the retriable ones.
    if code in (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    return code

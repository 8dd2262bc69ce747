"""AddPartitionsToTxn (key 24, v0-5), AddOffsetsToTxn (25, v0-4) and EndTxn (26, v0-4), as a Kafka 3.9 broker answers
them (KafkaApis.handleAddPartitionsToTxnRequest / handleAddOffsetsToTxnRequest / handleEndTxnRequest; the decisions are
shim.txn.coordinator's).

Behaviour.

- AddPartitionsToTxn v0-3 (from clients): WRITE on the TRANSACTIONAL_ID, else 53 on every partition; WRITE on each
  topic (internal topics are never authorized), else 29; unknown partitions 3; if any partition failed, the others
  answer OPERATION_NOT_ATTEMPTED (55) and nothing is added. Otherwise the coordinator's one error goes to every
  partition. v4+ (broker to broker, KIP-890) batch transactions and need CLUSTER_ACTION on the cluster, else the whole
  answer is 31 with no results; ``verify_only`` asks whether the partitions are in the transaction.
- AddOffsetsToTxn: WRITE on the TRANSACTIONAL_ID (53), READ on the GROUP (30), then the group's
  ``__consumer_offsets`` partition is added to the transaction.
- EndTxn: WRITE on the TRANSACTIONAL_ID (53), then commit or abort.
- A node that does not lead the id's ``__transaction_state`` partition (or before that topic exists) answers
  NOT_COORDINATOR (16), as TransactionStateManager does for a partition it has not loaded.

Version notes. PRODUCER_FENCED (90) is answered as INVALID_PRODUCER_EPOCH (47) to AddPartitionsToTxn and
AddOffsetsToTxn below v2 and EndTxn below v2 (clients before KIP-588 do not know it). v3+ (AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn) are flexible; AddPartitionsToTxn v5 and EndTxn v4 only add TRANSACTION_ABORTABLE for clients.
"""

from __future__ import annotations

from kafka_shim.authorizer import CLUSTER_NAME
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import AddOffsetsToTxnResponse, AddPartitionsToTxnResponse, EndTxnResponse
from kafka_shim.shim.cluster.topics import INTERNAL_TOPICS
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.groups.offsets_log import OFFSETS_TOPIC, partition_for
from kafka_shim.shim.handlers import CloseConnection, handles
from kafka_shim.shim.javacompat.hash_orders import (
    java_hash_map_order,
    scala_immutable_map_order,
    scala_mutable_map_order,
    topic_partition_hash,
)
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.requests.authz import allowed, allowed_names, check, hidden_topics
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.coordination import coordinator_for, fenced_for

log = get_logger(__name__)

_ADD_TXN, _ADD_TOPICS = check(ApiKey.ADD_PARTITIONS_TO_TXN, "transactional_id"), check(ApiKey.ADD_PARTITIONS_TO_TXN, "topics")
_ADD_CLUSTER = check(ApiKey.ADD_PARTITIONS_TO_TXN, "cluster")
_OFFSETS_TXN, _OFFSETS_GROUP = check(ApiKey.ADD_OFFSETS_TO_TXN, "transactional_id"), check(ApiKey.ADD_OFFSETS_TO_TXN, "group")
_END_TXN = check(ApiKey.END_TXN, "transactional_id")

_TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
_PartitionResult = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult
_TxnResult = AddPartitionsToTxnResponse.AddPartitionsToTxnResult


# -- AddPartitionsToTxn ----------------------------------------------------------------------------------------------

def _topic_results(errors: dict[tuple[str, int], int], order: str) -> list[_TopicResult]:
    """Per-partition errors grouped by topic as AddPartitionsToTxnResponse.topicCollectionForErrors does: Kafka built
    a Scala map of the partitions (``scala_mutable`` / ``scala_immutable``) and grouped it into a java.util.HashMap."""
    entries = list(errors)
    if order == "java":
        entries = java_hash_map_order(entries, topic_partition_hash)
    elif order == "scala_mutable":
        entries = scala_mutable_map_order(entries, topic_partition_hash)
    elif order == "scala_immutable":
        entries = scala_immutable_map_order(entries, topic_partition_hash)
    by_topic: dict[str, list[_PartitionResult]] = {}
    for topic, partition in entries:
        by_topic.setdefault(topic, []).append(_PartitionResult(partition_index=partition, partition_error_code=errors[(topic, partition)]))
    return [_TopicResult(name=topic, results_by_partition=by_topic[topic]) for topic in java_hash_map_order(by_topic, java_string_hash)]


def add_partitions_error_response(request: messages.AddPartitionsToTxnRequest, code: int, message: str | None,
                                  version: int | None = None) -> AddPartitionsToTxnResponse:
    """AddPartitionsToTxnRequest.getErrorResponse: v4+ the top-level error, v0-3 the error on every partition. Without
    the version, the form the request's fields say (a decoded request carries only its version's)."""
    if version is None:
        version = 4 if request.transactions else 3
    if version >= 4:
        return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=code, results_by_transaction=[])
    return AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=_as_requested(request.v3_and_below_topics, code))


def _as_requested(topics: list[messages.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic], code: int) -> list[_TopicResult]:
    """errorResponseForTopics: one code on the request's own topics and partitions, repeats and empty lists kept."""
    return [_TopicResult(name=t.name, results_by_partition=[_PartitionResult(partition_index=p, partition_error_code=code)
                                                            for p in t.partitions]) for t in topics]


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, error_response=add_partitions_error_response)
def add_partitions_to_txn(ctx: RequestContext, request: messages.AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    version = ctx.api_version
    if version >= 4:
        if not allowed(ctx, _ADD_CLUSTER, CLUSTER_NAME):
            return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                              results_by_transaction=[])
        if not request.transactions:
            # Kafka sends the answer once every transaction has its result: with none, it never answers.
            raise CloseConnection("AddPartitionsToTxn v4+ naming no transaction: Kafka 3.9 never answers it")
        # partitionsByTransaction is a HashMap by id (a repeated id's last entry wins); errorResponseForTransaction
        # finds the first entry with the id.
        last = {txn.transactional_id: txn for txn in request.transactions}
        first: dict[str, messages.AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction] = {}
        for txn in request.transactions:
            first.setdefault(txn.transactional_id, txn)
        results = []
        for txn in request.transactions:
            wanted = _partitions(last[txn.transactional_id].topics)
            outcome = _add(ctx, version, txn.transactional_id, txn.producer_id, txn.producer_epoch, wanted, txn.verify_only)
            results.append(_TxnResult(transactional_id=txn.transactional_id,
                                      topic_results=_results(outcome, first[txn.transactional_id].topics)))
        return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, results_by_transaction=results)
    transactional_id = request.v3_and_below_transactional_id
    wanted = _partitions(request.v3_and_below_topics)
    if not allowed(ctx, _ADD_TXN, transactional_id):
        outcome: int | tuple[dict[tuple[str, int], int], str] = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        outcome = _add(ctx, version, transactional_id, request.v3_and_below_producer_id,
                       request.v3_and_below_producer_epoch, wanted, False,
                       asked=[(t.name, p) for t in request.v3_and_below_topics for p in t.partitions])
    return AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=_results(
        outcome, request.v3_and_below_topics, by_partition=ctx.services.release_rules.add_partitions_errors_by_partition))


def _results(outcome: int | tuple[dict[tuple[str, int], int], str],
             topics: list[messages.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic], by_partition: bool = False) -> list[_TopicResult]:
    """One code for the whole transaction answers in the request's shape; per-partition errors in Kafka's map order.
    ``by_partition`` (before 3.5): the one code too went through a java.util.HashMap by partition, so a topic named
    twice is answered once, a repeated partition once, and a topic with no partitions not at all."""
    if isinstance(outcome, int):
        if by_partition:
            return _topic_results(dict.fromkeys(_partitions(topics), outcome), "java")
        return _as_requested(topics, outcome)
    errors, order = outcome
    return _topic_results(errors, order)


def _partitions(topics: list[messages.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]) -> list[tuple[str, int]]:
    # AddPartitionsToTxnRequest.partitionsByTransaction: a list in request order (duplicates collapse in the maps).
    return list(dict.fromkeys((t.name, p) for t in topics for p in t.partitions))


def _add(ctx: RequestContext, version: int, transactional_id: str, producer_id: int, producer_epoch: int,
         wanted: list[tuple[str, int]], verify_only: bool,
         asked: list[tuple[str, int]] | None = None) -> int | tuple[dict[tuple[str, int], int], str]:
    """Each partition's error and the order Kafka's answer lists them in, or the one code Kafka's
    errorResponseForTransaction puts on every partition as requested. ``asked``: the partitions as requested,
    repeats kept (Kafka's WRITE check counts each one in its ref count)."""
    topics = ctx.services.cluster.topics

    def missing(tp: tuple[str, int]) -> bool:
        return tp[0] not in topics or not 0 <= tp[1] < len(topics[tp[0]].partitions)

    # KAFKA-5547: an emulated 0.11 answers 3 first for partitions of topics it may not describe, and unknown ones
    before_1_0 = version < 4 and ctx.services.release_rules.topics_hidden_as_unknown
    hidden = hidden_topics(ctx, [t for t, _ in wanted]) if before_1_0 else set()
    hidden_partitions = {tp for tp in wanted if before_1_0 and (tp[0] in hidden or missing(tp))}
    if version < 4:
        writable = allowed_names(ctx, _ADD_TOPICS, [t for t, p in (asked or wanted)
                                                     if t not in INTERNAL_TOPICS and (t, p) not in hidden_partitions])
    else:
        writable = {t for t, _ in wanted}
    unauthorized = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in wanted
                    if tp[0] not in writable and (tp not in hidden_partitions or tp[0] in INTERNAL_TOPICS)}
    unknown = {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in wanted if tp not in unauthorized and (tp in hidden_partitions or missing(tp))}
    if unauthorized or unknown:
        # Kafka builds ``unauthorized ++ nonExisting ++ authorized -> 55`` (Scala maps; the wire groups by topic).
        rest = {tp: ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted if tp not in unauthorized and tp not in unknown}
        return {**unauthorized, **unknown, **rest}, "scala_mutable"
    coordinator = coordinator_for(ctx, transactional_id)
    if isinstance(coordinator, int):
        return coordinator
    if verify_only:
        return coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, wanted), "scala_immutable"
    return fenced_for(coordinator.add_partitions(transactional_id, producer_id, producer_epoch, wanted), version, 2)


# -- AddOffsetsToTxn -------------------------------------------------------------------------------------------------

def add_offsets_error_response(request: messages.AddOffsetsToTxnRequest, code: int, message: str | None) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=code)


def end_txn_error_response(request: messages.EndTxnRequest, code: int, message: str | None) -> EndTxnResponse:
    return EndTxnResponse(throttle_time_ms=0, error_code=code)


@handles(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, error_response=add_offsets_error_response)
def add_offsets_to_txn(ctx: RequestContext, request: messages.AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    def answer(code: int) -> AddOffsetsToTxnResponse:
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=code)

    if not allowed(ctx, _OFFSETS_TXN, request.transactional_id):
        return answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not allowed(ctx, _OFFSETS_GROUP, request.group_id):
        return answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    coordinator = coordinator_for(ctx, request.transactional_id)
    if isinstance(coordinator, int):
        return answer(coordinator)
    offsets_topic = ctx.services.cluster.topics.get(OFFSETS_TOPIC)
    # GroupCoordinator.partitionFor uses offsets.topic.num.partitions (50) whether or not the topic exists yet.
    count = len(offsets_topic.partitions) if offsets_topic is not None else ctx.services.groups.settings.offsets_topic_num_partitions
    partition = (OFFSETS_TOPIC, partition_for(request.group_id, count))
    error = coordinator.add_partitions(request.transactional_id, request.producer_id, request.producer_epoch, [partition])
    return answer(fenced_for(error, ctx.api_version, 2))


# -- EndTxn ----------------------------------------------------------------------------------------------------------

@handles(ApiKey.END_TXN, 0, 4, error_response=end_txn_error_response)
def end_txn(ctx: RequestContext, request: messages.EndTxnRequest) -> EndTxnResponse:
    def answer(code: int) -> EndTxnResponse:
        return EndTxnResponse(throttle_time_ms=0, error_code=code)

    if not allowed(ctx, _END_TXN, request.transactional_id):
        return answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coordinator = coordinator_for(ctx, request.transactional_id)
    if isinstance(coordinator, int):
        return answer(coordinator)
    error = coordinator.end_transaction(request.transactional_id, request.producer_id, request.producer_epoch,
                                        request.committed)
    return answer(fenced_for(error, ctx.api_version, 2))

"""DescribeTransactions (key 65), v0, and ListTransactions (key 66), v0-1, as a Kafka 3.9 broker's transaction
coordinator answers them (KafkaApis, TransactionCoordinator, TransactionStateManager); `kafka-transactions.sh
list / describe` send them.

Behaviour. ListTransactions: the coordinator's transactions (never those in the transient Dead state) filtered
by producer ids, states and (v1) a minimum duration since the transaction started, then, one by one in the order
listed, by DESCRIBE on each TRANSACTIONAL_ID (the ids the principal may not describe are left out, silently, as
KafkaApis removes them from the coordinator's answer); state filters that are not one
of Kafka's transaction states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead,
PrepareEpochFence) are listed back as unknown, and filter nothing. In a cluster in one process each node lists the
transactional ids whose ``__transaction_state`` partition it leads. DescribeTransactions, per id in request order:
DESCRIBE on the TRANSACTIONAL_ID, else 53; an empty id 42; an id whose ``__transaction_state`` partition this node
does not lead (or before that topic exists: FindCoordinator for a transactional id creates it) NOT_COORDINATOR
(16); an unknown id TRANSACTIONAL_ID_NOT_FOUND (105); else its state, producer id and epoch, timeout, start time
and partitions (grouped by topic), without the topics the principal may not DESCRIBE.

Version notes. ListTransactions v1 adds the duration filter (KIP-994); both are flexible.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DescribeTransactionsResponse, ListTransactionsResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import java_hash_map_order, scala_mutable_map_order, topic_partition_hash
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.txn.metadata import TxnState
from kafka_shim.shim.txn.txn_log import partition_for as txn_partition_for

TRANSACTION_STATE_TOPIC = "__transaction_state"
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence")
_DESCRIBE = check(ApiKey.DESCRIBE_TRANSACTIONS, "transactional_ids")
_LIST = check(ApiKey.LIST_TRANSACTIONS, "transactional_ids")
_DESCRIBE_TOPIC = check(ApiKey.DESCRIBE_TRANSACTIONS, "topics")


def list_transactions_error_response(request: messages.ListTransactionsRequest, code: int,
                                     message: str | None) -> ListTransactionsResponse:
    """ListTransactionsRequest.getErrorResponse: the code alone."""
    return ListTransactionsResponse(throttle_time_ms=0, error_code=code)


def describe_transactions_error_response(request: messages.DescribeTransactionsRequest, code: int,
                                         message: str | None) -> DescribeTransactionsResponse:
    """DescribeTransactionsRequest.getErrorResponse: every requested id with the code."""
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=[
        DescribeTransactionsResponse.TransactionState(transactional_id=tid, error_code=code) for tid in request.transactional_ids])


@handles(ApiKey.LIST_TRANSACTIONS, 0, 1, error_response=list_transactions_error_response)
def list_transactions(ctx: RequestContext, request: messages.ListTransactionsRequest) -> ListTransactionsResponse:
    # Scala's Set of the filters (insertion order up to four); the unknown ones come back in that order.
    unknown = [name for name in dict.fromkeys(request.state_filters) if name not in STATES]
    coordinator = ctx.services.transactions
    listed = []
    if coordinator is not None:
        states = {state for name in request.state_filters if (state := TxnState.from_name(name)) is not None}
        duration = request.duration_filter if ctx.api_version >= 1 else -1
        cluster = ctx.services.cluster
        mine = {txn.transactional_id: txn for txn in coordinator.listed(set(request.producer_id_filters), states, duration,
                                                                         bool(request.state_filters))
                if cluster.coordinator(TRANSACTION_STATE_TOPIC, txn.transactional_id) == ctx.node_id}
        listed = [ListTransactionsResponse.TransactionState(transactional_id=tid, producer_id=mine[tid].producer_id,
                                                            transaction_state=mine[tid].state.display_name)
                  for tid in _listing_order(ctx, list(mine)) if allowed(ctx, _LIST, tid)]
    return ListTransactionsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, unknown_state_filters=unknown,
                                    transaction_states=listed)


@handles(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, error_response=describe_transactions_error_response)
def describe_transactions(ctx: RequestContext, request: messages.DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=[
        _described(ctx, tid) for tid in request.transactional_ids])


def _described(ctx: RequestContext, transactional_id: str) -> DescribeTransactionsResponse.TransactionState:
    # On an error only the id and the code are set: the other fields keep the schema's defaults, as Kafka's do.
    def error(code: int) -> DescribeTransactionsResponse.TransactionState:
        return DescribeTransactionsResponse.TransactionState(transactional_id=transactional_id, error_code=code)

    if not allowed(ctx, _DESCRIBE, transactional_id):
        return error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if transactional_id == "":
        return error(ErrorCode.INVALID_REQUEST)
    if ctx.services.cluster.coordinator(TRANSACTION_STATE_TOPIC, transactional_id) != ctx.node_id:
        return error(ErrorCode.NOT_COORDINATOR)  # TransactionStateManager: the id's partition is not loaded here
    coordinator = ctx.services.transactions
    txn = coordinator.get(transactional_id) if coordinator is not None else None
    if txn is None:
        return error(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    topics: dict[str, list[int]] = {}
    for topic, partition in _partition_order(txn.partitions):
        topics.setdefault(topic, []).append(partition)
    # KafkaApis keeps only the topics the principal may DESCRIBE, asked one by one in the answer's order.
    topics = {topic: ids for topic, ids in topics.items() if allowed(ctx, _DESCRIBE_TOPIC, topic)}
    return DescribeTransactionsResponse.TransactionState(
        transactional_id=transactional_id, error_code=ErrorCode.NONE, transaction_state=txn.state.display_name,
        transaction_timeout_ms=txn.timeout_ms, transaction_start_time_ms=txn.start_ms, producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch,
        topics=[DescribeTransactionsResponse.TopicData(topic=topic, partitions=ids) for topic, ids in topics.items()])


def _listing_order(ctx: RequestContext, ids: list[str]) -> list[str]:
    """TransactionStateManager's cache: a Scala mutable.HashMap by ``__transaction_state`` partition, each holding a
    ConcurrentHashMap (Kafka's Pool) of transactional ids. Every partition this node leads has its entry, empty or
    not (the map's size sets its table, so the order of the partitions that hold ids)."""
    topic = ctx.services.cluster.topics.get(TRANSACTION_STATE_TOPIC)
    count = len(topic.partitions) if topic is not None and topic.partitions else 1
    by_partition: dict[int, list[str]] = {}
    if topic is not None:
        by_partition = {p: [] for p, partition in enumerate(topic.partitions) if partition.leader_id == ctx.node_id}
    for tid in ids:
        by_partition.setdefault(txn_partition_for(tid, count), []).append(tid)
    return [tid for p in scala_mutable_map_order(by_partition, lambda n: n)
            for tid in java_hash_map_order(by_partition[p], java_string_hash)]


def _partition_order(partitions: set[tuple[str, int]]) -> list[tuple[str, int]]:
    """TransactionMetadata.topicPartitions is a Scala mutable.HashSet of TopicPartition."""
    return scala_mutable_map_order(partitions, topic_partition_hash)

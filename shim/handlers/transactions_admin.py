"""DescribeTransactions (key 65), v0, and ListTransactions (key 66), v0-1, as a Kafka 3.9 broker's transaction
coordinator answers them (KafkaApis, TransactionCoordinator, TransactionStateManager); `kafka-transactions.sh
list / describe` send them.

Behaviour. kafka-shim has no transaction coordinator yet (issue 17), so it answers as a coordinator that holds no
transaction. ListTransactions: no error, no transactions, and the state filters that are not one of Kafka's
transaction states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead,
PrepareEpochFence) listed back as unknown. DescribeTransactions, per id in request order: DESCRIBE on the
TRANSACTIONAL_ID, else 53; an empty id 42; an id whose ``__transaction_state`` partition this node does not
lead (or before that topic exists: FindCoordinator for a transactional id creates it) NOT_COORDINATOR (16); else
TRANSACTIONAL_ID_NOT_FOUND (105).

Version notes. ListTransactions v1 adds the duration filter (KIP-994); both are flexible.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DescribeTransactionsResponse, ListTransactionsResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext

TRANSACTION_STATE_TOPIC = "__transaction_state"
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence")
_DESCRIBE = check(ApiKey.DESCRIBE_TRANSACTIONS, "transactional_ids")


@handles(ApiKey.LIST_TRANSACTIONS, 0, 1)
def list_transactions(ctx: RequestContext, request: messages.ListTransactionsRequest) -> ListTransactionsResponse:
    # Scala's Set of the filters (insertion order up to four); the unknown ones come back in that order.
    unknown = [name for name in dict.fromkeys(request.state_filters) if name not in STATES]
    return ListTransactionsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, unknown_state_filters=unknown,
                                    transaction_states=[])


@handles(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0)
def describe_transactions(ctx: RequestContext, request: messages.DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=[
        # Only the id and the code are set: the other fields keep the schema's defaults, as Kafka's answer does.
        DescribeTransactionsResponse.TransactionState(transactional_id=tid, error_code=_state_error(ctx, tid))
        for tid in request.transactional_ids])


def _state_error(ctx: RequestContext, transactional_id: str) -> int:
    if not allowed(ctx, _DESCRIBE, transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if transactional_id == "":
        return ErrorCode.INVALID_REQUEST
    if ctx.services.cluster.coordinator(TRANSACTION_STATE_TOPIC, transactional_id) != ctx.node_id:
        return ErrorCode.NOT_COORDINATOR  # TransactionStateManager: the id's partition is not loaded here
    return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

"""UnregisterBroker (key 64), v0: remove a broker's registration, as a Kafka 3.9 KRaft controller answers the
request its broker forwards (ControllerApis.handleUnregisterBroker, ReplicationControlManager.unregisterBroker);
`kafka-cluster.sh unregister --id N` sends it.

Behaviour. ALTER on the CLUSTER, else 31 with no message (Kafka's getErrorResponse sets only the code). An id that
is not one of this process' nodes: BROKER_ID_NOT_REGISTERED (102), also without a message (the controller's text is
dropped on the way). A node of kafka-shim answers 0 and stays registered and serving, on purpose: a live Kafka 3.9
broker whose registration is removed does not register again (its heartbeats fail with StaleBrokerEpochException) and
its clients see no nodes until it restarts, which a fake broker should not inflict on a test. kafka-shim's nodes are
always registered (stopped ones included, as Kafka keeps a fenced broker's registration until it is unregistered).

Version notes. Kafka 3.9 has v0 (flexible).
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import UnregisterBrokerResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext


def unregister_broker_error_response(request: messages.UnregisterBrokerRequest, code: int, message: str | None) -> UnregisterBrokerResponse:
    """UnregisterBrokerRequest.getErrorResponse: the code alone."""
    return UnregisterBrokerResponse(throttle_time_ms=0, error_code=code, error_message="")


@handles(ApiKey.UNREGISTER_BROKER, 0, 0, error_response=unregister_broker_error_response)
def unregister_broker(ctx: RequestContext, request: messages.UnregisterBrokerRequest) -> UnregisterBrokerResponse:
    if refused_whole(ctx, request) is not None:
        return unregister_broker_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    if request.broker_id not in ctx.services.cluster.node_ids:
        return unregister_broker_error_response(request, ErrorCode.BROKER_ID_NOT_REGISTERED, None)
    return UnregisterBrokerResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="")

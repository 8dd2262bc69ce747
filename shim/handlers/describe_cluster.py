"""DescribeCluster (key 60), v0-1: this broker, the cluster id and the controller, as a KRaft broker answers.

Behaviour. A broker makes no ACL check for it (anyone gets the broker list). ClusterAuthorizedOperations, when
asked for, needs DESCRIBE on the cluster (declared in authorizer.api_checks, key 60): 0 without it, else the
bitfield. Kafka's whole-request error form (getErrorResponse; the SASL gate uses it) is registered with the handler.

Version notes. v1 adds endpoint_type: a broker serves BROKER (1); CONTROLLER (2) gets 114 (MISMATCHED_ENDPOINT_TYPE)
and an unknown type 115 (UNSUPPORTED_ENDPOINT_TYPE). v0 has no such field: it always asks for brokers.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DescribeClusterResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.handlers.metadata import AUTHORIZED_OPERATIONS_OMITTED, cluster_authorized_operations
from kafka_shim.shim.requests.context import RequestContext

# Kafka's EndpointType ids; a broker serves BROKER.
ENDPOINT_TYPES = {1: "BROKER", 2: "CONTROLLER"}
BROKER_ENDPOINT = 1

_Broker = DescribeClusterResponse.DescribeClusterBroker


def _brokers(ctx: RequestContext) -> list[_Broker]:
    """Every live node as the listener the request came in on advertises it (one node: this broker)."""
    endpoints, rack, name = ctx.services.endpoints, ctx.services.config.rack, ctx.listener.name
    return [_Broker(broker_id=node, host=host, port=port, rack=rack)
            for node in ctx.services.cluster.live_nodes for host, port in [endpoints.advertised(name, node)]]


def describe_cluster_error_response(request: messages.DescribeClusterRequest, code: int, message: str | None) -> DescribeClusterResponse:
    """Kafka's DescribeClusterRequest.getErrorResponse: the code and message, no brokers."""
    return DescribeClusterResponse(error_code=code, error_message=message, cluster_id="", controller_id=-1, brokers=[])


@handles(ApiKey.DESCRIBE_CLUSTER, 0, 1, error_response=describe_cluster_error_response)
def describe_cluster(ctx: RequestContext, request: messages.DescribeClusterRequest) -> DescribeClusterResponse:
    version = ctx.api_version
    wanted = request.endpoint_type if version >= 1 else BROKER_ENDPOINT
    if wanted not in ENDPOINT_TYPES:
        return DescribeClusterResponse(error_code=ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                                       error_message=f"Unsupported endpoint type {wanted}")
    if wanted != BROKER_ENDPOINT:
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message=f"The request was sent to an endpoint of type {ENDPOINT_TYPES[BROKER_ENDPOINT]}, "
                          f"but we wanted an endpoint of type {ENDPOINT_TYPES[wanted]}")
    operations = AUTHORIZED_OPERATIONS_OMITTED
    if request.include_cluster_authorized_operations:
        operations = cluster_authorized_operations(ctx, ApiKey.DESCRIBE_CLUSTER)
    state = ctx.services.cluster
    return DescribeClusterResponse(
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=state.cluster_id,
        # Kafka names a random live broker; kafka-shim the lowest live one.
        controller_id=state.controller(),
        brokers=_brokers(ctx),
        cluster_authorized_operations=operations,
    )

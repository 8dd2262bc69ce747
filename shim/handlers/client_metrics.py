"""ListClientMetricsResources (key 74), v0: the names of the KIP-714 client metrics subscriptions, as a Kafka 3.9
KRaft broker answers it (KafkaApis.handleListClientMetricsResources); `kafka-client-metrics.sh --list` reads it.

Behaviour. DESCRIBE_CONFIGS on the CLUSTER, else the error form: 31 and no resources. The subscriptions are the
CLIENT_METRICS config resources set through (Incremental)AlterConfigs (shim/cluster/configs); one whose last
config is deleted is gone. Listed in the order of Kafka's ClientMetricsManager subscription map (a ConcurrentHashMap
of names; a deleted one leaves it, a re-created one joins its bucket's end). Not modelled: the table never shrinks, so
after more than eleven subscriptions were deleted Kafka's order may differ.

Version notes. Kafka 3.9 has v0 (flexible).
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ListClientMetricsResourcesResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import java_concurrent_hash_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext

_Resource = ListClientMetricsResourcesResponse.ClientMetricsResource


def list_client_metrics_resources_error_response(request: messages.ListClientMetricsResourcesRequest, code: int,
                                                 message: str | None) -> ListClientMetricsResourcesResponse:
    """ListClientMetricsResourcesRequest.getErrorResponse: the code, no resources."""
    return ListClientMetricsResourcesResponse(throttle_time_ms=0, error_code=code, client_metrics_resources=[])


@handles(ApiKey.LIST_CLIENT_METRICS_RESOURCES, 0, 0, error_response=list_client_metrics_resources_error_response)
def list_client_metrics_resources(ctx: RequestContext, request: messages.ListClientMetricsResourcesRequest
                                  ) -> ListClientMetricsResourcesResponse:
    if refused_whole(ctx, request) is not None:
        return list_client_metrics_resources_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    configs = ctx.services.broker_configs
    # configs.client_metrics holds the names in the order they were (re)created, as the map's puts came.
    names = java_concurrent_hash_map_order(list(configs.client_metrics), java_string_hash) if configs is not None else []
    return ListClientMetricsResourcesResponse(throttle_time_ms=0, error_code=ErrorCode.NONE,
                                              client_metrics_resources=[_Resource(name=n) for n in names])

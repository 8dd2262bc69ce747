"""ListClientMetricsResources (key 74), v0: the names of the KIP-714 client metrics subscriptions, as a Kafka 3.9
KRaft broker answers it (KafkaApis.handleListClientMetricsResources); `kafka-client-metrics.sh --list` reads it.

Behaviour. DESCRIBE_CONFIGS on the CLUSTER, else the error form: 31 and no resources. The subscriptions are the
CLIENT_METRICS config resources set through (Incremental)AlterConfigs (shim/cluster/configs); one whose last
config is deleted is gone. Kafka lists them from a hash map; kafka-shim in the order they were first set.

Version notes. Kafka 3.9 has v0 (flexible).
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ListClientMetricsResourcesResponse
from kafka_shim.shim.handlers import handles
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
    names = list(configs.client_metrics) if configs is not None else []
    return ListClientMetricsResourcesResponse(throttle_time_ms=0, error_code=ErrorCode.NONE,
                                              client_metrics_resources=[_Resource(name=n) for n in names])

"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0-1: client quota configuration, as a Kafka 3.9
KRaft broker describes it (KafkaApis, ClientQuotasImage.describe) and forwards alterations to its controller
(ControllerApis.handleAlterClientQuotas, ClientQuotaControlManager); `kafka-configs.sh --entity-type users /
clients / ips` reads and writes it.

Behaviour. Describe: DESCRIBE_CONFIGS on the CLUSTER, else 31 with no entries (null); a filter Kafka refuses
(empty or repeated entity type, exact without a name, default or specified with one, an unknown match type, ip
with user or client-id) 42, an unknown entity type 35, each with Kafka's message and null entries; else every
entity the filter matches (``strict``: no other entity types), with its quotas. Alter: ALTER_CONFIGS on the
CLUSTER, else every entry 31 with the error's default message; per entity Kafka's INVALID_REQUEST checks and
messages (entity types, empty names, user/client-id keys producer_byte_rate, consumer_byte_rate (whole numbers),
request_percentage, controller_mutation_rate; ip's connection_creation_rate (a whole number); values above 0);
``remove`` deletes a key; ``validate_only`` changes nothing. Results come in Kafka's (HashMap) order. Quotas are
kept in ``log.dirs`` (kafka-shim-client-quotas.json); they are stored and described, not yet enforced.

Version notes. v1 is the flexible form of v0.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import AlterClientQuotasResponse, DescribeClientQuotasResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.handlers.configs import UNKNOWN_SERVER_ERROR_DEFAULT
from kafka_shim.shim.quotas.client_quotas import Alteration, ClientQuotas, QuotaRequestError, entity_of
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext

_CLUSTER_AUTHORIZATION_FAILED_TEXT = "Cluster authorization failed."


def describe_client_quotas_error_response(request: messages.DescribeClientQuotasRequest, code: int,
                                          message: str | None) -> DescribeClientQuotasResponse:
    """DescribeClientQuotasRequest.getErrorResponse: the code and message, entries null."""
    return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=code, error_message=message, entries=None)


def alter_client_quotas_error_response(request: messages.AlterClientQuotasRequest, code: int,
                                       message: str | None) -> AlterClientQuotasResponse:
    """AlterClientQuotasRequest.getErrorResponse: every entry, as sent, with the error and its default message."""
    text = _CLUSTER_AUTHORIZATION_FAILED_TEXT if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else message
    if text is None:  # Errors.message(): the code's own text (an unexpected failure's included)
        text = (UNKNOWN_SERVER_ERROR_DEFAULT if code == ErrorCode.UNKNOWN_SERVER_ERROR else None)
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=[
        AlterClientQuotasResponse.EntryData(error_code=code, error_message=text, entity=[
            AlterClientQuotasResponse.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
        for entry in request.entries])


def _quotas(ctx: RequestContext) -> ClientQuotas:
    services = ctx.services
    if services.client_quotas is None:  # Services built by hand (tests)
        services.client_quotas = ClientQuotas()
    return services.client_quotas


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, error_response=describe_client_quotas_error_response)
def describe_client_quotas(ctx: RequestContext, request: messages.DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if refused_whole(ctx, request) is not None:
        return describe_client_quotas_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    try:
        found = _quotas(ctx).describe([(c.entity_type, c.match_type, c.match) for c in request.components], request.strict)
    except QuotaRequestError as refused:
        return describe_client_quotas_error_response(request, refused.code, refused.message)
    return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", entries=[
        DescribeClientQuotasResponse.EntryData(
            entity=[DescribeClientQuotasResponse.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            values=[DescribeClientQuotasResponse.ValueData(key=k, value=v) for k, v in values])
        for entity, values in found])


@handles(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, error_response=alter_client_quotas_error_response)
def alter_client_quotas(ctx: RequestContext, request: messages.AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    if refused_whole(ctx, request) is not None:
        return alter_client_quotas_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    alterations = [Alteration(entity_of((e.entity_type, e.entity_name) for e in entry.entity),
                              [(op.key, None if op.remove else op.value) for op in entry.ops]) for entry in request.entries]
    results = _quotas(ctx).alter(alterations, request.validate_only) if alterations else []
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=[
        AlterClientQuotasResponse.EntryData(error_code=code, error_message=message, entity=[
            AlterClientQuotasResponse.EntityData(entity_type=t, entity_name=n) for t, n in entity])
        for entity, code, message in results])

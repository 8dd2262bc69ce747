"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), v0-3, as Kafka 3.9's AclApis answers them.

Behaviour, in Kafka's order of work: (1) validation while the request is parsed: a raw code 0 (UNKNOWN) in any
enum field, or a non-LITERAL pattern at v0, closes the connection without a reply; (2) the ACL check declared in
authorizer.api_checks (ALTER on the cluster; DESCRIBE for DescribeAcls), refused with 31 in every error slot;
(3) no authorizer configured: ErrorCode.SECURITY_DISABLED (54); (4) the work, against the authorizer. Each API
registers Kafka's whole-request error form (getErrorResponse), used for (2) and (3) and by the SASL gate.

Version notes. v0 predates pattern types: DescribeAcls/DeleteAcls read ANY as LITERAL and refuse other
patterns, CreateAcls accepts only LITERAL. v1 adds pattern types (KIP-290); v2 is the flexible encoding; v3
adds the USER resource type (the shapes here do not change).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka_shim.authorizer import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AclStoreError,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import CloseConnection, ErrorResponse, handles
from kafka_shim.shim.javacompat.utf16 import utf16_key
from kafka_shim.shim.requests.authz import not_authorized_message, refused_whole
from kafka_shim.shim.requests.context import RequestContext

MIN_VERSION, MAX_VERSION = 0, 3
_UNKNOWN = 0  # the raw wire code Kafka refuses while parsing; other unknown codes decode to UNKNOWN and are judged later
_ANY, _LITERAL = int(PatternType.ANY), int(PatternType.LITERAL)
# Kafka's texts (AclApis, SecurityDisabledException).
NO_AUTHORIZER_DESCRIBE = "No Authorizer is configured on the broker"
NO_AUTHORIZER = "No Authorizer is configured."

log = get_logger("kafka_shim.acls")

_Creation = CreateAclsResponse.AclCreationResult
_Resource = DescribeAclsResponse.DescribeAclsResource
_Description = DescribeAclsResponse.AclDescription
_FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
_Matching = DeleteAclsResponse.DeleteAclsMatchingAcl


def _refuse_unknown(codes: Iterable[tuple[int, int, int, int]], what: str) -> None:
    if any(_UNKNOWN in c for c in codes):
        raise CloseConnection(f"{what} contain UNKNOWN elements (a raw code 0 in a resource type, pattern type, operation or "
                              f"permission type field); send a valid code")


def _v0_pattern(version: int, pattern: int, what: str) -> int:
    """v0 predates pattern types: ANY is read as LITERAL (so v0 clients never see PREFIXED ACLs), others are refused."""
    if version != 0 or pattern == _LITERAL:
        return pattern
    if pattern == _ANY:
        return _LITERAL
    raise CloseConnection(f"{what}: version 0 does not support pattern type {PatternType.from_code(pattern).name} "
                          f"(only LITERAL and ANY are supported)")


def _denied(ctx: RequestContext, request: Any) -> str | None:
    """The ClusterAuthorizationException message if the request fails its declared check, else None."""
    refused = refused_whole(ctx, request)
    if refused is None:
        return None
    log.info("acl_request_denied", api=ctx.api_key, principal=ctx.principal, client_host=ctx.client_host,
             operation=refused.operation.name, resource_type=refused.resource_type.name, error_code=refused.error_code)
    return not_authorized_message(ctx)


def standard_acl_order(bindings: Iterable[AclBinding]) -> list[AclBinding]:
    """The order of Kafka's ACL cache (StandardAcl.compareTo): type, name descending, pattern type, operation,
    principal, host, permission type. Kafka's own answers group resources through a Java HashMap whose order
    changes from one broker process to the next; this order is a stable stand-in."""
    out = sorted(bindings, key=lambda b: (b.pattern.pattern_type, b.entry.operation, utf16_key(b.entry.principal),
                                          utf16_key(b.entry.host), b.entry.permission_type))
    out.sort(key=lambda b: utf16_key(b.pattern.name), reverse=True)  # stable, so the passes compose
    out.sort(key=lambda b: b.pattern.resource_type)
    return out


def describe_resources(bindings: Iterable[AclBinding]) -> list[_Resource]:
    """DescribeAcls' grouping: one resource per (type, name, pattern type), each with its ACLs."""
    grouped: dict[ResourcePattern, list[_Description]] = {}
    for b in standard_acl_order(bindings):
        e = b.entry
        grouped.setdefault(b.pattern, []).append(
            _Description(principal=e.principal, host=e.host, operation=e.operation, permission_type=e.permission_type))
    return [_Resource(resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type, acls=acls)
            for p, acls in grouped.items()]


def describe_acls_error_response(request: messages.DescribeAclsRequest, code: int, message: str | None) -> DescribeAclsResponse:
    """Kafka's DescribeAclsRequest.getErrorResponse: the code and message, no resources."""
    return DescribeAclsResponse(error_code=code, error_message=message, resources=[])


def create_acls_error_response(request: messages.CreateAclsRequest, code: int, message: str | None) -> CreateAclsResponse:
    """Kafka's CreateAclsRequest.getErrorResponse: one failed result per creation."""
    return CreateAclsResponse(results=[_Creation(error_code=code, error_message=message) for _ in request.creations])


def delete_acls_error_response(request: messages.DeleteAclsRequest, code: int, message: str | None) -> DeleteAclsResponse:
    """Kafka's DeleteAclsRequest.getErrorResponse: one failed result per filter, nothing matched."""
    return DeleteAclsResponse(filter_results=[_FilterResult(error_code=code, error_message=message, matching_acls=[])
                                              for _ in request.filters])


def _filter(resource_type: int, name: str | None, pattern: int, principal: str | None, host: str | None,
            operation: int, permission: int) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.from_code(resource_type), name, PatternType.from_code(pattern)),
        AccessControlEntryFilter(principal, host, AclOperation.from_code(operation), AclPermissionType.from_code(permission)))


@handles(ApiKey.DESCRIBE_ACLS, MIN_VERSION, MAX_VERSION, error_response=describe_acls_error_response)
def describe_acls(ctx: RequestContext, request: messages.DescribeAclsRequest) -> DescribeAclsResponse:
    r = request
    pattern = _v0_pattern(ctx.api_version, r.pattern_type_filter, "DescribeAcls")
    _refuse_unknown([(r.resource_type_filter, pattern, r.operation, r.permission_type)], "DescribeAcls filter")
    message = _denied(ctx, request)
    if message is not None:
        return describe_acls_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)
    az = ctx.services.authorizer
    if az is None:
        return describe_acls_error_response(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER_DESCRIBE)
    # A filter with codes Kafka does not know (e.g. 99) matches nothing; the answer is empty, not an error.
    found = az.describe_acls(_filter(r.resource_type_filter, r.resource_name_filter, pattern, r.principal_filter, r.host_filter,
                                     r.operation, r.permission_type))
    return DescribeAclsResponse(resources=describe_resources(found))


def _binding(c: messages.CreateAclsRequest.AclCreation) -> AclBinding:
    """Kafka's CreateAclsRequest.aclBinding: the constructors refuse the filter-only codes with ValueError."""
    return AclBinding(
        ResourcePattern(ResourceType.from_code(c.resource_type), c.resource_name, PatternType.from_code(c.resource_pattern_type)),
        AccessControlEntry(c.principal, c.host, AclOperation.from_code(c.operation), AclPermissionType.from_code(c.permission_type)))


def _refused_wholesale(ctx: RequestContext, request: Any, error_response: ErrorResponse) -> Any | None:
    """CreateAcls/DeleteAcls answered in every slot: 31 without ALTER on the cluster, 54 with no authorizer."""
    message = _denied(ctx, request)
    if message is not None:
        return error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)
    if ctx.services.authorizer is None:
        return error_response(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    return None


@handles(ApiKey.CREATE_ACLS, MIN_VERSION, MAX_VERSION, error_response=create_acls_error_response)
def create_acls(ctx: RequestContext, request: messages.CreateAclsRequest) -> CreateAclsResponse:
    creations = request.creations
    if ctx.api_version == 0 and any(c.resource_pattern_type != _LITERAL for c in creations):
        raise CloseConnection("CreateAcls: version 0 only supports literal resource pattern types")
    _refuse_unknown([(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type) for c in creations], "CreateAcls creations")
    refused = _refused_wholesale(ctx, request, create_acls_error_response)
    if refused is not None:
        return refused
    az = ctx.services.authorizer
    try:
        bindings = [_binding(c) for c in creations]
    except ValueError as exc:
        # Kafka builds every binding before validating any: a filter-only code (ANY, MATCH) in one creation
        # throws out of the handler, and the whole request is answered ErrorCode.UNKNOWN_SERVER_ERROR without a message.
        log.warning("acl_creation_refused", principal=ctx.principal, reason=str(exc), error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                    hint="ANY and MATCH are filter-only codes; an ACL needs a concrete type, pattern, operation and permission")
        return create_acls_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    rules = ctx.services.release_rules
    refused = _zookeeper_refusals(creations, rules.acl_codes_before_kip_373) if rules.zookeeper_acl_creation else {}
    kept = [i for i in range(len(creations)) if i not in refused]
    outcomes = dict(zip(kept, az.create_acls([bindings[i] for i in kept]), strict=True))
    results: list[_Creation] = []
    for index, binding in enumerate(bindings):
        if index in refused:
            results.append(refused[index])
            log.info("acl_creation_invalid", principal=ctx.principal, index=index, acl=str(binding), error_code=refused[index].error_code,
                     reason=refused[index].error_message or "a principal without a type (Type:name) on this resource pattern")
            continue
        result = outcomes[index]
        if result.error is None:
            results.append(_Creation())
        elif isinstance(result.error, AclStoreError):
            log.error("acl_store_failed", principal=ctx.principal, reason=str(result.error))
            results.append(_Creation(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None))
        else:
            log.info("acl_creation_invalid", principal=ctx.principal, index=index, acl=str(binding), reason=str(result.error),
                     error_code=ErrorCode.INVALID_REQUEST)
            results.append(_Creation(error_code=ErrorCode.INVALID_REQUEST, error_message=str(result.error)))
    created = sum(1 for r in results if r.error_code == ErrorCode.NONE)
    log.info("acls_created", principal=ctx.principal, client_host=ctx.client_host, requested=len(creations), succeeded=created)
    return CreateAclsResponse(results=results)


# Codes a release before KIP-373 (3.3) did not know: the USER resource type, the CREATE_TOKENS / DESCRIBE_TOKENS operations.
_USER_TYPE, _TOKEN_OPERATIONS = int(ResourceType.USER), (int(AclOperation.CREATE_TOKENS), int(AclOperation.DESCRIBE_TOKENS))
FAILED_TO_CREATE = "Failed to create ACL"  # AclAuthorizer's text for a creation it could not validate


def _zookeeper_refusals(creations: list, before_kip_373: bool) -> dict[int, _Creation]:
    """What an emulated ZooKeeper-mode release (AclAuthorizer, before 3.3) refuses that KRaft's authorizer accepts, by
    index: a code the release did not know (42 "Failed to create ACL"), and every creation on a resource pattern one of
    whose principals has no type (UNKNOWN_SERVER_ERROR, no message: the authorizer fails that pattern's update as a
    whole). Creations KafkaApis refuses first (an empty name, a cluster not named kafka-cluster) are left to the usual
    path."""
    refused: dict[int, _Creation] = {}
    by_pattern: dict[tuple[int, str, int], list[int]] = {}
    for index, c in enumerate(creations):
        if c.resource_name == "" or (c.resource_type == int(ResourceType.CLUSTER) and c.resource_name != "kafka-cluster"):
            continue
        if before_kip_373 and (c.resource_type == _USER_TYPE or c.operation in _TOKEN_OPERATIONS):
            refused[index] = _Creation(error_code=ErrorCode.INVALID_REQUEST, error_message=FAILED_TO_CREATE)
            continue
        by_pattern.setdefault((c.resource_type, c.resource_name, c.resource_pattern_type), []).append(index)
    for indexes in by_pattern.values():
        if any(":" not in creations[i].principal for i in indexes):
            refused.update((i, _Creation(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None)) for i in indexes)
    return refused


def _matching(b: AclBinding) -> _Matching:
    p, e = b.pattern, b.entry
    return _Matching(error_code=ErrorCode.NONE, error_message=None, resource_type=p.resource_type, resource_name=p.name,
                     pattern_type=p.pattern_type, principal=e.principal, host=e.host, operation=e.operation,
                     permission_type=e.permission_type)


@handles(ApiKey.DELETE_ACLS, MIN_VERSION, MAX_VERSION, error_response=delete_acls_error_response)
def delete_acls(ctx: RequestContext, request: messages.DeleteAclsRequest) -> DeleteAclsResponse:
    filters = request.filters
    patterns = [_v0_pattern(ctx.api_version, f.pattern_type_filter, "DeleteAcls") for f in filters]
    _refuse_unknown([(f.resource_type_filter, p, f.operation, f.permission_type) for f, p in zip(filters, patterns, strict=True)],
                    "DeleteAcls filters")
    refused = _refused_wholesale(ctx, request, delete_acls_error_response)
    if refused is not None:
        return refused
    az = ctx.services.authorizer
    wanted = [_filter(f.resource_type_filter, f.resource_name_filter, p, f.principal_filter, f.host_filter, f.operation, f.permission_type)
              for f, p in zip(filters, patterns, strict=True)]
    results: list[_FilterResult] = []
    for result in az.delete_acls(wanted):
        if result.error is None:
            results.append(_FilterResult(error_code=ErrorCode.NONE, error_message=None, matching_acls=[_matching(b) for b in standard_acl_order(result.deleted)]))
        elif isinstance(result.error, AclStoreError):
            log.error("acl_store_failed", principal=ctx.principal, reason=str(result.error))
            results.append(_FilterResult(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None))
        else:
            results.append(_FilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=str(result.error)))
    deleted = sum(len(r.matching_acls) for r in results)
    log.info("acls_deleted", principal=ctx.principal, client_host=ctx.client_host, filters=len(filters), matched=deleted,
             invalid_filters=sum(1 for r in results if r.error_code == ErrorCode.INVALID_REQUEST))
    return DeleteAclsResponse(filter_results=results)

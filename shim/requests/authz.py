"""The broker's questions to the authorizer, asked with the request's principal, client address and API name.

With no authorizer configured every check passes and bitfields are the full supported set, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shim.authorizer import SUPPORTED_BITS, AclOperation, ResourceType
from kafka_shim.protocol.framing import api_name

if TYPE_CHECKING:
    from kafka_shim.shim.requests.context import RequestContext


def authorize(
    ctx: RequestContext,
    operation: AclOperation | int,
    resource_type: ResourceType | int,
    name: str,
    *,
    ref_count: int = 1,
    log_if_allowed: bool = True,
    log_if_denied: bool = True,
) -> bool:
    """Kafka's allow/deny for one action by the request's principal (audit-logged as Kafka logs it)."""
    az = ctx.services.authorizer
    if az is None:
        return True
    return az.authorize(
        ctx.principal,
        ctx.client_host,
        operation,
        resource_type,
        name,
        request=api_name(ctx.api_key),
        resource_ref_count=ref_count,
        log_if_allowed=log_if_allowed,
        log_if_denied=log_if_denied,
    )


def authorized_operations(ctx: RequestContext, resource_type: ResourceType | int, name: str) -> int:
    """The KIP-430 bitfield for the request's principal; every supported bit when no authorizer is configured."""
    az = ctx.services.authorizer
    if az is None:
        return SUPPORTED_BITS.get(int(resource_type), 0)
    return az.authorized_operations(ctx.principal, ctx.client_host, resource_type, name)


def authorize_by_resource_type(ctx: RequestContext, operation: AclOperation | int, resource_type: ResourceType | int) -> bool:
    """KIP-679: may the principal perform the operation on at least one resource of the type?"""
    az = ctx.services.authorizer
    if az is None:
        return True
    return az.authorize_by_resource_type(ctx.principal, ctx.client_host, operation, resource_type, request=api_name(ctx.api_key))

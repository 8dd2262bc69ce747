"""Helpers for the ACL API tests: broker configurations, wire clients, request builders.

Until SASL listeners land every client here is User:ANONYMOUS on PLAINTEXT; a test gives it rights by
configuring super.users or by putting ACLs straight into the broker's authorizer (``grant``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.client.wire import WireClient
from kafka_shim.shim.config.broker_config import BrokerConfig

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANONYMOUS = "User:ANONYMOUS"
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, USER = 2, 3, 4, 5, 7
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
DENY, ALLOW = 2, 3
READ, WRITE, ALTER, DESCRIBE = 3, 4, 7, 8


def config(authorizer: bool = True, **props: str) -> BrokerConfig:
    base = {"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false"}
    if authorizer:
        base["authorizer.class.name"] = STANDARD_AUTHORIZER
        base["super.users"] = "User:admin"
    base.update({k.replace("_", "."): v for k, v in props.items()})
    return BrokerConfig.from_properties(base)


@asynccontextmanager
async def running(cfg: BrokerConfig) -> AsyncIterator[Broker]:
    async with Broker(cfg) as broker:
        yield broker


async def connect(broker: Broker) -> WireClient:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return await WireClient.connect(host, int(port))


def binding(rtype: int = TOPIC, name: str = "orders", pattern: int = LITERAL, principal: str = ANONYMOUS, host: str = "*",
            operation: int = READ, permission: int = ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType(rtype), name, PatternType(pattern)),
                      AccessControlEntry(principal, host, AclOperation(operation), AclPermissionType(permission)))


def grant(broker: Broker, *bindings: AclBinding) -> None:
    """Store ACLs straight into the broker's authorizer (no request, no rights needed)."""
    results = broker.authorizer.create_acls(list(bindings))
    assert all(r.error is None for r in results), results


def creation(rtype: int = TOPIC, name: str = "orders", pattern: int = LITERAL, principal: str = "User:alice", host: str = "*",
             operation: int = READ, permission: int = ALLOW) -> Any:
    return CreateAclsRequest.AclCreation(resource_type=rtype, resource_name=name, resource_pattern_type=pattern, principal=principal,
                                         host=host, operation=operation, permission_type=permission)


def describe_filter(rtype: int = ANY, name: str | None = None, pattern: int = ANY, principal: str | None = None,
                    host: str | None = None, operation: int = ANY, permission: int = ANY) -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
                               principal_filter=principal, host_filter=host, operation=operation, permission_type=permission)


def delete_filter(rtype: int = ANY, name: str | None = None, pattern: int = ANY, principal: str | None = None,
                  host: str | None = None, operation: int = ANY, permission: int = ANY) -> Any:
    return DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
                                              principal_filter=principal, host_filter=host, operation=operation,
                                              permission_type=permission)


def acl_rows(response: Any) -> list[tuple]:
    """A DescribeAcls answer flattened to (type, name, pattern, principal, host, operation, permission) rows."""
    return [(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
            for r in response.resources for a in r.acls]


def row(b: AclBinding) -> tuple:
    return (int(b.pattern.resource_type), b.pattern.name, int(b.pattern.pattern_type), b.entry.principal, b.entry.host,
            int(b.entry.operation), int(b.entry.permission_type))


def handler_context(broker: Broker, api_key: int, version: int) -> Any:
    """A RequestContext for calling a handler directly (rows unreachable over the wire, e.g. v0 pattern types)."""
    from kafka_shim.protocol.messages import RequestHeader
    from kafka_shim.shim.requests.context import RequestContext

    header = RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=1, client_id="test")
    return RequestContext(broker.services, broker.config.listeners[0], header, version, "127.0.0.1", 1)

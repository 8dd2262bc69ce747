"""CreateAcls, DescribeAcls and DeleteAcls on one client session, at the highest versions both sides support.

Shaped for the command, not a general admin API: any error in an answer fails the whole call with BrokerError
(as kafka-acls.sh stops at the first failed future), and DeleteAcls reports only how many ACLs went. The general
pieces it stands on (connecting, authenticating, negotiating versions) are kafka_shim.shim.client's.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kafka_shim.shim.client.auth import Session, request
from kafka_shim.shim.client.errors import BrokerError, ClientError

OUR_VERSIONS = (0, 3)


@dataclass
class AclClient:
    """CreateAcls / DescribeAcls / DeleteAcls on one session, at the negotiated versions."""

    session: Session
    timeout: float

    async def describe(self, f: AclBindingFilter) -> list[AclBinding]:
        version = self.session.version(ApiKey.DESCRIBE_ACLS, OUR_VERSIONS, "DescribeAcls")
        pf, ef = f.pattern_filter, f.entry_filter
        body = DescribeAclsRequest(
            resource_type_filter=pf.resource_type, resource_name_filter=pf.name,
            pattern_type_filter=_v0_filter_pattern(pf.pattern_type, version), principal_filter=ef.principal,
            host_filter=ef.host, operation=ef.operation, permission_type=ef.permission_type)
        response = await request(self.session, ApiKey.DESCRIBE_ACLS, version, body, self.timeout, "DescribeAcls")
        if response.error_code:
            raise BrokerError(response.error_code, response.error_message)
        return [_binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
                for r in response.resources for a in r.acls]

    async def create(self, bindings: list[AclBinding]) -> None:
        version = self.session.version(ApiKey.CREATE_ACLS, OUR_VERSIONS, "CreateAcls")
        if version == 0 and any(b.pattern.pattern_type != PatternType.LITERAL for b in bindings):
            raise ClientError("Version 0 only supports literal resource pattern types (the broker is older than Kafka 2.0)")
        body = CreateAclsRequest(creations=[
            CreateAclsRequest.AclCreation(
                resource_type=b.pattern.resource_type, resource_name=b.pattern.name, resource_pattern_type=b.pattern.pattern_type,
                principal=b.entry.principal, host=b.entry.host, operation=b.entry.operation,
                permission_type=b.entry.permission_type)
            for b in bindings])
        response = await request(self.session, ApiKey.CREATE_ACLS, version, body, self.timeout, "CreateAcls")
        for result in response.results:
            if result.error_code:
                raise BrokerError(result.error_code, result.error_message)

    async def delete(self, filters: list[AclBindingFilter]) -> int:
        version = self.session.version(ApiKey.DELETE_ACLS, OUR_VERSIONS, "DeleteAcls")
        body = DeleteAclsRequest(filters=[
            DeleteAclsRequest.DeleteAclsFilter(
                resource_type_filter=f.pattern_filter.resource_type, resource_name_filter=f.pattern_filter.name,
                pattern_type_filter=_v0_filter_pattern(f.pattern_filter.pattern_type, version),
                principal_filter=f.entry_filter.principal, host_filter=f.entry_filter.host,
                operation=f.entry_filter.operation, permission_type=f.entry_filter.permission_type)
            for f in filters])
        response = await request(self.session, ApiKey.DELETE_ACLS, version, body, self.timeout, "DeleteAcls")
        deleted = 0
        for result in response.filter_results:
            if result.error_code:
                raise BrokerError(result.error_code, result.error_message)
            for match in result.matching_acls:
                if match.error_code:
                    raise BrokerError(match.error_code, match.error_message)
                deleted += 1
        return deleted


def _v0_filter_pattern(pattern_type: PatternType, version: int) -> PatternType:
    """v0 has no pattern type: ANY is sent as its default LITERAL, as Kafka's client does; others cannot be sent."""
    if version > 0:
        return pattern_type
    if pattern_type in (PatternType.ANY, PatternType.LITERAL):
        return PatternType.LITERAL
    raise ClientError("Version 0 only supports literal resource pattern types (the broker is older than Kafka 2.0)")


def _binding(rtype: int, name: str, ptype: int, principal: str, host: str, op: int, perm: int) -> AclBinding:
    try:
        return AclBinding(ResourcePattern(ResourceType.from_code(rtype), name, PatternType.from_code(ptype)),
                          AccessControlEntry(principal, host, AclOperation.from_code(op), AclPermissionType.from_code(perm)))
    except ValueError as exc:
        raise ClientError(f"the broker described an ACL that cannot exist ({exc})") from None

"""The authorizer log line of an emulated older release (kafka.version): the SimpleAclAuthorizer's of 0.11-2.3 and
the AclAuthorizer's of 2.4-3.2, with their levels (kafka-release-rules.md §1.7)."""

from __future__ import annotations

import logging

import pytest

from kafka_shim.authorizer import AclOperation, Authorizer, ResourceType
from kafka_shim.authorizer.audit import (
    ACL_AUTHORIZER,
    SIMPLE,
    SIMPLE_0_11,
    SIMPLE_UNTYPED,
    STANDARD,
    AuditLog,
    style_for,
)


class _Lines:
    def __init__(self, level: int) -> None:
        self.level, self.lines = level, []

    def is_enabled_for(self, level: int) -> bool:
        return level >= self.level

    def info(self, message: str, **_: object) -> None:
        self.lines.append(("INFO", message))

    def debug(self, message: str, **_: object) -> None:
        self.lines.append(("DEBUG", message))


@pytest.mark.parametrize(("release", "style"), [((0, 11), SIMPLE_0_11), ((1, 1), SIMPLE_UNTYPED), ((2, 0), SIMPLE),
                                                ((2, 3), SIMPLE), ((2, 4), ACL_AUTHORIZER), ((3, 2), ACL_AUTHORIZER),
                                                ((3, 3), STANDARD), ((3, 9), STANDARD)])
def test_each_release_line_writes_its_authorizers_line(release, style) -> None:
    assert style_for(release) == style


@pytest.mark.parametrize(("style", "denied", "allowed"), [
    (ACL_AUTHORIZER, ("INFO", "Principal = User:alice is Denied Operation = IdempotentWrite from host = 10.0.0.1 on resource = "
                              "Cluster:LITERAL:kafka-cluster for request = InitProducerId with resourceRefCount = 1"), None),
    (SIMPLE, ("INFO", "Principal = User:alice is Denied Operation = IdempotentWrite from host = 10.0.0.1 on resource = "
                      "Cluster:LITERAL:kafka-cluster"),
     ("DEBUG", "Principal = User:alice is Allowed Operation = Describe from host = 10.0.0.1 on resource = Topic:LITERAL:t")),
    (SIMPLE_UNTYPED, ("INFO", "Principal = User:alice is Denied Operation = IdempotentWrite from host = 10.0.0.1 on resource = "
                              "Cluster:kafka-cluster"),
     ("DEBUG", "Principal = User:alice is Allowed Operation = Describe from host = 10.0.0.1 on resource = Topic:t")),
    (SIMPLE_0_11, ("DEBUG", "Principal = User:alice is Denied Operation = IdempotentWrite from host = 10.0.0.1 on resource = "
                            "Cluster:kafka-cluster"),
     ("DEBUG", "Principal = User:alice is Allowed Operation = Describe from host = 10.0.0.1 on resource = Topic:t")),
])
def test_older_lines_and_levels(style, denied, allowed) -> None:
    sink = _Lines(logging.DEBUG)
    az = Authorizer(super_users=[], allow_everyone_if_no_acl_found=True, audit=AuditLog(sink, style=style))
    az.authorize("User:alice", "10.0.0.1", AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, "kafka-cluster",
                 request="InitProducerId")  # allowed: no ACL and allow.everyone
    sink.lines.clear()
    from kafka_shim.authorizer import AccessControlEntry, AclBinding, AclPermissionType, PatternType, ResourcePattern

    az.create_acls([AclBinding(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
                               AccessControlEntry("User:bob", "*", AclOperation.ALL, AclPermissionType.ALLOW))])
    assert not az.authorize("User:alice", "10.0.0.1", AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, "kafka-cluster",
                            request="InitProducerId")
    # A grant the request asked not to log (an authorized-operations probe): older releases logged it anyway.
    assert az.authorize("User:alice", "10.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, "t", request="Metadata",
                        log_if_allowed=False)
    assert sink.lines[0] == denied
    assert (sink.lines[1] if len(sink.lines) > 1 else None) == allowed


def test_0_11_denials_need_debug() -> None:
    sink = _Lines(logging.INFO)
    az = Authorizer(super_users=[], allow_everyone_if_no_acl_found=False, audit=AuditLog(sink, style=SIMPLE_0_11))
    assert not az.authorize("User:alice", "h", AclOperation.READ, ResourceType.TOPIC, "t", request="Fetch")
    assert sink.lines == []

"""Real client libraries manage ACLs on kafka-shim: confluent-kafka's AdminClient and kafka-python's KafkaAdminClient.

They connect on PLAINTEXT as User:ANONYMOUS, made a super user here (super.users=User:ANONYMOUS); the SASL-user
variants come with SASL listeners.
"""

from __future__ import annotations

import pytest

from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_helpers import ANONYMOUS, config

pytestmark = pytest.mark.clients
TIMEOUT = 15


@pytest.fixture
def broker():
    with EmbeddedBroker(config(super_users=ANONYMOUS)) as running:
        yield running


@pytest.fixture
def open_broker():
    with EmbeddedBroker(config(authorizer=False)) as running:
        yield running


def _confluent_admin(broker):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.bootstrap_servers, "socket.timeout.ms": 10000})


def test_confluent_acls_with_every_pattern_type(broker) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    admin = _confluent_admin(broker)
    literal = AclBinding(ResourceType.TOPIC, "payments", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                         AclPermissionType.ALLOW)
    prefixed = AclBinding(ResourceType.TOPIC, "pay", ResourcePatternType.PREFIXED, "User:bob", "*", AclOperation.WRITE,
                          AclPermissionType.DENY)
    group = AclBinding(ResourceType.GROUP, "billing", ResourcePatternType.LITERAL, "User:alice", "10.0.0.1", AclOperation.DESCRIBE,
                       AclPermissionType.ALLOW)
    cluster = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:ops", "*", AclOperation.ALTER,
                         AclPermissionType.ALLOW)
    for future in admin.create_acls([literal, prefixed, group, cluster]).values():
        assert future.result(timeout=TIMEOUT) is None

    def describe(rtype, name, pattern):
        flt = AclBindingFilter(rtype, name, pattern, None, None, AclOperation.ANY, AclPermissionType.ANY)
        return set(admin.describe_acls(flt).result(timeout=TIMEOUT))

    assert describe(ResourceType.ANY, None, ResourcePatternType.ANY) == {literal, prefixed, group, cluster}
    assert describe(ResourceType.TOPIC, "payments", ResourcePatternType.LITERAL) == {literal}
    assert describe(ResourceType.TOPIC, "pay", ResourcePatternType.PREFIXED) == {prefixed}
    assert describe(ResourceType.TOPIC, "payments", ResourcePatternType.MATCH) == {literal, prefixed}
    assert describe(ResourceType.TOPIC, "pay", ResourcePatternType.ANY) == {prefixed}

    doomed = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    (deleted,) = admin.delete_acls([doomed]).values()
    assert set(deleted.result(timeout=TIMEOUT)) == {literal, prefixed}
    assert describe(ResourceType.ANY, None, ResourcePatternType.ANY) == {group, cluster}


def test_confluent_invalid_acl_is_reported(broker) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    admin = _confluent_admin(broker)
    bad = AclBinding(ResourceType.BROKER, "not-the-cluster", ResourcePatternType.LITERAL, "User:ops", "*", AclOperation.ALTER,
                     AclPermissionType.ALLOW)
    (future,) = admin.create_acls([bad]).values()
    with pytest.raises(KafkaException, match="kafka-cluster"):
        future.result(timeout=TIMEOUT)


def test_confluent_describe_cluster_with_authorized_operations(broker) -> None:
    from confluent_kafka.admin import AclOperation

    admin = _confluent_admin(broker)
    result = admin.describe_cluster(include_authorized_operations=True).result(timeout=TIMEOUT)
    assert result.cluster_id == broker.broker.state.cluster_id
    assert [n.id for n in result.nodes] == [1] and result.controller.id == 1
    assert set(result.authorized_operations) == {AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION,
                                                 AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE}


def test_kafka_python_without_authorizer_gets_security_disabled(open_broker) -> None:
    # (librdkafka 2.16 drops DescribeAcls' top-level error and reports an empty list, so kafka-python is the witness here.)
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePatternFilter,
        ResourceType,
    )
    from kafka.errors import SecurityDisabledError

    admin = KafkaAdminClient(bootstrap_servers=open_broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                               ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
        with pytest.raises(SecurityDisabledError, match="No Authorizer is configured on the broker"):
            admin.describe_acls(everything)
    finally:
        admin.close()


def test_kafka_python_acls(broker) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        literal = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                      ResourcePattern(ResourceType.TOPIC, "payments", ACLResourcePatternType.LITERAL))
        prefixed = ACL("User:bob", "*", ACLOperation.WRITE, ACLPermissionType.DENY,
                       ResourcePattern(ResourceType.TOPIC, "pay", ACLResourcePatternType.PREFIXED))
        created = admin.create_acls([literal, prefixed])
        assert not created["failed"] and len(created["succeeded"]) == 2

        match = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                          ResourcePatternFilter(ResourceType.TOPIC, "payments", ACLResourcePatternType.MATCH))
        found, error = admin.describe_acls(match)
        assert error.errno == 0
        assert sorted((a.principal, a.resource_pattern.pattern_type) for a in found) == [
            ("User:alice", ACLResourcePatternType.LITERAL), ("User:bob", ACLResourcePatternType.PREFIXED)]

        everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                               ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
        ((_, deleted, error),) = admin.delete_acls([everything])
        assert error.errno == 0 and len(deleted) == 2
        assert admin.describe_acls(everything)[0] == []
    finally:
        admin.close()

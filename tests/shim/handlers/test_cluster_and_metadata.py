"""DescribeCluster (60) and Metadata (3) under the authorizer: bitfields, endpoint types, topic filtering and order."""

from __future__ import annotations

import uuid

import pytest
import structlog

from kafka_shim.protocol.messages import DescribeClusterRequest, MetadataRequest
from tests.support.acl_helpers import (
    ALLOW,
    ALTER,
    ANONYMOUS,
    CLUSTER,
    DENY,
    DESCRIBE,
    PREFIXED,
    READ,
    binding,
    config,
    grant,
    running,
)

DESCRIBE_CLUSTER, METADATA = 60, 3
OMITTED = -(2**31)
FULL_CLUSTER, FULL_TOPIC = 8096, 3576
ALL, CREATE, CLUSTER_ACTION, IDEMPOTENT_WRITE = 2, 5, 9, 12
T = MetadataRequest.MetadataRequestTopic


def cluster_acl(operation: int, permission: int = ALLOW):
    return binding(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=operation, permission=permission)


async def cluster_ops(client, version: int, include: bool = True) -> int:
    answer = await client.request(DESCRIBE_CLUSTER, version, DescribeClusterRequest(include_cluster_authorized_operations=include))
    assert answer.error_code == 0
    return answer.cluster_authorized_operations


async def metadata_cluster_ops(client, version: int, include: bool = True) -> int:
    answer = await client.request(METADATA, version, MetadataRequest(topics=[], include_cluster_authorized_operations=include))
    return answer.cluster_authorized_operations


@pytest.mark.parametrize(("acls", "expected"), [
    ([], 0),  # no DESCRIBE on the cluster: 0, not "omitted"
    ([cluster_acl(DESCRIBE)], 1 << DESCRIBE),
    ([cluster_acl(DESCRIBE), cluster_acl(ALTER)], 384),  # Kafka's AuthorizerIntegrationTest value
    ([cluster_acl(ALTER)], (1 << ALTER) | (1 << DESCRIBE)),  # ALTER implies DESCRIBE
    ([cluster_acl(ALL)], FULL_CLUSTER),
    ([cluster_acl(ALL), cluster_acl(IDEMPOTENT_WRITE, DENY)], FULL_CLUSTER & ~(1 << IDEMPOTENT_WRITE)),
    ([cluster_acl(CREATE), cluster_acl(CLUSTER_ACTION)], 0),  # neither implies DESCRIBE
    ([cluster_acl(ALL), cluster_acl(DESCRIBE, DENY)], 0),
], ids=["none", "describe", "describe+alter", "alter", "all", "all-but-idempotent", "no-describe", "describe-denied"])
async def test_cluster_authorized_operations(secured_broker, client_of, acls, expected) -> None:
    grant(secured_broker, binding(name="unrelated", principal="User:alice"), *acls)
    client = await client_of(secured_broker)
    for version in (0, 1):
        assert await cluster_ops(client, version) == expected
        assert await cluster_ops(client, version, include=False) == OMITTED
    for version in (8, 9, 10):
        assert await metadata_cluster_ops(client, version) == expected
        assert await metadata_cluster_ops(client, version, include=False) == OMITTED
    # The field does not exist from v11 on: decoded as its default.
    assert await metadata_cluster_ops(client, 11, include=False) == OMITTED


async def test_super_user_and_no_authorizer_get_the_full_set(admin_broker, open_broker, client_of) -> None:
    for broker in (admin_broker, open_broker):
        client = await client_of(broker)
        assert await cluster_ops(client, 1) == FULL_CLUSTER
        assert await metadata_cluster_ops(client, 10) == FULL_CLUSTER


async def test_describe_cluster_lists_this_broker_on_the_listener_used(secured_broker, client_of) -> None:
    client = await client_of(secured_broker)
    answer = await client.request(DESCRIBE_CLUSTER, 1, DescribeClusterRequest())
    host, port = secured_broker.bootstrap_servers.rsplit(":", 1)
    assert [(b.broker_id, b.host, b.port, b.rack) for b in answer.brokers] == [(1, host, int(port), None)]
    assert (answer.cluster_id, answer.controller_id, answer.endpoint_type) == (secured_broker.state.cluster_id, 1, 1)


@pytest.mark.parametrize(("endpoint", "code", "message"), [
    (2, 114, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"),
    (0, 115, "Unsupported endpoint type 0"),
    (7, 115, "Unsupported endpoint type 7"),
    (-1, 115, "Unsupported endpoint type -1"),
])
async def test_describe_cluster_endpoint_types(secured_broker, client_of, endpoint, code, message) -> None:
    client = await client_of(secured_broker)
    answer = await client.request(DESCRIBE_CLUSTER, 1, DescribeClusterRequest(endpoint_type=endpoint, include_cluster_authorized_operations=True))
    assert (answer.error_code, answer.error_message) == (code, message)
    assert (answer.brokers, answer.cluster_id, answer.controller_id, answer.cluster_authorized_operations) == ([], "", -1, OMITTED)


async def test_metadata_explicit_topics_denied_come_last_with_29(secured_broker, client_of) -> None:
    secured_broker.state.add_topic("pay-eu", 2)
    secured_broker.state.add_topic("secret", 1)
    grant(secured_broker, binding(name="pay", pattern=PREFIXED, operation=READ))
    client = await client_of(secured_broker)
    answer = await client.request(METADATA, 10, MetadataRequest(
        topics=[T(name="secret"), T(name="pay-eu"), T(name="pay-missing"), T(name="nobody")], allow_auto_topic_creation=False,
        include_topic_authorized_operations=True))
    got = [(t.name, t.error_code, len(t.partitions), t.topic_authorized_operations, t.topic_id == uuid.UUID(int=0)) for t in answer.topics]
    assert got == [
        ("pay-eu", 0, 2, (1 << READ) | (1 << DESCRIBE), False),
        ("pay-missing", 3, 0, (1 << READ) | (1 << DESCRIBE), True),  # describable: existence is revealed
        ("secret", 29, 0, OMITTED, True),  # not describable: existence never revealed
        ("nobody", 29, 0, OMITTED, True),
    ]
    assert answer.brokers  # no cluster check: the broker list is always returned


async def test_metadata_all_topics_silently_omits_undescribable_ones(secured_broker, client_of) -> None:
    for name in ("a", "b", "c"):
        secured_broker.state.add_topic(name)
    grant(secured_broker, binding(name="b", operation=DESCRIBE))
    client = await client_of(secured_broker)
    everything = await client.request(METADATA, 12, MetadataRequest(topics=None))
    assert [(t.name, t.error_code) for t in everything.topics] == [("b", 0)]
    v0_everything = await client.request(METADATA, 0, MetadataRequest(topics=[]))
    assert [t.name for t in v0_everything.topics] == ["b"]


async def test_metadata_by_topic_id(secured_broker, client_of) -> None:
    visible = secured_broker.state.add_topic("visible")
    hidden = secured_broker.state.add_topic("hidden")
    grant(secured_broker, binding(name="visible", operation=DESCRIBE))
    stranger = uuid.uuid4()
    client = await client_of(secured_broker)
    answer = await client.request(METADATA, 12, MetadataRequest(topics=[T(name=None, topic_id=i) for i in (hidden.topic_id, stranger,
                                                                                                          visible.topic_id)]))
    # Unknown ids first, then described topics, then undescribable ones: named null, id echoed (ids are no secret).
    assert [(t.error_code, t.name, t.topic_id) for t in answer.topics] == [
        (100, None, stranger), (0, "visible", visible.topic_id), (29, None, hidden.topic_id)]


async def test_metadata_v12_topic_without_name_or_id_fails_the_request(secured_broker, client_of) -> None:
    client = await client_of(secured_broker)
    answer = await client.request(METADATA, 12, MetadataRequest(topics=[T(name="a"), T(name=None)]))
    assert [(t.error_code, t.name) for t in answer.topics] == [(-1, "a"), (-1, "")]
    assert (answer.brokers, answer.cluster_id, answer.controller_id) == ([], None, -1)


async def test_metadata_auto_creation_needs_create(client_of) -> None:
    async with running(config(auto_create_topics_enable="true")) as broker:
        grant(broker, binding(name="*", operation=DESCRIBE), binding(name="ok", operation=CREATE))
        client = await client_of(broker)
        answer = await client.request(METADATA, 9, MetadataRequest(topics=[T(name="denied"), T(name="ok")], allow_auto_topic_creation=True))
        # Topics it may not create come after the others, with TOPIC_AUTHORIZATION_FAILED.
        assert [(t.name, t.error_code) for t in answer.topics] == [("ok", 3), ("denied", 29)]
        # Without asking for auto-creation there is no CREATE check.
        quiet = await client.request(METADATA, 9, MetadataRequest(topics=[T(name="denied")], allow_auto_topic_creation=False))
        assert [(t.name, t.error_code) for t in quiet.topics] == [("denied", 3)]
        # CREATE on the cluster covers every topic.
        grant(broker, cluster_acl(CREATE))
        answer = await client.request(METADATA, 9, MetadataRequest(topics=[T(name="denied")], allow_auto_topic_creation=True))
        assert [(t.name, t.error_code) for t in answer.topics] == [("denied", 3)]


async def test_metadata_order_follows_kafkas_scala_set(open_broker, client_of) -> None:
    client = await client_of(open_broker)
    names = ["orders", "payments", "audit", "users", "clicks", "events", "logs", "audit"]
    answer = await client.request(METADATA, 9, MetadataRequest(topics=[T(name=n) for n in names], allow_auto_topic_creation=False))
    # Recorded from Apache Kafka 3.9 (five or more names: hash order; duplicates answered once).
    assert [t.name for t in answer.topics] == ["payments", "users", "clicks", "orders", "audit", "logs", "events"]
    few = await client.request(METADATA, 9, MetadataRequest(topics=[T(name=n) for n in ["d", "c", "d", "b"]], allow_auto_topic_creation=False))
    assert [t.name for t in few.topics] == ["d", "c", "b"]  # up to four: request order


async def test_metadata_denials_are_audited_only_for_explicit_topics(secured_broker, client_of) -> None:
    secured_broker.state.add_topic("quiet")
    client = await client_of(secured_broker)
    with structlog.testing.capture_logs() as logs:
        secured_broker.authorizer.audit.refresh()  # as an application does once it has configured its logging
        await client.request(METADATA, 12, MetadataRequest(topics=None))
    assert not [e for e in logs if "is Denied" in e.get("event", "")]
    with structlog.testing.capture_logs() as logs:
        secured_broker.authorizer.audit.refresh()  # as an application does once it has configured its logging
        await client.request(METADATA, 12, MetadataRequest(topics=[T(name="quiet")]))
    denied = [e["event"] for e in logs if "is Denied" in e.get("event", "")]
    assert denied == ["Principal = User:ANONYMOUS is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = Topic:LITERAL:quiet "
                      "for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny"]


async def test_metadata_topic_operations_without_authorizer(open_broker, client_of) -> None:
    client = await client_of(open_broker)
    answer = await client.request(METADATA, 10, MetadataRequest(topics=[T(name="x")], include_topic_authorized_operations=True,
                                                                 allow_auto_topic_creation=False))
    assert [(t.error_code, t.topic_authorized_operations) for t in answer.topics] == [(3, FULL_TOPIC)]

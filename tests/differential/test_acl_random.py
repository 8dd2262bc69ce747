"""Random ACL sets on both brokers, then random questions from random principals: both must agree.

It runs over SASL/PLAIN listeners on both (admin, alice, bob); DescribeAcls answers are compared in a canonical
order because Kafka's own resource order changes from one broker process to the next (acl_order.py).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeClusterRequest,
    MetadataRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_order import canonical
from tests.support.compare import assert_same
from tests.support.wire import Wire

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED = 3, 4
ALLOW, DENY = 3, 2
OPERATIONS = {TOPIC: [2, 3, 4, 5, 6, 7, 8, 10, 11], GROUP: [2, 3, 6, 8], CLUSTER: [2, 5, 7, 8, 9, 10, 11, 12],
              TRANSACTIONAL_ID: [2, 4, 8]}
NAMES = ["a", "ab", "abc", "b", "*"]

acl = st.sampled_from([TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID]).flatmap(lambda rtype: st.builds(
    CreateAclsRequest.AclCreation,
    resource_type=st.just(rtype),
    resource_name=st.just("kafka-cluster") if rtype == CLUSTER else st.sampled_from(NAMES),
    resource_pattern_type=st.just(LITERAL) if rtype == CLUSTER else st.sampled_from([LITERAL, PREFIXED]),
    principal=st.sampled_from(["User:alice", "User:bob", "User:*"]),
    host=st.sampled_from(["*", "127.0.0.1", "10.0.0.1"]),
    operation=st.sampled_from(OPERATIONS[rtype]),
    permission_type=st.sampled_from([ALLOW, DENY]),
))
describe_filter = st.builds(
    DescribeAclsRequest,
    resource_type_filter=st.sampled_from([1, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID]),
    resource_name_filter=st.sampled_from([None, *NAMES, "abcd", "kafka-cluster"]),
    pattern_type_filter=st.sampled_from([1, 2, LITERAL, PREFIXED]),
    principal_filter=st.sampled_from([None, "User:alice", "User:*"]),
    host_filter=st.sampled_from([None, "*", "127.0.0.1"]),
    operation=st.sampled_from([1, 2, 3, 4, 8]),
    permission_type=st.sampled_from([1, ALLOW, DENY]),
)
metadata_topics = st.lists(st.sampled_from(["a", "ab", "abc", "b", "zz"]), max_size=3, unique=True)


def shim_like_the_oracle() -> EmbeddedBroker:
    """kafka-shim configured as scripts/real-kafka configures Kafka: authorizer on, SASL/PLAIN users."""
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "node.id": "1",
        "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";",
    })
    return EmbeddedBroker(config)


def _sasl_address(broker: EmbeddedBroker) -> tuple[str, int]:
    bound = next(b for b in broker.broker.bound if b.listener.name == "SASL_PLAINTEXT")
    return bound.host, bound.port


def _both_as(kafka_address: tuple[str, int], other_address: tuple[str, int], user: str) -> tuple[Wire, Wire]:
    kafka, other = Wire(kafka_address), Wire(other_address)
    kafka.sasl_plain(user, USERS[user])
    other.sasl_plain(user, USERS[user])
    return kafka, other


def _clear_acls(wire: Wire) -> None:
    everything = DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                                    principal_filter=None, host_filter=None, operation=1, permission_type=1)
    answer = wire.request(31, 3, DeleteAclsRequest(filters=[everything]))
    assert not answer.closed and answer.body.filter_results[0].error_code == 0, answer


def check_random_acls(kafka_address: tuple[str, int], other_address: tuple[str, int], max_examples: int = 25) -> None:
    """Random ACL sets created on both brokers, then random questions; every answer must match."""

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(acls=st.lists(acl, min_size=1, max_size=8), user=st.sampled_from(["alice", "bob", "admin"]),
           filters=st.lists(describe_filter, min_size=1, max_size=3), topics=metadata_topics)
    def check(acls, user, filters, topics) -> None:
        admin_kafka, admin_other = _both_as(kafka_address, other_address, "admin")
        try:
            created = [w.request(30, 3, CreateAclsRequest(creations=acls)) for w in (admin_kafka, admin_other)]
            assert_same(*created, what="CreateAcls")
            kafka, other = _both_as(kafka_address, other_address, user)
            with kafka, other:
                for f in filters:
                    # Kafka's resource order depends on its JVM's hash codes (acl_order.py): compare in canonical order.
                    assert_same(canonical(kafka.request(29, 3, f)), canonical(other.request(29, 3, f)), what=f"DescribeAcls as {user}: {f}")
                md = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                                     allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                                     include_topic_authorized_operations=True)
                assert_same(kafka.request(3, 10, md), other.request(3, 10, md),
                            ignore=("brokers.*.host", "brokers.*.port", "cluster_id"), what=f"Metadata v10 as {user}")
                dc = DescribeClusterRequest(include_cluster_authorized_operations=True)
                assert_same(kafka.request(60, 1, dc), other.request(60, 1, dc),
                            ignore=("brokers.*.host", "brokers.*.port", "cluster_id"), what=f"DescribeCluster as {user}")
        finally:
            _clear_acls(admin_kafka)
            _clear_acls(admin_other)
            admin_kafka.close()
            admin_other.close()

    check()


def test_harness_finds_no_difference_between_two_kafkas(oracle, tmp_path_factory) -> None:
    # The harness itself must not invent differences: two real brokers configured alike always agree.
    from tests.support.peers import start_real_kafka, stop_real_kafka

    twin = start_real_kafka(tmp_path_factory.mktemp("kafka-twin"))
    try:
        check_random_acls(oracle.sasl, twin.sasl, max_examples=10)
    finally:
        stop_real_kafka(twin)


def test_random_acls_agree(oracle) -> None:
    with shim_like_the_oracle() as shim_broker:
        check_random_acls(oracle.sasl, _sasl_address(shim_broker))

"""Kafka 3.9's ACL walk, where its answers depend on it: Apache Kafka 3.9 and kafka-shim side by side.

ACLs whose principal has no colon (issue 18):
Kafka 3.9 stores `alice` or `` as a principal (error 0), lists and deletes it, and throws when an authorization
walks over it: the whole request then gets its error answer with UNKNOWN_SERVER_ERROR (a closed connection for a
produce with acks=0, whose error answer is null). A matching DENY visited first ends the walk before it; super users
never walk. And the wildcard: a LITERAL "*" ACL takes no part in decisions on names that start with "*" (the walk
skips it as a literal ACL on a proper prefix of the name). Each scenario puts the same ACLs on both brokers and
compares what User:ANONYMOUS gets.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.messages import (
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest,
    InitProducerIdRequest,
    MetadataRequest,
    ProduceRequest,
)
from kafka_shim.protocol.records import build_batch, encode_batch
from tests.differential.test_acl_apis import (  # the fixtures come from tests/differential/conftest.py
    ALLOW,
    ANONYMOUS,
    ANY,
    CLUSTER,
    CREATE_ACLS,
    DELETE_ACLS,
    DENY,
    DESCRIBE,
    DESCRIBE_ACLS,
    DESCRIBE_CLUSTER,
    GROUP,
    IDENTITY,
    LITERAL,
    MATCH,
    METADATA,
    PREFIXED,
    READ,
    TOPIC,
    WRITE,
    Peers,
    acl,
    delete,
    describe,
)

PRODUCE, CREATE_TOPICS, INIT_PRODUCER_ID, DESCRIBE_CONFIGS = 0, 19, 22, 32
DESCRIBE_SCRAM, ALTER_SCRAM, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS = 50, 51, 61, 65
TRANSACTIONAL_ID = 5
ALL, ALTER, ALTER_CONFIGS, IDEMPOTENT_WRITE = 2, 7, 11, 12
NOW = int(time.time() * 1000)
T = MetadataRequest.MetadataRequestTopic


def metadata(*names: str, version: int = 12) -> tuple[int, int, MetadataRequest]:
    body = MetadataRequest(topics=[T(name=n) for n in names], allow_auto_topic_creation=version < 4)
    if version >= 8:
        body.include_topic_authorized_operations = True
        body.include_cluster_authorized_operations = version <= 10
    return METADATA, version, body


def produce(topic: str, acks: int) -> tuple[int, int, ProduceRequest]:
    batch = encode_batch(build_batch([(b"k", b"v", [], NOW)]))
    return PRODUCE, 9, ProduceRequest(acks=acks, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])


def describe_configs(topic: str) -> tuple[int, int, DescribeConfigsRequest]:
    return DESCRIBE_CONFIGS, 4, DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name=topic, configuration_keys=None)])


def create_topic(topic: str) -> tuple[int, int, CreateTopicsRequest]:
    return CREATE_TOPICS, 7, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])], timeout_ms=30000, validate_only=True)


def init_producer_id() -> tuple[int, int, InitProducerIdRequest]:
    return INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1, producer_id=-1, producer_epoch=-1)


def cluster(operation: int, principal: str = ANONYMOUS, permission: int = ALLOW):
    return acl(rtype=CLUSTER, name="kafka-cluster", principal=principal, operation=operation, permission=permission)


# -- storing, listing, deleting ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("principal", ["alice", ""])
@pytest.mark.parametrize("version", range(4))
def test_created_listed_and_deleted(acl_admin, principal, version) -> None:
    pattern = LITERAL if version == 0 else MATCH
    kafka, _ = acl_admin.same(CREATE_ACLS, version, CreateAclsRequest(creations=[acl(name="nocolon", principal=principal),
                                                                                  acl(name="nocolon", principal="User:bob")]),
                              what=f"CreateAcls v{version} of {principal!r}")
    assert [r.error_code for r in kafka.body.results] == [0, 0]
    acl_admin.settle()
    for f in (describe(TOPIC, "nocolon", pattern), describe(principal=principal, pattern=LITERAL if version == 0 else ANY)):
        kafka, _ = acl_admin.same(DESCRIBE_ACLS, version, f, what=f"DescribeAcls v{version} {f}")
        assert principal in [a.principal for r in kafka.body.resources for a in r.acls]
    kafka, _ = acl_admin.same(DELETE_ACLS, version, DeleteAclsRequest(filters=[delete(TOPIC, "nocolon", pattern, principal=principal)]),
                              what=f"DeleteAcls v{version} of {principal!r}")
    assert [m.principal for r in kafka.body.filter_results for m in r.matching_acls] == [principal]
    acl_admin.settle()


# -- what an authorization does with it ------------------------------------------------------------------------------------
SCENARIOS = {
    # name: (ACLs besides the bad one(s), the requests compared)
    "literal": ([acl(name="foo", principal="bob"), acl(name="bar", principal=ANONYMOUS)],
                [metadata("foo"), metadata("bar"), metadata("foo", "bar", version=1), metadata("bar", version=4), produce("foo", 1),
                 produce("foo", 0), produce("bar", 1), describe_configs("foo"), create_topic("foo")]),
    "deny-first": ([acl(name="foo", principal=ANONYMOUS, operation=DESCRIBE, permission=DENY),
                    acl(name="foo", principal="bob", operation=ALTER_CONFIGS)],
                   [metadata("foo"), metadata("foo", version=1), produce("foo", 1)]),
    "prefixes": ([acl(name="fo", pattern=PREFIXED, principal=ANONYMOUS, operation=ALL, permission=DENY),
                  acl(name="f", pattern=PREFIXED, principal="")],
                 [metadata("foo"), metadata("fa"), metadata("g")]),
    "prefix-longer-bad": ([acl(name="fo", pattern=PREFIXED, principal=""),
                           acl(name="f", pattern=PREFIXED, principal=ANONYMOUS, operation=ALL, permission=DENY)],
                          [metadata("foo"), metadata("fa")]),
    "wildcard": ([acl(name="*", principal="alice", host="10.9.9.9"), acl(name="foo", principal=ANONYMOUS, operation=ALL, permission=DENY)],
                 [metadata("foo"), metadata("other"), metadata("foo", version=1)]),
    "literal-on-a-prefix": ([acl(name="fo", principal="bob"), acl(name="foo", principal=ANONYMOUS)], [metadata("foo"), metadata("fo")]),
    "cluster": ([cluster(ALTER, principal=""), cluster(DESCRIBE)],
                [(DESCRIBE_CLUSTER, 1, DescribeClusterRequest(include_cluster_authorized_operations=True)),
                 (DESCRIBE_CLUSTER, 0, DescribeClusterRequest(include_cluster_authorized_operations=False)),
                 (DESCRIBE_ACLS, 3, describe()), metadata(version=10), create_topic("new")]),
    "idempotent-other-host": ([cluster(DESCRIBE), acl(name="t", principal="bob", host="10.9.9.9", operation=WRITE),
                               acl(name="u", principal=ANONYMOUS, operation=WRITE)], [init_producer_id()]),
    "idempotent-any-host": ([acl(name="t", principal="bob", operation=WRITE), acl(name="u", principal=ANONYMOUS, operation=WRITE)],
                            [init_producer_id()]),
    "idempotent-cluster-grant": ([cluster(IDEMPOTENT_WRITE), acl(name="t", principal="bob", operation=WRITE)], [init_producer_id()]),
    "wildcard-and-star-names": ([acl(name="*", principal=ANONYMOUS, operation=ALL)],
                                [metadata("*x", "x", "*", "**", "x*"), metadata("*x", version=1)]),
    "wildcard-deny-and-star-names": ([acl(name="*", principal=ANONYMOUS, operation=READ, permission=DENY),
                                      acl(name="*", pattern=PREFIXED, principal=ANONYMOUS, operation=ALL)],
                                     [metadata("*x", "x", "*", "**")]),
    "group": ([acl(rtype=GROUP, name="g", principal="bob"), acl(name="foo", principal=ANONYMOUS, operation=READ)],
              [metadata("foo")]),
    # APIs whose error answers carry the code per id, per partition or per user (UNKNOWN_SERVER_ERROR), not a close
    "error-forms": ([acl(rtype=TRANSACTIONAL_ID, name="t", principal="bob"), acl(name="foo", principal="bob"),
                     cluster(ALTER, principal="")],
                    [(DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(transactional_ids=["t", "u"])),
                     (DESCRIBE_PRODUCERS, 0, DescribeProducersRequest(topics=[
                         DescribeProducersRequest.TopicRequest(name="foo", partition_indexes=[0, 1])])),
                     (DESCRIBE_SCRAM, 0, DescribeUserScramCredentialsRequest(users=[
                         DescribeUserScramCredentialsRequest.UserName(name="alice")])),
                     (ALTER_SCRAM, 0, AlterUserScramCredentialsRequest(upsertions=[], deletions=[
                         AlterUserScramCredentialsRequest.ScramCredentialDeletion(name="carol", mechanism=1),
                         AlterUserScramCredentialsRequest.ScramCredentialDeletion(name="alice", mechanism=1)]))]),
}


def _producer_ids_ready(both) -> None:
    """Kafka answers the first InitProducerId after its start with 14 until its broker holds a block of producer ids."""
    deadline = time.monotonic() + 60
    with both._admin() as admin:
        while admin.request(*init_producer_id()).body.error_code == 14:
            assert time.monotonic() < deadline, "Kafka never allocated producer ids"
            time.sleep(0.1)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_authorizations_over_an_unparseable_principal(peers, scenario) -> None:
    grants, requests = SCENARIOS[scenario]
    peers.grant(*grants)
    if any(api_key == INIT_PRODUCER_ID for api_key, _, _ in requests):
        _producer_ids_ready(peers)
    for api_key, version, body in requests:
        # (Producer ids come from each broker's own counter.)
        peers.same(api_key, version, body, ignore=(*IDENTITY, "producer_id"), what=f"{scenario}: api {api_key} v{version} {body}")
    # Super users never walk the ACLs.
    with peers._admin() as admin:
        answer = admin.request(*metadata("foo"))
    assert answer.body.topics[0].error_code in (0, 3), answer


# -- random ACL sets with unparseable principals among them ------------------------------------------------------------------
NAMES = ["a", "ab", "abc", "b", "*"]
random_acl = st.sampled_from([TOPIC, CLUSTER]).flatmap(lambda rtype: st.builds(
    acl, rtype=st.just(rtype),
    name=st.just("kafka-cluster") if rtype == CLUSTER else st.sampled_from(NAMES),
    pattern=st.just(LITERAL) if rtype == CLUSTER else st.sampled_from([LITERAL, PREFIXED]),
    principal=st.sampled_from([ANONYMOUS, "User:*", "User:alice", "bob", ""]),
    host=st.sampled_from(["*", "127.0.0.1", "10.0.0.1"]),
    operation=st.sampled_from([ALL, READ, WRITE, DESCRIBE, ALTER, ALTER_CONFIGS] if rtype == TOPIC else [ALL, DESCRIBE, ALTER, IDEMPOTENT_WRITE]),
    permission=st.sampled_from([ALLOW, DENY]),
))


def test_random_acl_sets_agree(oracle, shim_secured) -> None:
    """Where each walk meets an unparseable principal (or a DENY first) decides every answer: Metadata with topic
    and cluster bitfields, DescribeCluster and the KIP-679 InitProducerId, on random ACL sets."""
    both = Peers(oracle, shim_secured)
    both.reset()
    _producer_ids_ready(both)

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(acls=st.lists(random_acl, min_size=1, max_size=7), topics=st.lists(st.sampled_from(["a", "ab", "abc", "b", "zz"]),
                                                                             min_size=1, max_size=3, unique=True))
    def check(acls, topics) -> None:
        both.reset()
        both.grant(*acls)
        for request in (metadata(*topics, version=10), (DESCRIBE_CLUSTER, 1, DescribeClusterRequest(include_cluster_authorized_operations=True)),
                        init_producer_id()):
            both.same(*request, ignore=(*IDENTITY, "producer_id"), what=f"{request[2]} with {acls}")

    try:
        check()
    finally:
        both.reset()

"""The ACL admin APIs, DescribeCluster and Metadata cluster operations: Apache Kafka 3.9 and kafka-shim side by side.

Both brokers run StandardAuthorizer semantics with super.users=User:admin and hold the same ACLs. The client under
test is User:ANONYMOUS on each broker's PLAINTEXT listener; its rights come from ACLs (created on Kafka by the SASL
admin, put straight into kafka-shim's authorizer). Each scenario sends the same request bytes to both and compares
the answers field by field (resource and match order aside: see acl_order.py), or that both closed the connection.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeClusterRequest,
    MetadataRequest,
)
from tests.support.acl_peers import (
    ALLOW,
    ALTER,
    ANONYMOUS,
    ANONYMOUS_MAY_ALTER,
    ANY,
    CLUSTER,
    CREATE,
    CREATE_ACLS,
    DELETE_ACLS,
    DENY,
    DESCRIBE,
    DESCRIBE_ACLS,
    DESCRIBE_CLUSTER,
    GROUP,
    LITERAL,
    MATCH,
    METADATA,
    PREFIXED,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    USER,
    WRITE,
    Peers,
    acl,
    delete,
    describe,
)
from tests.support.compare import assert_same
from tests.support.wire import Answer, exchange_both

IDENTITY = ("brokers.*.host", "brokers.*.port", "cluster_id", "topics.*.topic_id")
T = MetadataRequest.MetadataRequestTopic


# -- §7.2: CreateAcls -----------------------------------------------------------------------------------------------------
def create_and_compare(peers: Peers, version: int, *creations, what: str) -> tuple[Answer, Answer]:
    answers = peers.same(CREATE_ACLS, version, CreateAclsRequest(creations=list(creations)), what=what)
    peers.settle()  # and both now hold the same ACLs
    return answers


@pytest.mark.parametrize("version", range(4))
def test_create_valid_acls_every_version(acl_admin, version) -> None:
    kafka, _ = create_and_compare(acl_admin, version, acl(), acl(name="other", operation=WRITE, permission=DENY), acl(),
                                  what=f"CreateAcls v{version}")
    assert [r.error_code for r in kafka.body.results] == [0, 0, 0]


def test_create_prefixed_user_and_group_acls(acl_admin) -> None:
    create_and_compare(acl_admin, 3, acl(name="pay", pattern=PREFIXED), acl(rtype=USER, name="User:bob", operation=13),
                       acl(rtype=GROUP, name="billing", host="10.0.0.1", operation=DESCRIBE),
                       acl(rtype=TRANSACTIONAL_ID, name="tx", pattern=PREFIXED, operation=WRITE), acl(name="a/b"),
                       what="CreateAcls of prefixed, USER, GROUP and TRANSACTIONAL_ID ACLs")


@pytest.mark.parametrize("field", ["rtype", "pattern", "operation", "permission"])
def test_create_raw_code_zero_closes(acl_admin, field) -> None:
    kafka, shim = acl_admin.both(CREATE_ACLS, 3, CreateAclsRequest(creations=[acl(), acl(**{field: 0})]))
    assert kafka.closed and shim.closed
    acl_admin.settle()  # nothing created on either


@pytest.mark.parametrize("change", [{"rtype": ANY}, {"pattern": ANY}, {"pattern": MATCH}, {"operation": ANY}, {"permission": ANY}],
                         ids=["resource-type-any", "pattern-any", "pattern-match", "operation-any", "permission-any"])
def test_create_filter_only_codes(acl_admin, change) -> None:
    kafka, _ = create_and_compare(acl_admin, 3, acl(), acl(**change), what=f"CreateAcls with {change}")
    assert [r.error_code for r in kafka.body.results] == [-1, -1]


@pytest.mark.parametrize("change", [{"rtype": 99}, {"pattern": 99}, {"operation": 99}, {"permission": 99},
                                    {"rtype": CLUSTER, "name": "my-cluster"}, {"rtype": CLUSTER, "name": ""}, {"name": ""},
                                    {"name": "", "rtype": 99}],
                         ids=["resource-type-99", "pattern-99", "operation-99", "permission-99", "cluster-name", "cluster-empty",
                              "empty-name", "empty-name-first"])
def test_create_invalid_items(acl_admin, change) -> None:
    kafka, _ = create_and_compare(acl_admin, 3, acl(**change), acl(name="kept"), what=f"CreateAcls with {change}")
    assert [r.error_code for r in kafka.body.results] == [42, 0]


# -- §7.3: DescribeAcls and DeleteAcls --------------------------------------------------------------------------------------
STOCK = [acl(name="foo"), acl(name="*"), acl(name="f", pattern=PREFIXED), acl(name="fo", pattern=PREFIXED, principal="User:bob"),
         acl(name="foo", pattern=PREFIXED, operation=WRITE, permission=DENY), acl(name="bar", host="10.0.0.1"),
         acl(rtype=GROUP, name="foo", principal="User:*"), acl(rtype=USER, name="User:alice", operation=14)]


@pytest.fixture
def stocked(acl_admin) -> Peers:
    acl_admin.grant(*STOCK)
    return acl_admin


FILTERS = [
    describe(), describe(TOPIC, "foo", LITERAL), describe(TOPIC, "Foo", LITERAL), describe(TOPIC, "foo", ANY), describe(TOPIC, "foo", MATCH),
    describe(ANY, "foo", MATCH), describe(TOPIC, "fo", PREFIXED), describe(TOPIC, "*", LITERAL), describe(ANY, None, PREFIXED),
    describe(principal="User:bob"), describe(principal="User:*"), describe(host="10.0.0.1"), describe(operation=WRITE),
    describe(operation=DESCRIBE), describe(permission=DENY), describe(USER), describe(rtype=99), describe(pattern=99),
    describe(operation=99), describe(permission=99), describe(CLUSTER, "kafka-cluster", MATCH),
]


@pytest.mark.parametrize("flt", FILTERS, ids=[f"filter{i}" for i in range(len(FILTERS))])
@pytest.mark.parametrize("version", [1, 3])
def test_describe_filters(stocked, flt, version) -> None:
    stocked.same(DESCRIBE_ACLS, version, flt, what=f"DescribeAcls v{version} {flt}")


def test_describe_v0_sees_literal_acls_only(stocked) -> None:
    kafka, _ = stocked.same(DESCRIBE_ACLS, 0, describe(pattern=LITERAL), what="DescribeAcls v0")
    assert all(r.pattern_type == LITERAL for r in kafka.body.resources)


@pytest.mark.parametrize("field", ["rtype", "pattern", "operation", "permission"])
@pytest.mark.parametrize("api", [DESCRIBE_ACLS, DELETE_ACLS])
def test_describe_and_delete_raw_code_zero_close(stocked, field, api) -> None:
    body = describe(**{field: 0}) if api == DESCRIBE_ACLS else DeleteAclsRequest(filters=[delete(**{field: 0})])
    kafka, shim = stocked.both(api, 3, body)
    assert kafka.closed and shim.closed
    stocked.settle()


@pytest.mark.parametrize("version", range(4))
def test_delete_across_filters(stocked, version) -> None:
    pattern = LITERAL if version == 0 else ANY
    filters = [delete(TOPIC, "foo", MATCH if version else LITERAL), delete(principal="User:bob", pattern=pattern),
               delete(TOPIC, "nothing", pattern), delete(rtype=99, pattern=pattern), delete(operation=99, pattern=pattern),
               delete(GROUP, "foo", pattern)]
    kafka, _ = stocked.same(DELETE_ACLS, version, DeleteAclsRequest(filters=filters), what=f"DeleteAcls v{version}")
    assert [r.error_code for r in kafka.body.filter_results] == [0, 0, 0, 42, 42, 0]
    stocked.settle()  # the same ACLs are left on both


# -- who may use them -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rights", [[], [acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=DESCRIBE)],
                                    [acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=CREATE)],
                                    [ANONYMOUS_MAY_ALTER, acl(rtype=CLUSTER, name="kafka-cluster", principal="User:*", operation=ALTER,
                                                              permission=DENY)]],
                         ids=["none", "describe", "create", "alter-but-denied"])
@pytest.mark.parametrize("version", [0, 3])
def test_acl_apis_as_a_principal_without_alter(peers, rights, version) -> None:
    if rights:
        peers.grant(*rights)
    pattern = LITERAL if version == 0 else ANY
    peers.same(DESCRIBE_ACLS, version, describe(pattern=pattern), what=f"DescribeAcls v{version} with {len(rights)} rights")
    peers.same(CREATE_ACLS, version, CreateAclsRequest(creations=[acl(), acl(operation=ANY)]), what=f"CreateAcls v{version}")
    peers.same(DELETE_ACLS, version, DeleteAclsRequest(filters=[delete(pattern=pattern)] * 2), what=f"DeleteAcls v{version}")
    peers.settle()


@pytest.mark.parametrize("version", range(4))
def test_security_disabled_without_authorizer(oracle_open, shim_address, version) -> None:
    pattern = LITERAL if version == 0 else ANY
    for api_key, body in ((DESCRIBE_ACLS, describe(pattern=pattern)), (CREATE_ACLS, CreateAclsRequest(creations=[acl(), acl(operation=ANY)])),
                          (DELETE_ACLS, DeleteAclsRequest(filters=[delete(pattern=pattern)]))):
        frame = encode_request(api_key, version, 7, body)
        kafka, shim = exchange_both(oracle_open.plaintext, shim_address, frame, api_key, version)
        assert_same(kafka, shim, what=f"{api_key} v{version} without an authorizer")
        assert not kafka.closed


# -- DescribeCluster and Metadata cluster operations ------------------------------------------------------------------------
def cluster(operation: int, permission: int = ALLOW, principal: str = ANONYMOUS, host: str = "*"):
    return acl(rtype=CLUSTER, name="kafka-cluster", principal=principal, host=host, operation=operation, permission=permission)


ACL_SETS = {
    "none": [],
    "someone-else": [cluster(2, principal="User:alice")],
    "describe": [cluster(DESCRIBE)],
    "describe-alter": [cluster(DESCRIBE), cluster(ALTER)],
    "all": [cluster(2)],
    "all-deny-idempotent": [cluster(2), cluster(12, DENY)],
    "wildcard-principal": [cluster(2, principal="User:*"), cluster(9, DENY, principal="User:*")],
    "other-host": [cluster(2, host="10.9.9.9")],
    "create-only": [cluster(CREATE), cluster(9)],
    "describe-denied": [cluster(2), cluster(DESCRIBE, DENY)],
}


@pytest.mark.parametrize("name", list(ACL_SETS))
def test_cluster_authorized_operations(peers, name) -> None:
    if ACL_SETS[name]:
        peers.grant(*ACL_SETS[name])
    for version in (0, 1):
        for include in (True, False):
            peers.same(DESCRIBE_CLUSTER, version, DescribeClusterRequest(include_cluster_authorized_operations=include),
                       ignore=IDENTITY, what=f"DescribeCluster v{version} include={include} with {name}")
    for version in (8, 9, 10):
        for include in (True, False):
            body = MetadataRequest(topics=[], include_cluster_authorized_operations=include, allow_auto_topic_creation=False)
            peers.same(METADATA, version, body, ignore=IDENTITY, what=f"Metadata v{version} include={include} with {name}")


@pytest.mark.parametrize("endpoint", [2, 0, 3, -1])
def test_describe_cluster_endpoint_types(peers, endpoint) -> None:
    peers.same(DESCRIBE_CLUSTER, 1, DescribeClusterRequest(endpoint_type=endpoint, include_cluster_authorized_operations=True),
               ignore=IDENTITY, what=f"DescribeCluster endpoint {endpoint}")


def test_metadata_topics_under_acls(peers) -> None:
    peers.grant(acl(name="pay", pattern=PREFIXED, principal=ANONYMOUS, operation=READ), acl(name="*", principal=ANONYMOUS, operation=WRITE,
                                                                                           permission=DENY),
                acl(name="audit", principal=ANONYMOUS, operation=DESCRIBE))
    names = ["payments", "secret", "audit", "pay", "zz", "payroll", "x", "secret", "a.b", "bad name!"]
    for version in (1, 4, 8, 10, 12):
        for count in (2, 4, len(names)):
            # (Both brokers run with auto.create.topics.enable=false; v1-3 cannot say "do not create".)
            body = MetadataRequest(topics=[T(name=n) for n in names[:count]], allow_auto_topic_creation=version < 4)
            if version >= 8:
                body.include_topic_authorized_operations = True
                body.include_cluster_authorized_operations = version <= 10
            peers.same(METADATA, version, body, ignore=IDENTITY, what=f"Metadata v{version} with {count} topics")
    peers.same(METADATA, 12, MetadataRequest(topics=None), ignore=IDENTITY, what="Metadata v12 all topics")


# -- random ACL sets, random questions --------------------------------------------------------------------------------------
NAMES = ["a", "ab", "abc", "b", "*"]
OPERATIONS = {TOPIC: [2, 3, 4, 5, 6, 7, 8, 10, 11], GROUP: [2, 3, 6, 8], CLUSTER: [2, 5, 7, 8, 9, 10, 11, 12], TRANSACTIONAL_ID: [2, 4, 8]}
random_acl = st.sampled_from([TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID]).flatmap(lambda rtype: st.builds(
    acl, rtype=st.just(rtype),
    name=st.just("kafka-cluster") if rtype == CLUSTER else st.sampled_from(NAMES),
    pattern=st.just(LITERAL) if rtype == CLUSTER else st.sampled_from([LITERAL, PREFIXED]),
    principal=st.sampled_from([ANONYMOUS, "User:alice", "User:*"]),
    host=st.sampled_from(["*", "127.0.0.1", "10.0.0.1"]),
    operation=st.sampled_from(OPERATIONS[rtype]),
    permission=st.sampled_from([ALLOW, DENY]),
))
random_filter = st.builds(
    describe, rtype=st.sampled_from([ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID]),
    name=st.sampled_from([None, *NAMES, "abcd", "kafka-cluster"]), pattern=st.sampled_from([ANY, MATCH, LITERAL, PREFIXED]),
    principal=st.sampled_from([None, ANONYMOUS, "User:*"]), host=st.sampled_from([None, "*", "127.0.0.1"]),
    operation=st.sampled_from([ANY, 2, READ, WRITE, DESCRIBE]), permission=st.sampled_from([ANY, ALLOW, DENY]),
)


def test_random_acls_agree(oracle, shim_secured) -> None:
    """Random ACL sets (the principal under test among them), random DescribeAcls filters, Metadata and DescribeCluster."""
    peers = Peers(oracle, shim_secured)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(acls=st.lists(random_acl, min_size=1, max_size=8), filters=st.lists(random_filter, min_size=1, max_size=3),
           topics=st.lists(st.sampled_from(["a", "ab", "abc", "b", "zz"]), max_size=3, unique=True))
    def check(acls, filters, topics) -> None:
        peers.reset()
        peers.grant(*acls)
        for f in filters:
            peers.same(DESCRIBE_ACLS, 3, f, what=f"DescribeAcls {f}")
        md = MetadataRequest(topics=[T(name=t) for t in topics], allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                             include_topic_authorized_operations=True)
        peers.same(METADATA, 10, md, ignore=IDENTITY, what="Metadata v10")
        peers.same(DESCRIBE_CLUSTER, 1, DescribeClusterRequest(include_cluster_authorized_operations=True), ignore=IDENTITY,
                   what="DescribeCluster v1")

    try:
        check()
    finally:
        peers.reset()

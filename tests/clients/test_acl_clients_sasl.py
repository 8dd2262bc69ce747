"""Python client libraries manage ACLs over SASL_PLAINTEXT as three kinds of user, and get Kafka's answers.

The users: admin (a super user), alice (only ALLOW DESCRIBE on the cluster: she may describe ACLs and the
cluster, but not create or delete ACLs) and bob (nothing: CLUSTER_AUTHORIZATION_FAILED). The clients:

- confluent-kafka 2.16 (librdkafka 2.16.0) AdminClient: create_acls / describe_acls / delete_acls (ACL APIs v2)
  and describe_cluster(include_authorized_operations=True), which librdkafka sends as Metadata v10.
- kafka-python 3.0.12 KafkaAdminClient: create_acls / describe_acls / delete_acls (ACL APIs v3, so it can also
  name USER resources) and describe_cluster (DescribeCluster, whose authorized operations it always asks for).
- aiokafka 0.14 has no ACL admin calls at all (its admin client offers topics, configs, groups and records only),
  so there is nothing of it to test here; its SASL login is covered in test_sasl_clients.py.

Each user logs in with a different mechanism per client, so PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are all used.
Every scenario runs against kafka-shim and, under the `oracle` marker, against a real Apache Kafka 3.9 with the
same users: the expectations below are what Kafka does with these very clients.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.support.acl_targets import Binding, Target, both_targets
from tests.support.sasl_setup import USERS

pytestmark = pytest.mark.clients

ACTORS = ["admin", "alice", "bob"]
CONFLUENT_MECHANISM = {"admin": "SCRAM-SHA-512", "alice": "SCRAM-SHA-256", "bob": "PLAIN"}
KAFKA_PYTHON_MECHANISM = {"admin": "PLAIN", "alice": "SCRAM-SHA-512", "bob": "SCRAM-SHA-256"}
TIMEOUT = 15
EVERY_CLUSTER_OPERATION = ["CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"]



@dataclass(frozen=True)
class Filter:
    """An ACL binding filter in Kafka's names; None is a wildcard for the string fields."""

    rtype: str = "ANY"
    name: str | None = None
    pattern: str = "ANY"
    principal: str | None = None
    host: str | None = None
    operation: str = "ANY"
    permission: str = "ANY"


# -- confluent-kafka ---------------------------------------------------------------------------
def confluent_admin(bootstrap: str, user: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": CONFLUENT_MECHANISM[user], "sasl.username": user, "sasl.password": USERS[user]})


def _confluent_rtype(name: str):
    from confluent_kafka.admin import ResourceType as ConfluentResourceType

    return ConfluentResourceType["BROKER" if name == "CLUSTER" else name]  # librdkafka calls the cluster BROKER


def to_confluent(b: Binding):
    from confluent_kafka.admin import AclBinding as ConfluentBinding
    from confluent_kafka.admin import AclOperation as Op
    from confluent_kafka.admin import AclPermissionType as Perm
    from confluent_kafka.admin import ResourcePatternType as Pattern

    rtype, name, pattern, principal, host, operation, permission = b
    return ConfluentBinding(_confluent_rtype(rtype), name, Pattern[pattern], principal, host, Op[operation], Perm[permission])


def to_confluent_filter(f: Filter):
    from confluent_kafka.admin import AclBindingFilter
    from confluent_kafka.admin import AclOperation as Op
    from confluent_kafka.admin import AclPermissionType as Perm
    from confluent_kafka.admin import ResourcePatternType as Pattern

    return AclBindingFilter(_confluent_rtype(f.rtype), f.name, Pattern[f.pattern], f.principal, f.host, Op[f.operation],
                            Perm[f.permission])


def from_confluent(b) -> Binding:
    rtype = "CLUSTER" if b.restype.name == "BROKER" else b.restype.name
    return (rtype, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name, b.permission_type.name)


def confluent_error(future) -> tuple[int, str]:
    """The Kafka error a failed confluent-kafka future carries, as (code, name)."""
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException) as raised:
        future.result(timeout=TIMEOUT)
    error = raised.value.args[0]
    return error.code(), error.name()


# -- kafka-python ------------------------------------------------------------------------------
def kafka_python_admin(bootstrap: str, user: str):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                            sasl_mechanism=KAFKA_PYTHON_MECHANISM[user], sasl_plain_username=user,
                            sasl_plain_password=USERS[user], request_timeout_ms=TIMEOUT * 1000)


def to_kafka_python(b: Binding):
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern
    from kafka.admin import ResourceType as KpResourceType

    rtype, name, pattern, principal, host, operation, permission = b
    return ACL(principal, host, ACLOperation[operation], ACLPermissionType[permission],
               ResourcePattern(KpResourceType[rtype], name, ACLResourcePatternType[pattern]))


def to_kafka_python_filter(f: Filter):
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePatternFilter
    from kafka.admin import ResourceType as KpResourceType

    return ACLFilter(f.principal, f.host, ACLOperation[f.operation], ACLPermissionType[f.permission],
                     ResourcePatternFilter(KpResourceType[f.rtype], f.name, ACLResourcePatternType[f.pattern]))


def from_kafka_python(acl) -> Binding:
    pattern = acl.resource_pattern
    return (pattern.resource_type.name, pattern.resource_name, pattern.pattern_type.name, acl.principal, acl.host,
            acl.operation.name, acl.permission_type.name)


# -- the two brokers ---------------------------------------------------------------------------
def _list_as_admin(bootstrap: str, principal: str) -> list[Binding]:
    """Through kafka-python, which knows every resource type."""
    admin = kafka_python_admin(bootstrap, "admin")
    try:
        found, _ = admin.describe_acls(to_kafka_python_filter(Filter(principal=principal)))
    finally:
        admin.close()
    return [from_kafka_python(a) for a in found]


def _create_as_admin(bootstrap: str, bindings: list[Binding]) -> None:
    admin = kafka_python_admin(bootstrap, "admin")
    try:
        created = admin.create_acls([to_kafka_python(b) for b in bindings])
    finally:
        admin.close()
    assert not created["failed"], created


@pytest.fixture(scope="module", params=["kafka-shim", pytest.param("apache-kafka", marks=pytest.mark.oracle)])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from both_targets(request, _create_as_admin, _list_as_admin, "acl-clients-sasl-")


@pytest.fixture
def principal() -> str:
    """A principal no other test uses; every filter below names it, so each scenario sees only its own ACLs."""
    return f"User:sasl-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def name() -> str:
    """A resource name no other test uses."""
    return f"sasl-{uuid.uuid4().hex[:10]}"


# -- what the scenarios create, describe and delete --------------------------------------------
def creations(principal: str, name: str) -> list[Binding]:
    """LITERAL and PREFIXED bindings of every resource type both clients can name, ALLOW and DENY, any and one host."""
    return [
        ("TOPIC", name, "LITERAL", principal, "*", "READ", "ALLOW"),
        ("TOPIC", name, "LITERAL", principal, "10.0.0.1", "WRITE", "DENY"),
        ("TOPIC", name, "PREFIXED", principal, "*", "ALL", "ALLOW"),
        ("TOPIC", "*", "LITERAL", principal, "*", "DESCRIBE", "ALLOW"),
        ("GROUP", name, "PREFIXED", principal, "*", "READ", "ALLOW"),
        ("CLUSTER", "kafka-cluster", "LITERAL", principal, "*", "IDEMPOTENT_WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", name, "LITERAL", principal, "*", "WRITE", "DENY"),
    ]


def catalogue(principal: str, name: str) -> dict[str, Binding]:
    """ACLs around one topic name, to tell the pattern types apart."""
    return {
        "literal": ("TOPIC", name, "LITERAL", principal, "*", "READ", "ALLOW"),
        "literal-deny-host": ("TOPIC", name, "LITERAL", principal, "10.0.0.1", "WRITE", "DENY"),
        "shorter-prefix": ("TOPIC", name[:-2], "PREFIXED", principal, "*", "DESCRIBE", "ALLOW"),
        "prefixed": ("TOPIC", name, "PREFIXED", principal, "*", "ALL", "ALLOW"),
        "wildcard": ("TOPIC", "*", "LITERAL", principal, "*", "DESCRIBE", "ALLOW"),
        "group": ("GROUP", name, "LITERAL", principal, "*", "READ", "ALLOW"),
        "transactional-id": ("TRANSACTIONAL_ID", name, "PREFIXED", principal, "*", "WRITE", "ALLOW"),
        "cluster": ("CLUSTER", "kafka-cluster", "LITERAL", principal, "*", "IDEMPOTENT_WRITE", "ALLOW"),
    }


def describe_cases(principal: str, name: str) -> dict[str, tuple[Filter, set[str]]]:
    """Filter -> the catalogue entries Kafka returns for it."""
    return {
        "LITERAL": (Filter("TOPIC", name, "LITERAL", principal), {"literal", "literal-deny-host"}),
        "PREFIXED": (Filter("TOPIC", name, "PREFIXED", principal), {"prefixed"}),
        "ANY": (Filter("TOPIC", name, "ANY", principal), {"literal", "literal-deny-host", "prefixed"}),
        # MATCH: what applies to the name: itself, the literal '*', and every prefix of it.
        "MATCH": (Filter("TOPIC", name, "MATCH", principal), {"literal", "literal-deny-host", "shorter-prefix", "prefixed", "wildcard"}),
        "ANY type, MATCH": (Filter("ANY", name, "MATCH", principal),
                            {"literal", "literal-deny-host", "shorter-prefix", "prefixed", "wildcard", "group", "transactional-id"}),
        "LITERAL '*' is not a wildcard in a filter": (Filter("TOPIC", "*", "LITERAL", principal), {"wildcard"}),
        "everything": (Filter(principal=principal), set(catalogue(principal, name))),
        "operation": (Filter(principal=principal, operation="READ"), {"literal", "group"}),
        "permission": (Filter(principal=principal, permission="DENY"), {"literal-deny-host"}),
        "host": (Filter(principal=principal, host="10.0.0.1"), {"literal-deny-host"}),
        "cluster": (Filter("CLUSTER", None, "ANY", principal), {"cluster"}),
        "nothing": (Filter("TOPIC", f"{name}-none", "LITERAL", principal), set()),
    }


def delete_cases(principal: str, name: str) -> dict[str, tuple[Filter, set[str]]]:
    """Filters sent together in one DeleteAcls -> the catalogue entries each one matches."""
    return {
        "LITERAL": (Filter("TOPIC", name, "LITERAL", principal), {"literal", "literal-deny-host"}),
        # Overlaps the LITERAL filter: Kafka matches every filter against the ACLs as they were before the request,
        # so the two literal ACLs are listed under both filters (and deleted once).
        "MATCH": (Filter("TOPIC", name, "MATCH", principal), {"literal", "literal-deny-host", "shorter-prefix", "prefixed", "wildcard"}),
        "PREFIXED, WRITE": (Filter("ANY", None, "PREFIXED", principal, operation="WRITE"), {"transactional-id"}),
        "ANY, nothing there": (Filter("GROUP", f"{name}-none", "ANY", principal), set()),
    }


def _left_after(acls: dict[str, Binding], cases: dict[str, tuple[Filter, set[str]]]) -> list[Binding]:
    gone = set().union(*(keys for _, keys in cases.values()))
    return sorted(acls[k] for k in acls.keys() - gone)


CLUSTER_AUTHORIZATION_FAILED = (31, "CLUSTER_AUTHORIZATION_FAILED")


# -- confluent-kafka ---------------------------------------------------------------------------
@pytest.mark.parametrize("actor", ACTORS)
def test_confluent_create_acls(target: Target, actor: str, principal: str, name: str) -> None:
    bindings = creations(principal, name)
    admin = confluent_admin(target.bootstrap, actor)  # kept: the futures fail with _DESTROY once the client is gone
    futures = admin.create_acls([to_confluent(b) for b in bindings])
    assert len(futures) == len(bindings)
    if actor == "admin":
        assert [f.result(timeout=TIMEOUT) for f in futures.values()] == [None] * len(bindings)
        assert target.settled_view(principal, bindings) == sorted(bindings)
    else:  # one error for the whole request, reported on every binding
        assert [confluent_error(f) for f in futures.values()] == [CLUSTER_AUTHORIZATION_FAILED] * len(bindings)
        assert target.view(principal) == []


@pytest.mark.parametrize("actor", ACTORS)
def test_confluent_describe_acls(target: Target, actor: str, principal: str, name: str) -> None:
    acls = catalogue(principal, name)
    target.store(list(acls.values()))
    admin = confluent_admin(target.bootstrap, actor)
    cases = describe_cases(principal, name)
    got = {case: sorted(from_confluent(b) for b in admin.describe_acls(to_confluent_filter(f)).result(timeout=TIMEOUT))
           for case, (f, _) in cases.items()}
    if actor == "bob":
        # Kafka answers bob with error 31 (kafka-python, below, and kafkajs raise it), but librdkafka 2.16 drops
        # DescribeAcls' top-level error and completes the future with an empty list: against Apache Kafka 3.9
        # too, which is what this asserts.
        assert got == {case: [] for case in cases}
        return
    assert got == {case: sorted(acls[k] for k in keys) for case, (_, keys) in cases.items()}


@pytest.mark.parametrize("actor", ACTORS)
def test_confluent_delete_acls(target: Target, actor: str, principal: str, name: str) -> None:
    acls = catalogue(principal, name)
    target.store(list(acls.values()))
    cases = delete_cases(principal, name)
    admin = confluent_admin(target.bootstrap, actor)  # kept: the futures fail with _DESTROY once the client is gone
    futures = admin.delete_acls([to_confluent_filter(f) for f, _ in cases.values()])
    assert len(futures) == len(cases)
    if actor != "admin":
        assert [confluent_error(f) for f in futures.values()] == [CLUSTER_AUTHORIZATION_FAILED] * len(cases)
        assert target.view(principal) == sorted(acls.values())
        return
    got = [sorted(from_confluent(b) for b in f.result(timeout=TIMEOUT)) for f in futures.values()]
    assert got == [sorted(acls[k] for k in keys) for _, keys in cases.values()]
    left = _left_after(acls, cases)
    assert target.settled_view(principal, left) == left


@pytest.mark.parametrize(("actor", "expected"), [
    ("admin", EVERY_CLUSTER_OPERATION),
    ("alice", ["DESCRIBE"]),
    # Kafka sends bob no operations; confluent-kafka turns an empty set into None.
    ("bob", None),
])
def test_confluent_describe_cluster_authorized_operations(target: Target, actor: str, expected: list[str] | None) -> None:
    admin = confluent_admin(target.bootstrap, actor)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(timeout=TIMEOUT)
    operations = cluster.authorized_operations
    assert (None if operations is None else [op.name for op in operations]) == expected
    assert [node.id for node in cluster.nodes] == [1] and cluster.controller.id == 1
    # Without the flag the operations are not asked for, whoever asks.
    assert admin.describe_cluster().result(timeout=TIMEOUT).authorized_operations is None


# -- kafka-python ------------------------------------------------------------------------------
@pytest.fixture
def kafka_python(target: Target) -> Iterator[Callable[[str], object]]:
    """kafka_python(user) -> a KafkaAdminClient logged in as that user, closed after the test."""
    opened = []

    def open_as(user: str):
        opened.append(kafka_python_admin(target.bootstrap, user))
        return opened[-1]

    yield open_as
    for admin in opened:
        admin.close()


@pytest.mark.parametrize("actor", ACTORS)
def test_kafka_python_create_acls(target: Target, kafka_python, actor: str, principal: str, name: str) -> None:
    from kafka.errors import ClusterAuthorizationFailedError

    # ACL APIs v3 can name a USER resource (whose delegation tokens a principal may create or describe).
    bindings = [*creations(principal, name), ("USER", "User:carol", "LITERAL", principal, "*", "DESCRIBE_TOKENS", "ALLOW"),
                ("DELEGATION_TOKEN", name, "LITERAL", principal, "*", "DESCRIBE", "ALLOW")]
    result = kafka_python(actor).create_acls([to_kafka_python(b) for b in bindings])
    if actor == "admin":
        assert result["failed"] == []
        assert [from_kafka_python(a) for a in result["succeeded"]] == bindings
        assert target.settled_view(principal, bindings) == sorted(bindings)
    else:
        assert result == {"succeeded": [], "failed": [ClusterAuthorizationFailedError] * len(bindings)}
        assert target.view(principal) == []


@pytest.mark.parametrize("actor", ACTORS)
def test_kafka_python_describe_acls(target: Target, kafka_python, actor: str, principal: str, name: str) -> None:
    from kafka.errors import ClusterAuthorizationFailedError, NoError

    acls = catalogue(principal, name)
    target.store(list(acls.values()))
    admin = kafka_python(actor)
    cases = describe_cases(principal, name)
    if actor == "bob":
        for f, _ in cases.values():
            with pytest.raises(ClusterAuthorizationFailedError):
                admin.describe_acls(to_kafka_python_filter(f))
        return
    got = {}
    for case, (f, _) in cases.items():
        found, error = admin.describe_acls(to_kafka_python_filter(f))
        assert error is NoError
        got[case] = sorted(from_kafka_python(a) for a in found)
    assert got == {case: sorted(acls[k] for k in keys) for case, (_, keys) in cases.items()}


@pytest.mark.parametrize("actor", ACTORS)
def test_kafka_python_delete_acls(target: Target, kafka_python, actor: str, principal: str, name: str) -> None:
    from kafka.errors import ClusterAuthorizationFailedError, NoError

    acls = catalogue(principal, name)
    target.store(list(acls.values()))
    cases = delete_cases(principal, name)
    results = kafka_python(actor).delete_acls([to_kafka_python_filter(f) for f, _ in cases.values()])
    assert len(results) == len(cases)
    if actor != "admin":
        assert [(matched, error) for _, matched, error in results] == [([], ClusterAuthorizationFailedError)] * len(cases)
        assert target.view(principal) == sorted(acls.values())
        return
    assert [error for _, _, error in results] == [NoError] * len(cases)
    got = [sorted(from_kafka_python(a) for a in matched) for _, matched, _ in results]
    assert got == [sorted(acls[k] for k in keys) for _, keys in cases.values()]
    left = _left_after(acls, cases)
    assert target.settled_view(principal, left) == left


@pytest.mark.parametrize(("actor", "expected"), [
    ("admin", EVERY_CLUSTER_OPERATION),
    ("alice", ["DESCRIBE"]),
    # DescribeCluster itself needs no permission; bob just gets no operations.
    ("bob", []),
])
def test_kafka_python_describe_cluster_authorized_operations(target: Target, kafka_python, actor: str, expected: list[str]) -> None:
    cluster = kafka_python(actor).describe_cluster()
    assert cluster["authorized_operations"] == expected
    assert [b["broker_id"] for b in cluster["brokers"]] == [1] and cluster["controller_id"] == 1

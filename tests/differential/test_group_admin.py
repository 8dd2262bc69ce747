"""DescribeGroups, ListGroups and DeleteGroups beside Apache Kafka 3.9 (its default, old group coordinator).

The client under test is User:ANONYMOUS on each broker's PLAINTEXT listener, its rights given by the same ACLs on both
(test_acl_apis.Peers). Kafka's session broker outlives a test and may hold other tests' groups, so every test uses
group ids under a prefix of its own, and ListGroups is compared without DESCRIBE on the cluster: only the groups the
test's ACLs make describable are listed, on both brokers.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from kafka_shim.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import DeleteGroupsRequest, DescribeGroupsRequest, FindCoordinatorRequest, ListGroupsRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_acl_apis import ANONYMOUS, Peers, acl
from tests.support.compare import assert_same
from tests.support.wire import Wire

DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, FIND_COORDINATOR = (
    ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.FIND_COORDINATOR)
GROUP, CLUSTER = ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
READ, DELETE, DESCRIBE, ALL, ALTER = AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE, AclOperation.ALL, AclOperation.ALTER


def group_acl(name: str, operation: int, pattern: int = LITERAL, permission: int = ALLOW):
    return acl(rtype=GROUP, name=name, pattern=pattern, principal=ANONYMOUS, operation=operation, permission=permission)


@pytest.fixture(scope="module")
def shim_secured() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
    })
    with EmbeddedBroker(config) as broker:
        yield broker


def _shim_offsets_topic(shim: EmbeddedBroker) -> None:
    partitions = shim.broker.services.partitions
    if partitions.get("__consumer_offsets", 0) is None:
        partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})


def ensure_coordinators(peers: Peers) -> None:
    """Both brokers coordinate groups: FindCoordinator creates __consumer_offsets (kafka-shim's own FindCoordinator
    when it serves one, else the topic directly), and Kafka has loaded every partition of it."""
    probe = f"probe-{uuid.uuid4().hex[:8]}"
    request = FindCoordinatorRequest(key_type=0, coordinator_keys=[probe])
    with Wire(peers.oracle.sasl) as admin:
        admin.sasl_plain("admin", "admin-secret")
        admin.request(FIND_COORDINATOR, 4, request)
        deadline = time.monotonic() + 60
        # Every __consumer_offsets partition is loaded once groups hashing anywhere answer without a coordinator error.
        names = [f"{probe}-{i}" for i in range(200)]
        while True:
            answer = admin.request(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=names))
            if all(g.error_code == 0 for g in answer.body.groups):
                break
            assert time.monotonic() < deadline, f"Kafka never loaded __consumer_offsets: {answer}"
            time.sleep(0.1)
    with Wire(peers.shim_address) as wire:
        answer = wire.request(FIND_COORDINATOR, 4, request)
    if answer.closed or peers.shim.call(lambda: peers.shim.broker.services.partitions.get("__consumer_offsets", 0)) is None:
        peers.shim.call(lambda: _shim_offsets_topic(peers.shim))


@pytest.fixture
def peers(oracle, shim_secured) -> Iterator[Peers]:
    both = Peers(oracle, shim_secured)
    both.reset()
    ensure_coordinators(both)
    yield both
    both.reset()


@pytest.fixture
def prefix() -> str:
    return f"ga-{uuid.uuid4().hex[:8]}-"


def same(peers: Peers, api_key: int, version: int, body, what: str):
    kafka, shim = peers.both(api_key, version, body)
    assert_same(kafka, shim, what=what)
    return kafka, shim


@pytest.mark.parametrize("version", range(6))
def test_describe_unknown_groups_authorized_and_denied(peers, prefix, version) -> None:
    peers.grant(group_acl(prefix + "ok", DESCRIBE, PREFIXED), group_acl(prefix + "ok-no", DESCRIBE, PREFIXED, DENY))
    groups = [prefix + "ok-1", prefix + "secret", prefix + "ok-no-2", prefix + "ok-1", prefix + "ok-3", prefix + "secret"]
    body = DescribeGroupsRequest(groups=groups, include_authorized_operations=version >= 3)
    same(peers, DESCRIBE_GROUPS, version, body, f"DescribeGroups v{version}")


@pytest.mark.parametrize("acls", [
    [(READ, ALLOW)],
    [(DELETE, ALLOW)],
    [(DESCRIBE, ALLOW)],
    [(ALL, ALLOW)],
    [(READ, ALLOW), (DELETE, ALLOW)],
    [(ALL, ALLOW), (DELETE, DENY)],
    [(READ, ALLOW), (DESCRIBE, DENY)],
    [(ALTER, ALLOW), (DESCRIBE, ALLOW)],
], ids=lambda acls: "+".join(f"{AclPermissionType(p).name}-{AclOperation(o).name}" for o, p in acls))
def test_authorized_operations_under_acl_sets(peers, prefix, acls) -> None:
    peers.grant(*(group_acl(prefix, op, PREFIXED, permission) for op, permission in acls))
    for version in (3, 4, 5):
        for include in (True, False):
            body = DescribeGroupsRequest(groups=[prefix + "a", prefix + "b"], include_authorized_operations=include)
            same(peers, DESCRIBE_GROUPS, version, body, f"DescribeGroups v{version} include={include}")


@pytest.mark.parametrize("version", range(3))
def test_delete_unknown_groups_authorized_and_denied(peers, prefix, version) -> None:
    peers.grant(group_acl(prefix + "del", DELETE, PREFIXED))
    names = [prefix + "del-1", prefix + "keep", prefix + "del-2", prefix + "del-1", prefix + "keep-2", prefix + "del-3", prefix + "del-4",
             prefix + "del-5"]
    same(peers, DELETE_GROUPS, version, DeleteGroupsRequest(groups_names=names), f"DeleteGroups v{version}")


@pytest.mark.parametrize("version", range(6))
def test_list_without_rights_is_empty_and_silent(peers, prefix, version) -> None:
    body = ListGroupsRequest(states_filter=["Empty"] if version >= 4 else [], types_filter=["classic"] if version >= 5 else [])
    same(peers, LIST_GROUPS, version, body, f"ListGroups v{version}")
    peers.grant(group_acl(prefix, DESCRIBE, PREFIXED))
    same(peers, LIST_GROUPS, version, body, f"ListGroups v{version} with DESCRIBE on the (still absent) groups")

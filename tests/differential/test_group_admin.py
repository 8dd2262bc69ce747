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
def shim_secured(group_protocols: str) -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({
        "group.coordinator.rebalance.protocols": group_protocols,
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false", "offsets.topic.replication.factor": "1",
        "group.initial.rebalance.delay.ms": "0",  # as scripts/real-kafka configures Kafka
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


# -- groups with members (the classic protocol) -------------------------------------------------------------------------
MEMBER_IDS = ("groups.*.members.*.member_id",)


def join_alone(address: tuple[str, int], group: str, client_id: str) -> tuple[Wire, str, int]:
    """One consumer joins ``group`` (JoinGroup v5 with its member-id round, SyncGroup v3 with its own assignment); the
    connection stays open so the member lives."""
    from kafka_shim.protocol.messages import JoinGroupRequest, SyncGroupRequest

    wire = Wire(address, timeout=60)
    # ConsumerProtocolSubscription v0 of one topic (Kafka parses it when the generation completes).
    subscription = b"\x00\x00\x00\x00\x00\x01\x00\x05topic\xff\xff\xff\xff"
    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription),
                 JoinGroupRequest.JoinGroupRequestProtocol(name="roundrobin", metadata=subscription)]
    body = JoinGroupRequest(group_id=group, session_timeout_ms=60000, rebalance_timeout_ms=60000, member_id="", protocol_type="consumer",
                            protocols=protocols)
    first = wire.request(ApiKey.JOIN_GROUP, 5, body, client_id=client_id)
    assert first.body.error_code == 79, first
    body.member_id = first.body.member_id
    joined = wire.request(ApiKey.JOIN_GROUP, 5, body, client_id=client_id)
    assert joined.body.error_code == 0, joined
    synced = wire.request(ApiKey.SYNC_GROUP, 3, SyncGroupRequest(
        group_id=group, generation_id=joined.body.generation_id, member_id=joined.body.member_id,
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.body.member_id, assignment=b"\x00\x00\x00\x00\x00\x00")]),
        client_id=client_id)
    assert synced.body.error_code == 0, synced
    return wire, joined.body.member_id, joined.body.generation_id


def leave(wire: Wire, group: str, member_id: str) -> None:
    from kafka_shim.protocol.messages import LeaveGroupRequest

    answer = wire.request(ApiKey.LEAVE_GROUP, 1, LeaveGroupRequest(group_id=group, member_id=member_id))
    assert answer.body.error_code == 0, answer
    wire.close()


def test_groups_with_a_member_then_empty_then_deleted(peers, prefix) -> None:
    if peers.shim.call(lambda: peers.shim.broker.services.api_table.versions(ApiKey.JOIN_GROUP)) is None:
        pytest.skip("this build does not serve JoinGroup")
    peers.grant(group_acl(prefix, READ, PREFIXED), group_acl(prefix + "del", DELETE, PREFIXED))
    live, gone = prefix + "del-live", prefix + "del-gone"
    members = {}
    for side, address in (("kafka", peers.oracle.plaintext), ("shim", peers.shim_address)):
        members[side] = {g: join_alone(address, g, "admin-test") for g in (live, gone)}
    wire_k, id_k, _ = members["kafka"][gone]
    wire_s, id_s, _ = members["shim"][gone]
    leave(wire_k, gone, id_k)
    leave(wire_s, gone, id_s)
    groups = [live, gone, prefix + "nobody", live]
    for version in range(6):
        kafka, shim = peers.both(DESCRIBE_GROUPS, version, DescribeGroupsRequest(groups=groups, include_authorized_operations=version >= 3))
        assert_same(kafka, shim, ignore=MEMBER_IDS, what=f"DescribeGroups v{version}")
    states = kafka.body.groups
    # in request order from the old coordinator; the new one answers group by group of __consumer_offsets partitions
    assert sorted((g.group_id, g.group_state, len(g.members)) for g in states) == sorted(
        [(live, "Stable", 1), (gone, "Empty", 0), (prefix + "nobody", "Dead", 0), (live, "Stable", 1)])
    for version in range(6):
        body = ListGroupsRequest(states_filter=["stable", "Empty"] if version >= 4 else [], types_filter=["classic"] if version >= 5 else [])
        kafka, shim = peers.both(LIST_GROUPS, version, body)
        # Kafka's session broker holds other modules' groups too, which size its group cache (a ConcurrentHashMap)
        # differently from this module's kafka-shim, so the two orders can differ here; the cache order itself is
        # checked against orders observed from Kafka (tests/shim/groups/test_group_admin_state.py). Only this test's groups
        # are describable.
        for answer in (kafka, shim):
            answer.body.groups.sort(key=lambda g: g.group_id)
        assert_same(kafka, shim, what=f"ListGroups v{version}")
    for version in range(3):
        same(peers, DELETE_GROUPS, version, DeleteGroupsRequest(groups_names=[live, gone, gone]), f"DeleteGroups v{version}")
    kafka, shim = peers.both(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[gone, live]))
    assert_same(kafka, shim, ignore=MEMBER_IDS, what="DescribeGroups after the deletion")
    assert sorted((g.group_id, g.group_state) for g in kafka.body.groups) == sorted([(gone, "Dead"), (live, "Stable")])
    for side in members.values():
        wire, member_id, _ = side[live]
        leave(wire, live, member_id)

"""DescribeGroups, ListGroups and DeleteGroups over the wire, with Kafka 3.9's ACL rules, on plain group state.

Groups are put straight into the coordinator (ClassicGroup-shaped stand-ins) so that these tests need no join
protocol; ``__consumer_offsets`` is created as FindCoordinator creates it, which makes this broker their coordinator.
"""

from __future__ import annotations

import pytest
import structlog

from kafka_shim.protocol.messages import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from tests.support.acl_helpers import ANONYMOUS, CLUSTER, DENY, DESCRIBE, GROUP, PREFIXED, READ, binding, grant
from tests.support.group_fakes import FakeClassicGroup, FakeOffsets, stable

DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
DELETE = 6
OMITTED = -(2**31)
# Kafka 3.9's GROUP operations as bits: READ 3, DELETE 6, DESCRIBE 8.
BITS = {READ: 1 << 3, DELETE: 1 << 6, DESCRIBE: 1 << 8}


def seed(broker, *groups, offsets_topic: bool = True):
    coordinator = broker.services.groups
    coordinator.offsets = FakeOffsets()
    for g in groups:
        coordinator.groups[g.group_id] = g
    if offsets_topic:
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
    return coordinator


def denials_in(logs: list[dict]) -> list[dict]:
    return [e for e in logs if e.get("logger") == "kafka.authorizer.logger" and e.get("decision") == "Denied"]


def group_acl(name: str, operation: int, permission: int = 3, pattern: int = 3):
    return binding(rtype=GROUP, name=name, principal=ANONYMOUS, operation=operation, permission=permission, pattern=pattern)


@pytest.mark.parametrize("version", range(6))
async def test_describe_every_version_without_authorizer(open_broker, client_of, version) -> None:
    g = stable("billing", "m-1")
    g.members["m-1"].group_instance_id = "static"
    seed(open_broker, g)
    client = await client_of(open_broker)
    answer = await client.request(DESCRIBE_GROUPS, version, DescribeGroupsRequest(groups=["billing", "nobody"],
                                                                                  include_authorized_operations=version >= 3))
    billing, nobody = answer.groups
    assert (billing.error_code, billing.group_state, billing.protocol_type, billing.protocol_data) == (0, "Stable", "consumer", "range")
    member = billing.members[0]
    assert (member.member_id, member.member_metadata, member.member_assignment) == ("m-1", b"range-meta", b"assigned")
    assert member.group_instance_id == ("static" if version >= 4 else None)
    assert (nobody.error_code, nobody.group_state, nobody.members) == (0, "Dead", [])
    assert billing.authorized_operations == (328 if version >= 3 else OMITTED)


async def test_describe_before_any_coordinator_exists_is_not_coordinator(open_broker, client_of) -> None:
    seed(open_broker, FakeClassicGroup("g"), offsets_topic=False)
    client = await client_of(open_broker)
    answer = await client.request(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["g"], include_authorized_operations=True))
    assert [(g.error_code, g.group_state, g.authorized_operations) for g in answer.groups] == [(16, "", OMITTED)]
    deleted = await client.request(DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["g"]))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [("g", 16)]
    listed = await client.request(LIST_GROUPS, 5, ListGroupsRequest())
    assert (listed.error_code, [g.group_id for g in listed.groups]) == (0, ["g"])


async def test_denied_groups_come_first_with_nothing_revealed(secured_broker, client_of) -> None:
    seed(secured_broker, stable("open", "m"), stable("secret", "m"))
    grant(secured_broker, group_acl("open", DESCRIBE))
    client = await client_of(secured_broker)
    with structlog.testing.capture_logs() as logs:
        secured_broker.authorizer.audit.refresh()  # as an application does once it has configured its logging
        answer = await client.request(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["open", "secret", "secret"],
                                                                                include_authorized_operations=True))
    assert [(g.group_id, g.error_code, g.group_state, g.protocol_type, g.members, g.authorized_operations) for g in answer.groups[:2]] == [
        ("secret", 30, "", "", [], OMITTED)] * 2
    opened = answer.groups[2]
    assert (opened.group_id, opened.error_code, opened.group_state, opened.authorized_operations) == ("open", 0, "Stable", BITS[DESCRIBE])
    assert [e["resource"] for e in denials_in(logs)] == ["Group:LITERAL:secret"] * 2  # asked once per entry, as Kafka asks


@pytest.mark.parametrize(("acls", "expected"), [
    ([(READ, 3)], BITS[READ] | BITS[DESCRIBE]),
    ([(DELETE, 3)], BITS[DELETE] | BITS[DESCRIBE]),
    ([(DESCRIBE, 3), (DELETE, 3), (READ, 3)], 328),
    ([(READ, 3), (DELETE, DENY)], BITS[READ] | BITS[DESCRIBE]),
    ([(2, 3)], 328),  # ALL
])
async def test_authorized_operations_bitfield(secured_broker, client_of, acls, expected) -> None:
    seed(secured_broker, FakeClassicGroup("billing"))
    grant(secured_broker, *(group_acl("bill", op, permission, pattern=PREFIXED) for op, permission in acls))
    client = await client_of(secured_broker)
    answer = await client.request(DESCRIBE_GROUPS, 3, DescribeGroupsRequest(groups=["billing"], include_authorized_operations=True))
    assert [(g.error_code, g.authorized_operations) for g in answer.groups] == [(0, expected)]
    unasked = await client.request(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["billing"], include_authorized_operations=False))
    assert unasked.groups[0].authorized_operations == OMITTED


async def test_list_shows_only_describable_groups_unless_cluster_describe(secured_broker, client_of) -> None:
    seed(secured_broker, FakeClassicGroup("a"), stable("b", "m"), FakeClassicGroup("c"))
    client = await client_of(secured_broker)
    with structlog.testing.capture_logs() as logs:
        secured_broker.authorizer.audit.refresh()  # as an application does once it has configured its logging
        nothing = await client.request(LIST_GROUPS, 5, ListGroupsRequest())
    assert (nothing.error_code, nothing.groups) == (0, [])
    assert denials_in(logs) == []  # silent, as Kafka's logIfDenied=false
    grant(secured_broker, group_acl("b", READ), group_acl("c", DESCRIBE))
    some = await client.request(LIST_GROUPS, 4, ListGroupsRequest(states_filter=[]))
    assert sorted((g.group_id, g.group_state) for g in some.groups) == [("b", "Stable"), ("c", "Empty")]
    stable_only = await client.request(LIST_GROUPS, 4, ListGroupsRequest(states_filter=["stable"]))
    assert [g.group_id for g in stable_only.groups] == ["b"]
    grant(secured_broker, binding(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=DESCRIBE))
    everything = await client.request(LIST_GROUPS, 5, ListGroupsRequest(types_filter=["CLASSIC"]))
    assert sorted((g.group_id, g.group_type, g.protocol_type) for g in everything.groups) == [
        ("a", "classic", "consumer"), ("b", "classic", "consumer"), ("c", "classic", "consumer")]
    consumer_type = await client.request(LIST_GROUPS, 5, ListGroupsRequest(types_filter=["consumer"]))
    assert consumer_type.groups == []


@pytest.mark.parametrize("version", range(3))
async def test_delete_needs_delete_on_each_group(secured_broker, client_of, version) -> None:
    coordinator = seed(secured_broker, FakeClassicGroup("empty"), stable("busy", "m"), FakeClassicGroup("kept"))
    coordinator.offsets.committed["empty"] = {("t", 0): 1}
    grant(secured_broker, group_acl("empty", DELETE), group_acl("busy", DELETE), group_acl("nobody", DELETE))
    client = await client_of(secured_broker)
    answer = await client.request(DELETE_GROUPS, version, DeleteGroupsRequest(groups_names=["kept", "busy", "empty", "nobody", "kept"]))
    results = [(r.group_id, r.error_code) for r in answer.results]
    assert sorted(results[:3]) == [("busy", 68), ("empty", 0), ("nobody", 69)]
    assert results[3:] == [("kept", 30)]
    assert set(coordinator.groups) == {"busy", "kept"} and coordinator.offsets.committed == {}


async def test_deleted_groups_stay_deleted_after_a_restart(tmp_path) -> None:
    """DeleteGroups writes the tombstones Kafka's cleanupGroupMetadata writes (each offset, and the group's metadata
    when it had a generation): with log.dirs the group and its offsets do not come back at start."""
    from kafka_shim.protocol.messages import OffsetCommitRequest, OffsetFetchRequest
    from kafka_shim.shim.broker import Broker
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from tests.support.acl_helpers import connect

    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.dirs": str(tmp_path)})
    commit = OffsetCommitRequest(group_id="gone", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="orders", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=5) for p in (0, 1)])])
    async with Broker(config) as broker:
        broker.services.partitions.create_topic("orders", 2)
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
        async with await connect(broker) as client:
            for group in ("gone", "kept"):
                commit.group_id = group
                answer = await client.request(8, 8, commit)
                assert {p.error_code for t in answer.topics for p in t.partitions} == {0}
            deleted = await client.request(DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["gone"]))
            assert [(r.group_id, r.error_code) for r in deleted.results] == [("gone", 0)]
    async with Broker(config) as broker:
        async with await connect(broker) as client:
            described = await client.request(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["gone", "kept"]))
            assert [(g.group_id, g.group_state) for g in described.groups] == [("gone", "Dead"), ("kept", "Empty")]
            listed = await client.request(LIST_GROUPS, 4, ListGroupsRequest())
            assert [g.group_id for g in listed.groups] == ["kept"]
            fetched = await client.request(9, 8, OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="gone", topics=None)]))
            assert fetched.groups[0].topics == []


async def test_list_groups_on_a_node_asks_only_about_the_groups_it_coordinates() -> None:
    # In a cluster in one process the nodes share one coordinator's state; each node's ListGroups, as each broker's
    # coordinator in Kafka, neither lists nor asks about the groups another node coordinates.
    from kafka_shim.shim.client.wire import WireClient
    from kafka_shim.shim.groups.admin_views import offsets_partition
    from tests.support.acl_helpers import config, running

    async with running(config(kafka_shim_brokers="2", node_id="1")) as broker:
        seed(broker, offsets_topic=False)
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"},
                                                replicas=[[1 + p % 2] for p in range(50)])
        ids = [f"g-{i}" for i in range(40)]
        here = next(g for g in ids if offsets_partition(g, 50) % 2 == 0)  # led by node 1
        there = next(g for g in ids if offsets_partition(g, 50) % 2 == 1)  # led by node 2
        for g in (here, there):
            broker.services.groups.groups[g] = FakeClassicGroup(g)
        grant(broker, group_acl("g-", DESCRIBE, pattern=PREFIXED))
        host, port = broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
        client = await WireClient.connect(host, int(port))
        try:
            with structlog.testing.capture_logs() as logs:
                broker.authorizer.audit.refresh()
                listed = await client.request(LIST_GROUPS, 4, ListGroupsRequest())
        finally:
            await client.close()
    assert [g.group_id for g in listed.groups] == [here]
    asked = [e["event"] for e in logs if e.get("logger") == "kafka.authorizer.logger"]
    assert [there in event for event in asked] == [False] and here in asked[0]

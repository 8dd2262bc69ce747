"""The coordinator's group administration on plain state: what DescribeGroups, ListGroups and DeleteGroups see."""

from __future__ import annotations

import hashlib

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.groups.admin_views import groups_in_kafka_order, members_in_kafka_order, offsets_partition
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.javacompat.hash_orders import scala_mutable_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from tests.support.group_fakes import FakeClassicGroup, FakeOffsets, stable


def coordinator(*groups: FakeClassicGroup) -> GroupCoordinator:
    c = GroupCoordinator(GroupSettings())
    c.offsets = FakeOffsets()  # type: ignore[attr-defined]
    for g in groups:
        c.groups[g.group_id] = g
    return c


def local(_group_id: str) -> bool:
    return True


def test_unknown_group_is_dead_and_not_local_is_not_coordinator() -> None:
    c = coordinator()
    unknown = c.describe_group("nobody", local)
    assert (unknown.error, unknown.state, unknown.protocol_type, unknown.protocol, unknown.members) == (0, "Dead", "", "", [])
    remote = c.describe_group("nobody", lambda _g: False)
    assert (remote.error, remote.state) == (ErrorCode.NOT_COORDINATOR, "")


def test_stable_group_shows_protocol_and_each_members_metadata_for_it() -> None:
    g = stable("billing", "m-1", "m-2", "m-3", protocol="roundrobin")
    g.members["m-2"].group_instance_id = "static-2"
    summary = coordinator(g).describe_group("billing", local)
    assert (summary.state, summary.protocol_type, summary.protocol) == ("Stable", "consumer", "roundrobin")
    assert [m.member_id for m in summary.members] == members_in_kafka_order(["m-1", "m-2", "m-3"])
    assert {m.metadata for m in summary.members} == {b"rr-meta"}
    assert {m.assignment for m in summary.members} == {b"assigned"}
    assert [m.group_instance_id for m in summary.members if m.member_id == "m-2"] == ["static-2"]


def test_rebalancing_group_hides_protocol_metadata_and_assignment() -> None:
    g = stable("billing", "m-1")
    g.state = "PreparingRebalance"
    summary = coordinator(g).describe_group("billing", local)
    assert (summary.state, summary.protocol, summary.members[0].metadata, summary.members[0].assignment) == (
        "PreparingRebalance", "", b"", b"")


def test_members_come_in_scala_hash_map_order_not_join_order() -> None:
    ids = [f"consumer-{i}-{'x' * i}" for i in range(12)]
    summary = coordinator(stable("g", *ids)).describe_group("g", local)
    assert [m.member_id for m in summary.members] == scala_mutable_map_order(ids, java_string_hash)
    assert [m.member_id for m in summary.members] != ids


def test_list_filters_by_state_case_insensitively_and_by_type() -> None:
    c = coordinator(FakeClassicGroup("a"), stable("b", "m"), FakeClassicGroup("c", state="CompletingRebalance", protocol_type=None))
    assert {g.group_id for g in c.list_groups()} == {"a", "b", "c"}
    assert [g.group_id for g in c.list_groups(states=["STABLE", "empty"])] == [g for g in groups_in_kafka_order(["a", "b"])]
    assert [(g.protocol_type, g.state, g.group_type) for g in c.list_groups(states=["completingrebalance"])] == [
        ("", "CompletingRebalance", "classic")]
    assert len(c.list_groups(types=["Classic"])) == 3
    assert c.list_groups(types=["consumer"]) == []
    assert c.list_groups(states=["unknown-state"]) == []


# Observed from Kafka 3.9's ListGroups after 40 "simple" groups committed offsets one after the other (ord-0 first),
# and again after DeleteGroups removed the even ones: its ConcurrentHashMap split bins when it grew (ord-8 before ord-6)
# and kept its 64 bins when the groups went.
NAMES = [f"ord-{i}-{'x' * (i % 7)}" for i in range(40)]
KAFKA_AFTER_40 = [
    "ord-5-xxxxx", "ord-29-x", "ord-1-x", "ord-8-x", "ord-6-xxxxxx", "ord-17-xxx", "ord-4-xxxx", "ord-22-x", "ord-28-", "ord-16-xx",
    "ord-14-", "ord-38-xxx", "ord-37-xx", "ord-21-", "ord-20-xxxxxx", "ord-32-xxxx", "ord-30-xx", "ord-25-xxxx", "ord-39-xxxx",
    "ord-33-xxxxx", "ord-34-xxxxxx", "ord-7-", "ord-24-xxx", "ord-10-xxx", "ord-3-xxx", "ord-9-xx", "ord-23-xx", "ord-15-x",
    "ord-26-xxxxx", "ord-27-xxxxxx", "ord-36-x", "ord-35-", "ord-11-xxxx", "ord-13-xxxxxx", "ord-19-xxxxx", "ord-0-", "ord-2-xx",
    "ord-31-xxx", "ord-18-xxxx", "ord-12-xxxxx"]
KAFKA_AFTER_DELETING_EVENS = [
    "ord-5-xxxxx", "ord-29-x", "ord-1-x", "ord-17-xxx", "ord-37-xx", "ord-21-", "ord-25-xxxx", "ord-39-xxxx", "ord-33-xxxxx", "ord-7-",
    "ord-3-xxx", "ord-9-xx", "ord-23-xx", "ord-15-x", "ord-27-xxxxxx", "ord-35-", "ord-11-xxxx", "ord-13-xxxxxx", "ord-19-xxxxx",
    "ord-31-xxx"]


def test_list_order_is_kafkas_group_cache_order_through_growth_and_deletion() -> None:
    c = coordinator()
    for name in NAMES:
        c.groups[name] = FakeClassicGroup(name)
        c.list_groups()  # the cache sees each group arrive
    assert [g.group_id for g in c.list_groups()] == KAFKA_AFTER_40
    assert c.delete_groups(NAMES[::2], local) == dict.fromkeys(scala_mutable_map_order(NAMES[::2], java_string_hash), 0)
    assert [g.group_id for g in c.list_groups()] == KAFKA_AFTER_DELETING_EVENS
    assert groups_in_kafka_order(NAMES) == KAFKA_AFTER_40


# Observed from Kafka 3.9's ListGroups (kafka-python keeps the answer's order) on a fresh broker: 30 simple groups
# committed an offset each, DeleteGroups removed the first 20, and only then was ListGroups asked. Its table had grown
# to 64 bins while the 30 were there, though no ListGroups saw them.
SIMPLE_GROUPS = [f"grp-{hashlib.md5(str(i).encode()).hexdigest()[:6]}" for i in range(30)]
KAFKA_AFTER_30_THEN_20_DELETED = ["grp-4e732c", "grp-33e75f", "grp-3c59dc", "grp-6ea9ab", "grp-02e74f", "grp-1ff1de",
                                  "grp-b6d767", "grp-37693c", "grp-98f137", "grp-8e296a"]


def test_list_order_keeps_the_growth_of_groups_no_listgroups_saw() -> None:
    c = coordinator()
    for name in SIMPLE_GROUPS:
        c.offsets.committed[name] = {("t", 0): 0}
    assert set(c.delete_groups(SIMPLE_GROUPS[:20], local).values()) == {ErrorCode.NONE}
    assert [g.group_id for g in c.list_groups()] == KAFKA_AFTER_30_THEN_20_DELETED


def test_delete_removes_empty_groups_with_their_offsets_and_refuses_others() -> None:
    c = coordinator(FakeClassicGroup("empty"), stable("busy", "m"), FakeClassicGroup("gone", state="Dead"))
    c.offsets.committed["empty"] = {("t", 0): 5}
    c.offsets.committed["other"] = {("t", 0): 7}
    errors = c.delete_groups(["empty", "busy", "gone", "unknown", "empty"], local)
    assert errors == {"empty": 0, "busy": ErrorCode.NON_EMPTY_GROUP, "gone": ErrorCode.GROUP_ID_NOT_FOUND,
                      "unknown": ErrorCode.GROUP_ID_NOT_FOUND}
    assert list(errors) == scala_mutable_map_order(["empty", "busy", "gone", "unknown"], java_string_hash)
    assert "empty" not in c.groups and c.offsets.committed == {"other": {("t", 0): 7}}
    assert "busy" in c.groups
    assert c.describe_group("empty", local).state == "Dead"
    assert c.delete_groups(["empty"], local) == {"empty": ErrorCode.GROUP_ID_NOT_FOUND}


def test_delete_of_a_group_this_broker_does_not_coordinate() -> None:
    c = coordinator(FakeClassicGroup("empty"))
    assert c.delete_groups(["empty"], lambda _g: False) == {"empty": ErrorCode.NOT_COORDINATOR}
    assert "empty" in c.groups


def test_a_group_known_only_by_its_offsets_is_an_empty_group() -> None:
    c = coordinator()
    c.offsets.committed["simple"] = {("t", 1): 3}
    described = c.describe_group("simple", local)
    assert (described.state, described.protocol_type, described.members) == ("Empty", "", [])
    assert [(g.group_id, g.state, g.protocol_type) for g in c.list_groups()] == [("simple", "Empty", "")]
    assert c.delete_groups(["simple"], local) == {"simple": 0}
    assert c.offsets.committed == {}


def test_offsets_partition_is_kafkas_partition_for() -> None:
    assert offsets_partition("g1", 50) == 3242 % 50  # "g1".hashCode() == 103 * 31 + 49
    assert offsets_partition("polygenelubricants", 50) == 0  # hashCode() == Integer.MIN_VALUE; Utils.abs maps it to 0
    assert offsets_partition("Aa", 7) == offsets_partition("BB", 7)  # equal Java hash codes


def test_consumer_groups_as_kafkas_new_coordinator_shows_them() -> None:
    """With group.coordinator.rebalance.protocols=classic,consumer: a consumer group is listed with type "consumer",
    described through DescribeGroups as Dead (it is not a classic group), and deleted only once empty."""
    import uuid

    from kafka_shim.shim.groups.consumer import Heartbeat, TopicShape

    c = GroupCoordinator(GroupSettings.from_properties({"group.coordinator.rebalance.protocols": "classic,consumer"}))
    c.groups["old"] = FakeClassicGroup("old")
    topics = {"t": TopicShape(uuid.uuid4(), 2)}
    answer = c.consumer.heartbeat(Heartbeat("new", "", 0, rebalance_timeout_ms=30000, subscribed_topic_names=["t"], server_assignor="uniform", owned=[]), topics, "c", "/127.0.0.1")
    listed = {g.group_id: (g.group_type, g.protocol_type, g.state) for g in c.list_groups()}
    assert listed["old"] == ("classic", "consumer", "Empty")
    assert listed["new"][:2] == ("consumer", "consumer") and listed["new"][2] != "Empty"
    assert [g.group_id for g in c.list_groups(types=["consumer"])] == ["new"]
    assert (c.describe_group("new", local).state, c.describe_group("new", local).members) == ("Dead", [])
    assert c.delete_groups(["new"], local) == {"new": ErrorCode.NON_EMPTY_GROUP}
    c.consumer.heartbeat(Heartbeat("new", answer.member_id, -1), topics, "c", "/127.0.0.1")  # leaves
    assert c.delete_groups(["new"], local) == {"new": 0}
    assert "new" not in c.groups

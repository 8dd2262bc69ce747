"""TopicAdmin without a socket: Kafka 3.9's controller checks, messages and order for topic administration.

The messages asserted here are the ones Apache Kafka 3.9 answered in tests/differential/test_topic_apis.py.
"""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.protocol.codes import ErrorCode as E
from kafka_shim.protocol.primitives import ZERO_UUID
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.cluster.topics import invalid_topic_name
from kafka_shim.shim.javacompat.java_hash import hash_set_order
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.topic_admin import (
    Authorizations,
    BatchTooLarge,
    NewTopic,
    PartitionsIncrease,
    TopicAdmin,
    TopicDeletionDisabled,
    TopicRef,
)


def _admin(props: dict[str, str] | None = None, **settings) -> TopicAdmin:
    partitions = Partitions(ClusterState(cluster_id="c", node_id=1), LogManager(None), props or {})
    return TopicAdmin(partitions, **settings)


def _codes(results) -> dict[str, tuple[int, str | None]]:
    return {r.name: (r.error, r.message) for r in results}


def _only(names):
    return lambda asked: {n for n in asked if n in names}


# -- CreateTopics ---------------------------------------------------------------------------------------------------------


def test_create_uses_the_broker_defaults_and_reports_the_configs() -> None:
    admin = _admin({"log.retention.hours": "1"}, num_partitions=4)
    [result] = admin.create_topics([NewTopic("orders", configs=[("cleanup.policy", "compact")])], validate_only=False)
    assert (result.error, result.num_partitions, result.replication_factor) == (E.NONE, 4, 1)
    assert len(admin.partitions.cluster.topics["orders"].partitions) == 4
    assert result.topic_id == admin.partitions.cluster.topics["orders"].topic_id
    configs = {c.name: c for c in result.configs}
    assert [c.name for c in result.configs] == sorted(configs)
    assert (configs["cleanup.policy"].value, int(configs["cleanup.policy"].source)) == ("compact", 1)  # TOPIC_CONFIG
    assert (configs["retention.ms"].value, int(configs["retention.ms"].source)) == ("3600000", 4)  # STATIC_BROKER_CONFIG


def test_validate_only_creates_nothing() -> None:
    admin = _admin()
    [result] = admin.create_topics([NewTopic("orders", 2, 1)], validate_only=True)
    assert result.error == E.NONE and result.topic_id != ZERO_UUID
    assert "orders" not in admin.partitions.cluster.topics


@pytest.mark.parametrize(("topic", "code", "message"), [
    (NewTopic("a/b", 1, 1), E.INVALID_TOPIC_EXCEPTION,
     "Topic name is invalid: 'a/b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
    (NewTopic("", 1, 1), E.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: the empty string is not allowed"),
    (NewTopic("t", 1, 3), E.INVALID_REPLICATION_FACTOR,
     "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered."),
    (NewTopic("t", 1, 0), E.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value."),
    (NewTopic("t", 0, 1), E.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."),
    (NewTopic("t", 1, 1, configs=[("retention.ms", "abc")]), E.INVALID_CONFIG, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    (NewTopic("t", 1, 1, configs=[("nope", "1")]), E.INVALID_CONFIG, "Unknown topic config name: nope"),
    (NewTopic("t", 1, 1, configs=[("retention.ms", None), ("segment.ms", None)]), E.INVALID_CONFIG,
     "Null value not supported for topic configs: retention.ms,segment.ms"),
    (NewTopic("t", -1, 1, [(0, [1])]), E.INVALID_REQUEST, "A manual partition assignment was specified, but replication factor was not set to -1."),
    (NewTopic("t", 2, -1, [(0, [1])]), E.INVALID_REQUEST, "A manual partition assignment was specified, but numPartitions was not set to -1."),
    (NewTopic("t", -1, -1, [(0, [1]), (0, [1])]), E.INVALID_REPLICA_ASSIGNMENT, "Found multiple manual partition assignments for partition 0"),
    (NewTopic("t", -1, -1, [(0, [7])]), E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker 7, but no such broker is registered."),
    (NewTopic("t", -1, -1, [(0, [1, 1])]), E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 1 more than once."),
    (NewTopic("t", -1, -1, [(0, [])]), E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
    (NewTopic("t", -1, -1, [(1, [1])]), E.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"),
    (NewTopic("__cluster_metadata", 1, 1), E.INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited."),
])
def test_create_refusals(topic, code, message) -> None:
    admin = _admin()
    assert _codes(admin.create_topics([topic], validate_only=False)) == {topic.name: (code, message)}
    assert topic.name not in admin.partitions.cluster.topics


def test_manual_assignment_sets_the_partition_count() -> None:
    admin = _admin()
    [result] = admin.create_topics([NewTopic("t", -1, -1, [(1, [1]), (0, [1])])], validate_only=False)
    assert (result.error, result.num_partitions) == (E.NONE, 2)


def test_existing_and_colliding_names() -> None:
    admin = _admin()
    admin.create_topics([NewTopic("a_b", 1, 1)], validate_only=False)
    assert _codes(admin.create_topics([NewTopic("a_b", 1, 1), NewTopic("a.b", 1, 1)], validate_only=False)) == {
        "a_b": (E.TOPIC_ALREADY_EXISTS, "Topic 'a_b' already exists."),
        "a.b": (E.INVALID_TOPIC_EXCEPTION, "Topic 'a.b' collides with existing topic: a_b"),
    }


def test_names_new_in_one_request_do_not_collide_with_each_other() -> None:
    # Kafka checks collisions against the topics that existed before the request.
    admin = _admin()
    assert [r.error for r in admin.create_topics([NewTopic("x.y", 1, 1), NewTopic("x_y", 1, 1)], validate_only=False)] == [0, 0]


def test_duplicates_and_denials_follow_the_created_topics_in_hash_set_order() -> None:
    admin = _admin()
    topics = [NewTopic(n, 1, 1) for n in ("ok", "dup-b", "dup-a", "dup-b", "dup-a", "dup-a", "no-1", "no-2")]
    results = admin.create_topics(topics, False, Authorizations(cluster_wide=False, permitted=_only({"ok", "dup-a", "dup-b"}),
                                                                describable=_only(set())))
    assert [r.name for r in results] == ["ok", *hash_set_order(["dup-b", "dup-a"]), *[n for n in hash_set_order(["ok", "no-1", "no-2"]) if n != "ok"]]
    codes = _codes(results)
    assert codes["dup-a"] == (E.INVALID_REQUEST, "Duplicate topic name.")
    assert codes["no-1"] == (E.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    ok = results[0]
    assert (ok.config_error, ok.num_partitions, ok.configs) == (E.TOPIC_AUTHORIZATION_FAILED, -1, [])  # no DESCRIBE_CONFIGS


def test_more_than_ten_thousand_records_fail_the_request() -> None:
    admin = _admin()
    with pytest.raises(BatchTooLarge):
        admin.create_topics([NewTopic("a", 6000, 1), NewTopic("b", 6000, 1)], validate_only=False)
    assert admin.partitions.cluster.topics == {}
    # a topic record, one config record and 9,998 partitions: exactly the limit
    assert admin.create_topics([NewTopic("c", 9998, 1, configs=[("retention.ms", "5")])], validate_only=True)[0].error == 0


def test_topic_name_rules_count_utf16_units() -> None:
    assert invalid_topic_name("a" * 249) is None
    assert "longer than the max allowed length 249" in invalid_topic_name("a" * 250)
    assert invalid_topic_name(".") == "Topic name is invalid: '.' is not allowed"


# -- CreatePartitions -----------------------------------------------------------------------------------------------------


def test_create_partitions() -> None:
    admin = _admin()
    admin.create_topics([NewTopic("t", 2, 1), NewTopic("u", 1, 1)], validate_only=False)
    results = admin.create_partitions([PartitionsIncrease("t", 2), PartitionsIncrease("u", 0), PartitionsIncrease("nope", 3),
                                       PartitionsIncrease("t", 9), PartitionsIncrease("v", 2)], validate_only=False,
                                      alterable=_only({"t", "u", "nope"}))
    assert results[0].name == "t" and results[0].message == "Duplicate topic name."
    assert _codes(results[1:]) == {"u": (E.INVALID_PARTITIONS, "The topic u currently has 1 partition(s); 0 would not be an increase."),
                                   "nope": (E.UNKNOWN_TOPIC_OR_PARTITION, None), "v": (E.TOPIC_AUTHORIZATION_FAILED, None)}
    assert _codes(admin.create_partitions([PartitionsIncrease("u", 1)], False)) == {"u": (E.INVALID_PARTITIONS, "Topic already has 1 partition(s).")}
    assert _codes(admin.create_partitions([PartitionsIncrease("u", 3, [[1]])], False)) == {
        "u": (E.INVALID_REPLICA_ASSIGNMENT, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.")}
    assert admin.create_partitions([PartitionsIncrease("u", 3)], validate_only=True)[0].error == 0
    assert len(admin.partitions.cluster.topics["u"].partitions) == 1
    assert admin.create_partitions([PartitionsIncrease("u", 3, [[1], [1]])], validate_only=False)[0].error == 0
    assert len(admin.partitions.cluster.topics["u"].partitions) == 3 and admin.partitions.get("u", 2) is not None


def test_create_partitions_beyond_ten_thousand_records() -> None:
    admin = _admin()
    admin.create_topics([NewTopic(n, 1, 1) for n in ("a", "b", "c")], validate_only=False)
    results = admin.create_partitions([PartitionsIncrease(n, 6000) for n in ("a", "b", "c")], validate_only=False)
    by_name = {r.name: r.error for r in results}
    first = next(r.name for r in results)
    assert by_name[first] == E.NONE and sorted(by_name.values()) == [E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR, E.NONE]
    assert sorted(len(t.partitions) for t in admin.partitions.cluster.topics.values()) == [1, 1, 6000]


# -- DeleteTopics ---------------------------------------------------------------------------------------------------------


def test_delete_by_name_never_reveals_undescribable_topics() -> None:
    admin = _admin()
    admin.create_topics([NewTopic(n, 1, 1) for n in ("a", "b", "c")], validate_only=False)
    auth = Authorizations(cluster_wide=False, permitted=_only({"a"}), describable=_only({"a", "b", "missing"}))
    results = admin.delete_topics([TopicRef(n) for n in ("a", "b", "c", "missing", "hidden", "x", "x")], auth)
    assert _codes(results) == {
        "x": (E.INVALID_REQUEST, "Duplicate topic name."), "a": (E.NONE, None),
        "b": (E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."), "c": (E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        "hidden": (E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        "missing": (E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
    }
    assert sorted(admin.partitions.cluster.topics) == ["b", "c"]


def test_delete_by_id() -> None:
    admin = _admin()
    admin.create_topics([NewTopic(n, 1, 1) for n in ("a", "b", "c", "d")], validate_only=False)
    ids = {n: t.topic_id for n, t in admin.partitions.cluster.topics.items()}
    stranger = uuid.uuid4()
    refs = [TopicRef(None, ids["a"]), TopicRef(None, ids["b"]), TopicRef(None, ids["c"]), TopicRef("d"), TopicRef(None, ids["d"]),
            TopicRef(None, stranger), TopicRef(None), TopicRef("both", stranger), TopicRef(None, ids["a"]), TopicRef(None, ids["a"])]
    auth = Authorizations(cluster_wide=False, permitted=_only({"a", "d"}), describable=_only({"a", "b", "d"}))
    got = sorted((r.name or "", r.topic_id, r.error, r.message) for r in admin.delete_topics(refs, auth))
    assert got == sorted([
        ("", ZERO_UUID, E.INVALID_REQUEST, "Neither topic name nor id were specified."),
        ("both", stranger, E.INVALID_REQUEST, "You may not specify both topic name and topic id."),
        ("", ids["a"], E.INVALID_REQUEST, "Duplicate topic id."),
        ("", stranger, E.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."),
        ("b", ids["b"], E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        ("", ids["c"], E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        ("d", ids["d"], E.INVALID_REQUEST, "The provided topic name maps to an ID that was already supplied."),
    ])
    assert sorted(admin.partitions.cluster.topics) == ["a", "b", "c", "d"]


def test_delete_disabled() -> None:
    admin = _admin(delete_topic_enable=False)
    admin.create_topics([NewTopic("a", 1, 1)], validate_only=False)
    with pytest.raises(TopicDeletionDisabled):
        admin.delete_topics([TopicRef("a")])
    assert "a" in admin.partitions.cluster.topics

"""Committed offsets as plain state: OffsetStore and the coordinator's offset methods, without a socket."""

from __future__ import annotations

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.groups.classic import ClassicGroup
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.groups.offsets import (
    NEVER_COMMITTED,
    ExpiryRule,
    FetchedOffset,
    OffsetAndMetadata,
    OffsetStore,
    SinkError,
    commit_order,
    fetch_order,
    java_length,
)
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.groups.timers import ManualScheduler

MINUTE = 60_000


class Clock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def coordinator(clock: Clock | None = None, **settings: int) -> GroupCoordinator:
    c = GroupCoordinator(GroupSettings(**settings), scheduler=ManualScheduler())
    c.offsets.now_ms = clock or Clock()
    return c


def test_commit_then_fetch_with_never_committed_partitions() -> None:
    store = OffsetStore(now_ms=Clock())
    assert store.commit("g", [(("t", 0), OffsetAndMetadata(5, 3, "meta", 1))]) == {("t", 0): ErrorCode.NONE}
    assert dict(store.fetch("g", [("t", 0), ("t", 1), ("other", 0)])) == {
        ("t", 0): FetchedOffset(5, 3, "meta"), ("t", 1): NEVER_COMMITTED, ("other", 0): NEVER_COMMITTED}
    assert dict(store.fetch("unknown", None)) == {}
    assert dict(store.fetch("g", None)) == {("t", 0): FetchedOffset(5, 3, "meta")}


def test_metadata_limit_counts_java_chars_and_refuses_only_those() -> None:
    store = OffsetStore(metadata_max_bytes=4)
    assert java_length("\U0001F600") == 2  # a surrogate pair is two Java chars
    result = store.commit("g", [(("t", 0), OffsetAndMetadata(1, metadata="abcd")), (("t", 1), OffsetAndMetadata(1, metadata="abc\U0001F600"))])
    assert result == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert dict(store.fetch("g", None)) == {("t", 0): FetchedOffset(1, -1, "abcd")}


def test_a_failing_sink_stores_nothing_and_answers_kafkas_converted_error() -> None:
    class Failing:
        def append_offsets(self, group_id, offsets):
            raise SinkError(ErrorCode.KAFKA_STORAGE_ERROR, "disk full")

        def append_tombstones(self, group_id, partitions, *, group=False):
            raise SinkError(ErrorCode.KAFKA_STORAGE_ERROR, "disk full")

    store = OffsetStore()
    store.sink = Failing()
    assert store.commit("g", [(("t", 0), OffsetAndMetadata(1))]) == {("t", 0): ErrorCode.NOT_COORDINATOR}
    assert not store.has_offsets("g")


def test_orders_follow_kafkas_scala_maps() -> None:
    # Small maps keep insertion order (fetch) or the mutable map's bucket order (commit); larger are CHAMP tries.
    assert fetch_order([("b", 1), ("a", 0), ("b", 1)]) == [("b", 1), ("a", 0)]
    five = [("t", i) for i in range(5)]
    assert sorted(commit_order(five)) == five and sorted(fetch_order(five)) == five
    assert commit_order(five[:2]) in ([("t", 0), ("t", 1)], [("t", 1), ("t", 0)])


def test_expiry_rules() -> None:
    store = OffsetStore(retention_ms=10 * MINUTE)
    store.commit("g", [(("t", 0), OffsetAndMetadata(1, commit_timestamp=0)),
                       (("kept", 0), OffsetAndMetadata(1, commit_timestamp=0)),
                       (("explicit", 0), OffsetAndMetadata(1, commit_timestamp=0, expire_timestamp=20 * MINUTE))])
    assert store.expire("g", None, now=100 * MINUTE) == {}  # a group with members that knows nothing: nothing expires
    assert store.expire("g", ExpiryRule(since=95 * MINUTE), now=100 * MINUTE) == {
        ("explicit", 0): OffsetAndMetadata(1, commit_timestamp=0, expire_timestamp=20 * MINUTE)}  # Empty for 5 minutes only
    assert set(store.expire("g", ExpiryRule(keep_topics=frozenset({"kept"})), now=100 * MINUTE)) == {("t", 0)}
    assert set(store.expire("g", ExpiryRule(), now=100 * MINUTE)) == {("kept", 0)}
    assert not store.has_offsets("g")


def test_simple_group_commits_and_generation_checks() -> None:
    c = coordinator()
    offsets = [(("t", 0), OffsetAndMetadata(7))]
    assert c.commit_offsets("g", "", None, 3, offsets, 8) == [(("t", 0), ErrorCode.ILLEGAL_GENERATION)]
    assert c.commit_offsets("g", "", None, -1, offsets, 8) == [(("t", 0), ErrorCode.NONE)]
    assert c.groups["g"].state == "Empty"  # Kafka's "simple" group: offsets only
    assert c.fetch_offsets("g", [("t", 0)]) == (ErrorCode.NONE, [(("t", 0), FetchedOffset(7))])
    assert c.commit_offsets("", "", None, -1, offsets, 8) == [(("t", 0), ErrorCode.NONE)]  # the empty id is allowed


def test_not_coordinator_until_the_offsets_topic_exists() -> None:
    class Topic:
        count: int | None = None

        def partition_count(self):
            return self.count

    c, topic = coordinator(), Topic()
    c.attach_offsets_topic(topic, persist=False)
    assert c.commit_offsets("g", "", None, -1, [(("t", 0), OffsetAndMetadata(1))], 8) == [(("t", 0), ErrorCode.NOT_COORDINATOR)]
    assert c.fetch_offsets("g", None) == (ErrorCode.NOT_COORDINATOR, [])
    assert c.delete_offsets("g", []) == (ErrorCode.NOT_COORDINATOR, [])
    topic.count = 50
    assert c.commit_offsets("g", "", None, -1, [(("t", 0), OffsetAndMetadata(1))], 8) == [(("t", 0), ErrorCode.NONE)]


def test_offset_delete_rules() -> None:
    c = coordinator()
    assert c.delete_offsets("", []) == (ErrorCode.INVALID_GROUP_ID, [])
    assert c.delete_offsets("g", [("t", 0)]) == (ErrorCode.GROUP_ID_NOT_FOUND, [])
    c.commit_offsets("g", "", None, -1, [(("t", 0), OffsetAndMetadata(1)), (("t", 1), OffsetAndMetadata(2))], 8)
    assert c.delete_offsets("g", [("t", 0), ("t", 5)]) == (ErrorCode.NONE, [(("t", 0), 0), (("t", 5), 0)])
    assert c.fetch_offsets("g", None) == (ErrorCode.NONE, [(("t", 1), FetchedOffset(2))])
    assert c.delete_offsets("g", [("t", 1)]) == (ErrorCode.NONE, [(("t", 1), 0)])
    # Empty and without offsets: the group is gone, as Kafka's cleanupGroupMetadata makes it Dead.
    assert "g" not in c.groups and c.delete_offsets("g", [("t", 1)]) == (ErrorCode.GROUP_ID_NOT_FOUND, [])

    consuming = ClassicGroup("cg")
    consuming.state, consuming.protocol_type, consuming._subscribed = "Stable", "consumer", {"t"}
    c.groups["cg"] = consuming
    c.offsets.commit("cg", [(("t", 0), OffsetAndMetadata(1)), (("u", 0), OffsetAndMetadata(1))])
    assert dict(c.delete_offsets("cg", [("t", 0), ("u", 0)])[1]) == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): 0}
    consuming._subscribed = None  # unknown subscriptions: every topic counts as consumed, as Kafka plays safe
    assert dict(c.delete_offsets("cg", [("u", 0)])[1]) == {("u", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC}
    consuming.protocol_type = "connect"
    assert c.delete_offsets("cg", [("t", 0)]) == (ErrorCode.NON_EMPTY_GROUP, [])


def test_deleted_topic_takes_its_offsets_and_empty_groups() -> None:
    c = coordinator()
    c.commit_offsets("g", "", None, -1, [(("gone", 0), OffsetAndMetadata(1))], 8)
    c.commit_offsets("h", "", None, -1, [(("gone", 0), OffsetAndMetadata(1)), (("kept", 0), OffsetAndMetadata(1))], 8)
    c.topic_deleted("gone")
    assert "g" not in c.groups
    assert c.fetch_offsets("h", None) == (ErrorCode.NONE, [(("kept", 0), FetchedOffset(1))])


def test_retention_pass_expires_simple_groups_by_commit_time() -> None:
    clock = Clock()
    c = coordinator(clock, offsets_retention_minutes=10)
    c.commit_offsets("g", "", None, -1, [(("t", 0), OffsetAndMetadata(1, commit_timestamp=clock.now))], 8)
    clock.now += 10 * MINUTE - 1
    assert c.expire_offsets() == 0
    clock.now += 1
    assert c.expire_offsets() == 1
    assert "g" not in c.groups


def test_retention_of_an_empty_consumer_group_counts_from_when_it_became_empty() -> None:
    clock = Clock()
    c = coordinator(clock, offsets_retention_minutes=10)
    group = ClassicGroup("cg", c.scheduler.now_ms())
    group.protocol_type = "consumer"
    c.groups["cg"] = group
    c.offsets.commit("cg", [(("t", 0), OffsetAndMetadata(1, commit_timestamp=clock.now - 60 * MINUTE))])
    group.state = "Stable"  # members: nothing expires (subscriptions unknown)
    clock.now += 60 * MINUTE
    assert c.expire_offsets() == 0
    c.scheduler.advance(30 * MINUTE)
    group.transition_to("PreparingRebalance", c.scheduler.now_ms())
    group.transition_to("Empty", c.scheduler.now_ms())  # empty from now on, whatever the commit's age
    clock.now += 10 * MINUTE - 1
    c.scheduler.advance(10 * MINUTE - 1)
    assert c.expire_offsets() == 0
    clock.now += 1
    c.scheduler.advance(1)
    assert c.expire_offsets() == 1 and "cg" not in c.groups


def test_a_stable_consumer_group_keeps_its_subscribed_topics_offsets() -> None:
    clock = Clock()
    c = coordinator(clock, offsets_retention_minutes=10)
    group = ClassicGroup("cg", c.scheduler.now_ms())
    group.state, group.protocol_type, group._subscribed = "Stable", "consumer", {"t"}
    c.groups["cg"] = group
    c.offsets.commit("cg", [(("t", 0), OffsetAndMetadata(1, commit_timestamp=clock.now)),
                            (("u", 0), OffsetAndMetadata(1, commit_timestamp=clock.now))])
    clock.now += 10 * MINUTE
    assert c.expire_offsets() == 1  # the unsubscribed topic's offset, by its commit time
    assert c.fetch_offsets("cg", None) == (ErrorCode.NONE, [(("t", 0), FetchedOffset(1))]) and "cg" in c.groups

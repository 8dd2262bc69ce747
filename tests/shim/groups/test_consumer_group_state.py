"""KIP-848 consumer groups as plain state (no socket): epochs, reconciliation, fencing, timeouts, static members,
and the group-type rules, against the facts of Kafka 3.9's GroupMetadataManager / CurrentAssignmentBuilder."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.groups.consumer import GroupError, Heartbeat, MemberState, TopicShape
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.groups.settings import GroupSettings

A = uuid.UUID(int=0xA)
B = uuid.UUID(int=0xB)
TOPICS = {"a": TopicShape(A, 4), "b": TopicShape(B, 2)}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeClassicGroup:
    state: str
    members: dict = field(default_factory=dict)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def coordinator(clock: Clock) -> GroupCoordinator:
    settings = GroupSettings.from_properties({"group.coordinator.rebalance.protocols": "classic,consumer", "group.consumer.max.size": "3"})
    return GroupCoordinator(settings, clock)


def beat(coordinator: GroupCoordinator, member_id: str = "", epoch: int = 0, *, topics: list[str] | None = None,
         owned: dict | None = None, group: str = "g", instance: str | None = None, assignor: str | None = None, timeout: int | None = None):
    if timeout is None:
        timeout = 30000 if epoch == 0 else -1
    if epoch == 0 and owned is None:
        owned = {}
    hb = Heartbeat(group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance, rebalance_timeout_ms=timeout,
                   subscribed_topic_names=topics, server_assignor=assignor,
                   owned=None if owned is None else [(t, sorted(ps)) for t, ps in owned.items()])
    return coordinator.consumer.heartbeat(hb, TOPICS, "client", "/127.0.0.1")


def error(call) -> GroupError:
    with pytest.raises(GroupError) as info:
        call()
    return info.value


def flat(assignment) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in (assignment or {}).items() for p in ps}


def test_a_first_member_gets_every_partition_at_epoch_1(coordinator: GroupCoordinator) -> None:
    answer = beat(coordinator, topics=["a", "b"])
    assert answer.member_epoch == 1 and len(answer.member_id) == 22 and answer.heartbeat_interval_ms == 5000
    assert flat(answer.assignment) == {(A, p) for p in range(4)} | {(B, 0), (B, 1)}
    group = coordinator.consumer_group("g")
    assert (group.state, group.group_epoch, group.assignment_epoch) == ("Stable", 1, 1)
    # A plain heartbeat with nothing new gets no assignment back.
    again = beat(coordinator, answer.member_id, 1, owned=answer.assignment)
    assert again.member_epoch == 1 and again.assignment is None


def test_a_second_member_waits_until_the_first_revokes(coordinator: GroupCoordinator) -> None:
    m1 = beat(coordinator, topics=["a"])
    m2 = beat(coordinator, topics=["a"])
    # The target gives m2 half of "a", but m1 still holds it: m2 moves to epoch 2 with nothing yet.
    assert m2.member_epoch == 2 and flat(m2.assignment) == set()
    assert coordinator.consumer_group("g").state == "Reconciling"
    told = beat(coordinator, m1.member_id, 1, owned=m1.assignment)
    group = coordinator.consumer_group("g")
    assert told.member_epoch == 1 and group.members[m1.member_id].state is MemberState.UNREVOKED_PARTITIONS
    kept = told.assignment
    assert len(flat(kept)) == 2
    # Still reporting the revoked partitions: nothing moves.
    assert beat(coordinator, m1.member_id, 1, owned=m1.assignment).member_epoch == 1
    done = beat(coordinator, m1.member_id, 1, owned=kept)
    assert done.member_epoch == 2
    got = beat(coordinator, m2.member_id, 2, owned={})
    assert flat(got.assignment) == {(A, p) for p in range(4)} - flat(kept)
    assert group.state == "Stable"


def test_epochs_the_coordinator_does_not_know_are_fenced(coordinator: GroupCoordinator) -> None:
    m1 = beat(coordinator, topics=["a"])
    ahead = error(lambda: beat(coordinator, m1.member_id, 5, owned={}))
    assert ahead.code == ErrorCode.FENCED_MEMBER_EPOCH
    assert ahead.message == ("The consumer group member has a greater member epoch (5) than the one known by the group "
                             "coordinator (1). The member must abandon all its partitions and rejoin.")
    m2 = beat(coordinator, topics=["a"])
    beat(coordinator, m1.member_id, 1, owned=m1.assignment)
    # m2 moved from epoch 0 to 2; a heartbeat that lost that answer comes with 0 ... which is not its previous
    # epoch once it has moved on twice, but epoch 0 -> 2 makes 0 the previous one: accepted with a subset.
    assert beat(coordinator, m2.member_id, 2, owned={}).member_epoch == 2
    behind = error(lambda: beat(coordinator, m2.member_id, 1, owned={}))
    assert behind.code == ErrorCode.FENCED_MEMBER_EPOCH and "smaller member epoch (1)" in behind.message


def test_a_lost_answer_is_forgiven_with_the_previous_epoch_and_a_subset(coordinator: GroupCoordinator) -> None:
    m1 = beat(coordinator, topics=["a"])
    m2 = beat(coordinator, topics=["a"])
    kept = beat(coordinator, m1.member_id, 1, owned=m1.assignment).assignment
    moved = beat(coordinator, m1.member_id, 1, owned=kept)
    assert moved.member_epoch == 2
    # The answer with epoch 2 was lost: the member comes back with epoch 1 and what it kept.
    assert beat(coordinator, m1.member_id, 1, owned=kept).member_epoch == 2
    assert error(lambda: beat(coordinator, m1.member_id, 1, owned=m1.assignment)).code == ErrorCode.FENCED_MEMBER_EPOCH
    del m2


def test_unknown_members_and_groups(coordinator: GroupCoordinator) -> None:
    e = error(lambda: beat(coordinator, "ghost", 1, group="nowhere"))
    assert (e.code, e.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group nowhere not found.")
    e = error(lambda: beat(coordinator, "ghost", -1, group="nowhere"))
    assert (e.code, e.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nowhere not found.")
    beat(coordinator, topics=["a"])
    e = error(lambda: beat(coordinator, "ghost", 1))
    assert (e.code, e.message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Member ghost is not a member of group g.")


@pytest.mark.parametrize(("fields", "message"), [
    ({"epoch": 0, "topics": ["a"], "timeout": -1}, "RebalanceTimeoutMs must be provided in first request."),
    ({"epoch": 0, "topics": []}, "SubscribedTopicNames must be set in first request."),
    ({"epoch": 0, "topics": ["a"], "owned": {A: [0]}}, "TopicPartitions must be empty when (re-)joining."),
    ({"epoch": 3}, "MemberId can't be empty."),
    ({"epoch": -3, "member_id": "m"}, "MemberEpoch is invalid."),
    ({"epoch": -2, "member_id": "m"}, "InstanceId can't be null."),
    ({"epoch": 0, "topics": ["a"], "group": " "}, "GroupId can't be empty."),
])
def test_malformed_heartbeats_get_invalid_request(coordinator: GroupCoordinator, fields: dict, message: str) -> None:
    e = error(lambda: beat(coordinator, **fields))
    assert (e.code, e.message) == (ErrorCode.INVALID_REQUEST, message)


def test_an_unknown_server_assignor(coordinator: GroupCoordinator) -> None:
    e = error(lambda: beat(coordinator, topics=["a"], assignor="sticky"))
    assert e.code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert e.message.startswith("ServerAssignor sticky is not supported. Supported assignors: ")


def test_the_group_is_full_at_group_consumer_max_size(coordinator: GroupCoordinator) -> None:
    for _ in range(3):
        beat(coordinator, topics=["a"])
    e = error(lambda: beat(coordinator, topics=["a"]))
    assert (e.code, e.message) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of 3 members.")


def test_a_member_leaving_hands_its_partitions_to_the_others(coordinator: GroupCoordinator) -> None:
    m1 = beat(coordinator, topics=["a"])
    m2 = beat(coordinator, topics=["a"])
    kept = beat(coordinator, m1.member_id, 1, owned=m1.assignment).assignment
    beat(coordinator, m1.member_id, 1, owned=kept)
    mine = beat(coordinator, m2.member_id, 2, owned={}).assignment
    left = beat(coordinator, m2.member_id, -1)
    assert (left.member_id, left.member_epoch, left.assignment) == (m2.member_id, -1, None)
    group = coordinator.consumer_group("g")
    assert list(group.members) == [m1.member_id] and group.group_epoch == 3
    again = beat(coordinator, m1.member_id, 2, owned=kept)
    assert again.member_epoch == 3 and flat(again.assignment) == flat(kept) | flat(mine)


def test_a_silent_member_is_fenced_after_the_session_timeout(coordinator: GroupCoordinator, clock: Clock) -> None:
    m1 = beat(coordinator, topics=["a"])
    m2 = beat(coordinator, topics=["a"])
    kept = beat(coordinator, m1.member_id, 1, owned=m1.assignment).assignment
    beat(coordinator, m1.member_id, 1, owned=kept)
    clock.now += 44.0
    beat(coordinator, m1.member_id, 2, owned=kept)
    clock.now += 2.0  # m2 silent for 46 s, m1 for 2 s
    group = coordinator.consumer_group("g")
    assert list(group.members) == [m1.member_id]
    assert flat(beat(coordinator, m1.member_id, 2, owned=kept).assignment) == {(A, p) for p in range(4)}
    assert error(lambda: beat(coordinator, m2.member_id, 2, owned={})).code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_revoke_in_time_is_fenced(coordinator: GroupCoordinator, clock: Clock) -> None:
    m1 = beat(coordinator, topics=["a"], timeout=10000)
    m2 = beat(coordinator, topics=["a"])
    beat(coordinator, m1.member_id, 1, owned=m1.assignment)  # told to revoke; it never does
    clock.now += 5
    beat(coordinator, m1.member_id, 1, owned=m1.assignment)
    clock.now += 5.5
    # m1 is fenced as m2's heartbeat reaches the group: m2 gets the next epoch and every partition at once.
    got = beat(coordinator, m2.member_id, 2, owned={})
    group = coordinator.consumer_group("g")
    assert m1.member_id not in group.members
    assert got.member_epoch == 3 and flat(got.assignment) == {(A, p) for p in range(4)}


def test_a_static_member_comes_back_to_its_partitions(coordinator: GroupCoordinator) -> None:
    s1 = beat(coordinator, topics=["a"], instance="one")
    s2 = beat(coordinator, topics=["a"], instance="two")
    kept = beat(coordinator, s1.member_id, 1, owned=s1.assignment, instance="one").assignment
    beat(coordinator, s1.member_id, 1, owned=kept, instance="one")
    theirs = beat(coordinator, s2.member_id, 2, owned={}, instance="two").assignment
    away = beat(coordinator, s2.member_id, -2, instance="two")
    assert (away.member_id, away.member_epoch) == (s2.member_id, -2)
    group = coordinator.consumer_group("g")
    assert group.group_epoch == 2 and group.members[s2.member_id].member_epoch == -2
    # Its partitions are still held: m1 does not get them.
    assert beat(coordinator, s1.member_id, 2, owned=kept, instance="one").assignment is None
    back = beat(coordinator, topics=["a"], instance="two")
    assert back.member_id != s2.member_id and back.member_epoch == 2 and back.assignment == theirs
    assert s2.member_id not in group.members and group.group_epoch == 2


def test_static_member_conflicts(coordinator: GroupCoordinator) -> None:
    s1 = beat(coordinator, topics=["a"], instance="one")
    e = error(lambda: beat(coordinator, topics=["a"], instance="one"))
    assert e.code == ErrorCode.UNRELEASED_INSTANCE_ID and e.message.endswith(f"is owned by {s1.member_id} member.")
    e = error(lambda: beat(coordinator, "other", 1, instance="one"))
    assert (e.code, e.message) == (ErrorCode.FENCED_INSTANCE_ID,
                                   f"Static member other with instance id one was fenced by member {s1.member_id}.")
    e = error(lambda: beat(coordinator, "other", 1, instance="nobody"))
    assert (e.code, e.message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Instance id nobody is unknown.")


def test_a_classic_group_is_not_a_consumer_group(coordinator: GroupCoordinator) -> None:
    coordinator.groups["busy"] = FakeClassicGroup("Stable", {"m": object()})
    e = error(lambda: beat(coordinator, topics=["a"], group="busy"))
    assert (e.code, e.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group busy is not a consumer group.")
    assert coordinator.consumer_group("busy") is None
    # An empty classic group is replaced by the consumer group, as Kafka deletes it.
    coordinator.groups["idle"] = FakeClassicGroup("Empty")
    assert beat(coordinator, topics=["a"], group="idle").member_epoch == 1
    assert coordinator.consumer_group("idle") is not None


def test_range_assignor_on_request(coordinator: GroupCoordinator) -> None:
    beat(coordinator, topics=["a"], instance="x", assignor="range")
    beat(coordinator, topics=["a"], instance="y", assignor="range")
    group = coordinator.consumer_group("g")
    by_instance = {group.members[m].instance_id: flat(a) for m, a in group.target.items()}
    assert by_instance == {"x": {(A, 0), (A, 1)}, "y": {(A, 2), (A, 3)}}
    assert group.preferred_assignor("uniform") == "range"


def test_a_tie_between_assignors_goes_to_uniform_as_kafkas_hash_map_iterates(coordinator: GroupCoordinator) -> None:
    # Kafka 3.9 (a franz-go probe): members asking for range and uniform, one each, are assigned by uniform.
    beat(coordinator, topics=["a"], instance="x", assignor="range")
    beat(coordinator, topics=["a"], instance="y", assignor="uniform")
    assert coordinator.consumer_group("g").preferred_assignor("range") == "uniform"


def test_offset_commit_and_fetch_checks(coordinator: GroupCoordinator) -> None:
    m1 = beat(coordinator, topics=["a"])
    assert coordinator.validate_consumer_offset_commit("g", m1.member_id, 1) == 0
    assert coordinator.validate_consumer_offset_commit("g", m1.member_id, 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert coordinator.validate_consumer_offset_commit("g", "ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.validate_consumer_offset_commit("g", m1.member_id, 1, api_version=8) == ErrorCode.UNSUPPORTED_VERSION
    assert coordinator.validate_consumer_offset_commit("g", "", -1) == ErrorCode.UNKNOWN_MEMBER_ID  # the group has members
    assert coordinator.validate_consumer_offset_fetch("g", None, -1) == 0
    assert coordinator.validate_consumer_offset_fetch("g", m1.member_id, 1) == 0
    assert coordinator.validate_consumer_offset_fetch("g", m1.member_id, 2) == ErrorCode.STALE_MEMBER_EPOCH
    beat(coordinator, m1.member_id, -1)
    assert coordinator.validate_consumer_offset_commit("g", "", -1) == 0  # empty group: admin commits allowed


def test_a_topic_created_later_is_assigned_at_the_next_heartbeat(coordinator: GroupCoordinator) -> None:
    hb = Heartbeat(group_id="late", member_id="", member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_names=["new"], owned=[])
    first = coordinator.consumer.heartbeat(hb, TOPICS, "client", "/127.0.0.1")
    assert (first.member_epoch, first.assignment) == (1, {})
    created = {**TOPICS, "new": TopicShape(uuid.UUID(int=0xC), 3)}
    later = coordinator.consumer.heartbeat(Heartbeat(group_id="late", member_id=first.member_id, member_epoch=1, owned=[]),
                                           created, "client", "/127.0.0.1")
    assert later.member_epoch == 2 and flat(later.assignment) == {(uuid.UUID(int=0xC), p) for p in range(3)}


def test_an_empty_consumer_group_gives_way_to_a_classic_join(coordinator: GroupCoordinator) -> None:
    m = beat(coordinator, topics=["a"], group="turn")
    assert coordinator.release_empty_consumer_group("turn") is False  # it has a member
    beat(coordinator, m.member_id, -1, group="turn")
    assert coordinator.release_empty_consumer_group("turn") is True
    assert "turn" not in coordinator.groups


def _subscription(*topics: str) -> bytes:
    import struct
    return struct.pack(">hi", 0, len(topics)) + b"".join(struct.pack(">h", len(t)) + t.encode() for t in topics) + struct.pack(">i", -1)


def test_a_classic_member_inside_a_consumer_group(coordinator: GroupCoordinator, clock: Clock) -> None:
    m1 = beat(coordinator, topics=["a"])
    group = coordinator.consumer_group("g")
    manager = coordinator.consumer
    refused = manager.classic_join(group, "", None, require_known_member_id=True, client_id="c", client_host="/h",
                                   rebalance_timeout_ms=10000, session_timeout_ms=10000, protocol_type="other",
                                   protocols=[("range", _subscription("a"))], topics=TOPICS)
    assert refused.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    first = manager.classic_join(group, "", None, require_known_member_id=True, client_id="c", client_host="/h",
                                 rebalance_timeout_ms=10000, session_timeout_ms=10000, protocol_type="consumer",
                                 protocols=[("range", _subscription("a"))], topics=TOPICS)
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED and first.member_id not in group.members
    joined = manager.classic_join(group, first.member_id, None, require_known_member_id=True, client_id="c", client_host="/h",
                                  rebalance_timeout_ms=10000, session_timeout_ms=10000, protocol_type="consumer",
                                  protocols=[("range", _subscription("a"))], topics=TOPICS)
    assert (joined.error, joined.generation_id, joined.protocol_type, joined.protocol_name) == (0, 2, "consumer", "range")
    names = {A: "a", B: "b"}
    synced = manager.classic_sync(group, first.member_id, None, 2, "consumer", "range", names)
    assert synced.error == 0 and synced.assignment == b"\x00\x00" + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff"  # v0, nothing yet
    # Its partitions are still m1's: the heartbeat tells it nothing yet; m1 revokes; then it must rejoin.
    assert manager.classic_heartbeat(group, first.member_id, None, 2) == 0
    kept = beat(coordinator, m1.member_id, 1, owned=m1.assignment).assignment
    beat(coordinator, m1.member_id, 1, owned=kept)
    assert manager.classic_heartbeat(group, first.member_id, None, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert manager.classic_heartbeat(group, first.member_id, None, 1) == ErrorCode.ILLEGAL_GENERATION
    assert coordinator.validate_consumer_offset_commit("g", first.member_id, 1, api_version=2) == ErrorCode.ILLEGAL_GENERATION
    # A classic member that never comes back in its session is fenced.
    clock.now += 11
    beat(coordinator, m1.member_id, 2, owned=kept)
    assert first.member_id not in group.members
    assert manager.classic_leave(group, [(first.member_id, None)]) == [(first.member_id, ErrorCode.UNKNOWN_MEMBER_ID)]
    assert manager.classic_heartbeat(group, m1.member_id, None, 2) == ErrorCode.UNKNOWN_MEMBER_ID  # not a classic member


def test_a_deleted_consumer_group_is_dead(coordinator: GroupCoordinator) -> None:
    m = beat(coordinator, topics=["a"], group="gone")
    beat(coordinator, m.member_id, -1, group="gone")
    group = coordinator.consumer_group("gone")
    assert group.state == "Empty"
    group.transition_to("Dead")
    assert group.state == "Dead"
    with pytest.raises(ValueError):
        group.transition_to("Stable")


def test_a_silent_member_is_fenced_on_time_without_any_other_request() -> None:
    from kafka_shim.shim.groups.timers import ManualScheduler
    scheduler = ManualScheduler()
    settings = GroupSettings.from_properties({"group.coordinator.rebalance.protocols": "classic,consumer"})
    coordinator = GroupCoordinator(settings, lambda: scheduler.now_ms() / 1000, scheduler)
    m1 = beat(coordinator, topics=["a"])
    group = coordinator.groups["g"]
    scheduler.advance(44_000)
    assert m1.member_id in group.members and group.group_epoch == 1
    scheduler.advance(1_100)  # 45 s (group.consumer.session.timeout.ms) after its heartbeat, nobody else asked
    assert group.members == {} and group.group_epoch == 2 and group.state == "Empty"


def test_a_failed_target_assignment_leaves_the_group_as_it_was(clock: Clock) -> None:
    """Kafka 3.9's heterogeneous uniform assignor fails on a move opposite to an earlier one (its inverted movement
    check): the heartbeat that needed the assignment gets UNKNOWN_SERVER_ERROR without a message, and nothing of it
    stays: not the member, not the epoch. The group goes on, and the member can join once the group has changed."""
    settings = GroupSettings.from_properties({"group.coordinator.rebalance.protocols": "classic,consumer"})
    coordinator = GroupCoordinator(settings, clock)
    topics = {"a": TopicShape(uuid.UUID(int=0xA1), 8), "b": TopicShape(uuid.UUID(int=0xB1), 6), "c": TopicShape(uuid.UUID(int=0xC1), 2)}

    def join(member_id: str, names: list[str]):
        hb = Heartbeat(group_id="mixed", member_id=member_id, member_epoch=0, instance_id=None, rebalance_timeout_ms=30000,
                       subscribed_topic_names=names, server_assignor=None, owned=[])
        return coordinator.consumer.heartbeat(hb, topics, "client", "/127.0.0.1")

    for member_id, names in (("member-0", ["a", "b", "c"]), ("member-1", ["a"]), ("member-2", ["a", "c"])):
        join(member_id, names)
    group = coordinator.consumer_group("mixed")
    before = (sorted(group.members), group.group_epoch, group.assignment_epoch, dict(group.target), group.state)
    for _ in range(2):
        failed = error(lambda: join("member-3", ["c"]))
        assert (failed.code, failed.message) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)
        assert (sorted(group.members), group.group_epoch, group.assignment_epoch, dict(group.target), group.state) == before
        assert coordinator.consumer_group("mixed") is group
    leave = Heartbeat(group_id="mixed", member_id="member-1", member_epoch=-1, instance_id=None, rebalance_timeout_ms=-1,
                      subscribed_topic_names=None, server_assignor=None, owned=None)
    coordinator.consumer.heartbeat(leave, topics, "client", "/127.0.0.1")
    assert join("member-3", ["c"]).member_id == "member-3"
    assert sorted(group.members) == ["member-0", "member-2", "member-3"]

"""The classic group state table on plain state: Kafka 3.9's GroupCoordinator rules, timers on a fake clock."""

from __future__ import annotations

import struct

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.groups.classic import JoinResult, SyncResult, UnreadableSubscription, subscription_topics
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.groups.timers import ManualScheduler

SESSION, REBALANCE = 45_000, 30_000


def _subscription(*topics: str) -> bytes:
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


class Harness:
    def __init__(self, **settings: int) -> None:
        self.clock = ManualScheduler()
        defaults = {"initial_rebalance_delay_ms": 0}
        defaults.update(settings)
        self.coordinator = GroupCoordinator(GroupSettings(**defaults), scheduler=self.clock)
        self.classic = self.coordinator.classic

    def join(self, member_id: str = "", *, group: str = "g", instance: str | None = None, v4: bool = True,
             protocols: list[tuple[str, bytes]] | None = None, protocol_type: str = "consumer",
             session: int = SESSION, rebalance: int = REBALANCE, skip: bool = True, client_id: str = "c") -> list[JoinResult]:
        out: list[JoinResult] = []
        self.classic.join(group, member_id, instance, require_known_member_id=v4 and instance is None,
                          support_skipping_assignment=skip, client_id=client_id, client_host="/127.0.0.1",
                          rebalance_timeout_ms=rebalance, session_timeout_ms=session, protocol_type=protocol_type,
                          protocols=protocols if protocols is not None else [("range", _subscription("t"))],
                          reason=None, callback=out.append)
        self.clock.advance(0)  # timers due now (group.initial.rebalance.delay.ms=0) fire, as Kafka's reaper would
        return out

    def new_member(self, **kw) -> str:
        first = self.join(**kw)
        assert first[0].error == ErrorCode.MEMBER_ID_REQUIRED
        return first[0].member_id

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None, *,
             group: str = "g", instance: str | None = None) -> list[SyncResult]:
        out: list[SyncResult] = []
        self.classic.sync(group, generation, member_id, "consumer", None, instance, assignments or {}, out.append)
        return out

    def group(self, group: str = "g"):
        return self.coordinator.classic_group(group)


def _stable_pair(h: Harness) -> tuple[str, str, int]:
    """Two dynamic members through one rebalance to Stable: (leader, follower, generation)."""
    a = h.new_member()
    ja = h.join(a)
    assert ja and ja[0].error == ErrorCode.NONE and ja[0].generation_id == 1  # alone: completes at once (delay 0)
    sa = h.sync(a, 1, {a: b"A"})
    assert sa[0].assignment == b"A"
    b = h.new_member()
    jb = h.join(b)
    assert jb == [] and h.group().state == "PreparingRebalance"
    ja2 = h.join(a)  # the leader rejoins on its heartbeat's REBALANCE_IN_PROGRESS
    assert ja2[0].error == ErrorCode.NONE and jb[0].generation_id == 2 and ja2[0].leader_id == a
    assert {m for m, _, _ in ja2[0].members} == {a, b} and jb[0].members == []
    sb = h.sync(b, 2)
    assert sb == []  # waits for the leader
    sa2 = h.sync(a, 2, {a: b"A2", b: b"B2"})
    assert sa2[0].assignment == b"A2" and sb[0].assignment == b"B2" and h.group().state == "Stable"
    return a, b, 2


def test_member_id_required_then_join_and_sync() -> None:
    h = Harness()
    first = h.join()
    assert first[0].error == ErrorCode.MEMBER_ID_REQUIRED and first[0].member_id.startswith("c-")
    assert h.group().state == "Empty" and h.group().pending_members == {first[0].member_id}
    joined = h.join(first[0].member_id)
    r = joined[0]
    assert (r.error, r.generation_id, r.protocol_type, r.protocol_name, r.leader_id) == (
        0, 1, "consumer", "range", first[0].member_id)
    assert h.group().state == "CompletingRebalance"
    synced = h.sync(r.member_id, 1, {r.member_id: b"x"})
    assert synced[0] == SyncResult(0, "consumer", "range", b"x") and h.group().state == "Stable"
    assert h.group().subscribed_topics() == {"t"}


def test_old_versions_join_without_member_id_required() -> None:
    h = Harness()
    r = h.join(v4=False)
    assert r[0].error == ErrorCode.NONE and r[0].member_id.startswith("c-")


def test_rebalance_when_member_joins_and_leaves() -> None:
    h = Harness()
    a, b, gen = _stable_pair(h)
    top, errors = h.classic.leave("g", [(b, None, "bye")])
    assert (top, errors) == (0, [0]) and h.group().state == "PreparingRebalance"
    assert h.classic.heartbeat("g", a, None, gen) == ErrorCode.REBALANCE_IN_PROGRESS
    r = h.join(a)
    assert r[0].generation_id == 3 and [m for m, _, _ in r[0].members] == [a]


def test_member_that_does_not_rejoin_is_dropped_at_rebalance_timeout() -> None:
    h = Harness()
    a, b, gen = _stable_pair(h)
    h.clock.advance(1000)
    assert h.classic.heartbeat("g", a, None, gen) == 0
    c = h.new_member()
    jc = h.join(c)
    ja = h.join(a)
    assert jc == [] and ja == []
    h.clock.advance(REBALANCE - 1)
    assert jc == [] and h.group().has(b)
    h.clock.advance(1)
    assert ja[0].generation_id == 3 and not h.group().has(b) and h.group().size == 2


def test_session_timeout_expires_a_silent_member_on_time() -> None:
    h = Harness()
    a, b, gen = _stable_pair(h)
    for _ in range(2):
        h.clock.advance(SESSION // 3)
        assert h.classic.heartbeat("g", a, None, gen) == 0
    h.clock.advance(SESSION - 2 * (SESSION // 3) - 1)
    assert h.group().has(b)
    h.clock.advance(1)
    # b has been silent since its SyncGroup answer: gone exactly at its deadline
    assert not h.group().has(b) and h.group().state == "PreparingRebalance"
    assert h.classic.heartbeat("g", a, None, gen) == ErrorCode.REBALANCE_IN_PROGRESS
    r = h.join(a)
    assert r[0].generation_id == 3


def test_session_deadline_counts_from_the_last_heartbeat() -> None:
    h = Harness()
    a, b, gen = _stable_pair(h)
    h.clock.advance(SESSION - 1)
    assert h.classic.heartbeat("g", b, None, gen) == 0
    assert h.classic.heartbeat("g", a, None, gen) == 0
    h.clock.advance(SESSION - 1)
    assert h.group().has(b) and h.group().state == "Stable"
    h.clock.advance(1)
    # both gone: the rebalance b's expiry started completes with nobody, and the group is Empty
    assert not h.group().has(b) and not h.group().has(a) and h.group().state == "Empty"
    assert h.group().generation_id == 3


def test_heartbeat_errors() -> None:
    h = Harness()
    a, _b, gen = _stable_pair(h)
    assert h.classic.heartbeat("g", "nobody", None, gen) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.classic.heartbeat("g", a, None, gen + 1) == ErrorCode.ILLEGAL_GENERATION
    assert h.classic.heartbeat("other", a, None, gen) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.classic.heartbeat("", a, None, gen) == ErrorCode.INVALID_GROUP_ID


def test_sync_errors_and_rebalance_in_progress() -> None:
    h = Harness()
    a, b, gen = _stable_pair(h)
    assert h.sync(a, gen + 1)[0].error == ErrorCode.ILLEGAL_GENERATION
    out: list[SyncResult] = []
    h.classic.sync("g", gen, a, "connect", None, None, {}, out.append)
    assert out[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    h.classic.sync("g", gen, a, None, "roundrobin", None, {}, out.append)
    assert out[1].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync("nobody", gen)[0].error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync(a, gen)[0] == SyncResult(0, "consumer", "range", b"A2")  # Stable: the current assignment again
    h.join(a)  # the leader rejoining a Stable group starts a rebalance
    assert h.sync(b, gen)[0].error == ErrorCode.REBALANCE_IN_PROGRESS


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout() -> None:
    h = Harness()
    a, b, _gen = _stable_pair(h)
    c = h.new_member()
    jc, ja, jb = h.join(c), h.join(a), h.join(b)
    assert ja[0].generation_id == 3 and jb and jc
    h.sync(a, 3, {})
    h.sync(b, 3)
    h.clock.advance(REBALANCE)
    assert not h.group().has(c) and h.group().state == "PreparingRebalance"


def test_protocol_type_and_name_checks() -> None:
    h = Harness()
    _a, _b, _gen = _stable_pair(h)
    assert h.join(protocol_type="connect")[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocols=[("roundrobin", b"")])[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert Harness().join(group="x", protocols=[])[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert Harness().join(group="x", protocol_type="")[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_chosen_by_votes_among_common_protocols() -> None:
    h = Harness(initial_rebalance_delay_ms=100)
    x = h.join(v4=False, protocols=[("cooperative-sticky", b"1"), ("range", b"2")])
    y = h.join(v4=False, protocols=[("range", b"3"), ("cooperative-sticky", b"4")])
    z = h.join(v4=False, protocols=[("cooperative-sticky", b"5"), ("range", b"6")])
    h.clock.advance(300)
    assert x[0].protocol_name == y[0].protocol_name == z[0].protocol_name == "cooperative-sticky"
    leader = next(r for r in (x, y, z) if r[0].members)
    assert sorted(md for _, _, md in leader[0].members) == [b"1", b"4", b"5"]


def test_session_timeout_bounds() -> None:
    h = Harness()
    assert h.join(session=5999)[0].error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join(session=1_800_001)[0].error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join(session=6000)[0].error == ErrorCode.MEMBER_ID_REQUIRED


def test_unknown_member_id_on_unknown_group_and_invalid_group_id() -> None:
    h = Harness()
    assert h.join("someone", group="nope")[0].error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coordinator.classic_group("nope") is None
    assert h.join(group="")[0].error == ErrorCode.INVALID_GROUP_ID


def test_group_max_size() -> None:
    h = Harness(max_size=1, initial_rebalance_delay_ms=50)
    a = h.join(v4=False)
    b = h.join(v4=False)
    assert b[0].error == ErrorCode.GROUP_MAX_SIZE_REACHED and b[0].member_id == ""
    h.clock.advance(50)
    assert a[0].error == 0 and h.group().size == 1


def test_initial_rebalance_delay_extends_for_each_new_member() -> None:
    h = Harness(initial_rebalance_delay_ms=3000)
    a = h.join(v4=False)
    h.clock.advance(2000)
    b = h.join(v4=False)
    h.clock.advance(1000)  # first delay over, but b arrived meanwhile: another 3000
    assert a == [] and b == []
    h.clock.advance(2999)
    assert a == []
    h.clock.advance(1)
    assert a[0].generation_id == b[0].generation_id == 1 and h.group().size == 2


def test_pending_member_expires_after_session_timeout() -> None:
    h = Harness()
    pending = h.join()[0].member_id
    h.clock.advance(SESSION)
    assert not h.group().is_pending_member(pending)
    assert h.join(pending)[0].error == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_restart_without_rebalance() -> None:
    h = Harness()
    a = h.join(instance="i-a", v4=False)
    a_id = a[0].member_id
    assert a_id.startswith("i-a-")
    h.sync(a_id, 1, {a_id: b"P"})
    b = h.join(instance="i-b")
    h.join(a_id, instance="i-a")
    gen = b[0].generation_id
    h.sync(a_id, gen, {a_id: b"PA", b[0].member_id: b"PB"})
    h.sync(b[0].member_id, gen, instance="i-b")
    assert h.group().state == "Stable"
    # i-b restarts: a new member id, same generation, its old assignment, no rebalance
    again = h.join(instance="i-b")
    r = again[0]
    assert r.error == 0 and r.generation_id == gen and r.member_id != b[0].member_id and not r.skip_assignment
    assert h.group().state == "Stable" and h.sync(r.member_id, gen, instance="i-b")[0].assignment == b"PB"
    # the old incarnation is fenced
    assert h.classic.heartbeat("g", b[0].member_id, "i-b", gen) == ErrorCode.FENCED_INSTANCE_ID
    assert h.classic.leave("g", [(b[0].member_id, "i-b", None)]) == (0, [ErrorCode.FENCED_INSTANCE_ID])


def test_static_leader_restart_is_told_to_skip_assignment_from_v9() -> None:
    h = Harness()
    a = h.join(instance="i-a")
    h.sync(a[0].member_id, 1, {})
    again = h.join(instance="i-a", skip=True)
    assert again[0].skip_assignment and again[0].leader_id == again[0].member_id and again[0].members
    older = h.join(instance="i-a", skip=False)
    assert not older[0].skip_assignment and older[0].leader_id == again[0].member_id and older[0].members == []


def test_static_member_leaves_by_instance_id_and_batch_errors() -> None:
    h = Harness()
    a = h.join(instance="i-a")
    top, errors = h.classic.leave("g", [("", "i-a", None), ("", "i-x", None), ("ghost", None, None)])
    assert (top, errors) == (0, [0, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID])
    assert not h.group().has(a[0].member_id)
    assert h.classic.leave("unknown", [("m", None, None)]) == (0, [ErrorCode.UNKNOWN_MEMBER_ID])


def test_static_member_survives_a_rebalance_it_misses_until_its_session_ends() -> None:
    h = Harness()
    a = h.join(instance="i-a")[0].member_id
    h.sync(a, 1, {})
    b = h.new_member()
    jb = h.join(b)
    h.clock.advance(REBALANCE)
    assert jb[0].generation_id == 2 and h.group().has(a)  # static: kept though it did not rejoin


def test_new_member_join_expires_after_five_minutes() -> None:
    h = Harness()
    a, b, gen = _stable_pair(h)
    c = h.new_member()
    jc = h.join(c, rebalance=600_000)  # a and b heartbeat but never rejoin; the rebalance would wait 10 minutes
    for _ in range(15):
        assert jc == []
        h.clock.advance(20_000)
        assert h.classic.heartbeat("g", a, None, gen) == ErrorCode.REBALANCE_IN_PROGRESS
        assert h.classic.heartbeat("g", b, None, gen) == ErrorCode.REBALANCE_IN_PROGRESS
    assert jc[0].error == ErrorCode.UNKNOWN_MEMBER_ID and not h.group().has(c)


def test_validate_classic_offset_commit() -> None:
    h = Harness()
    co = h.coordinator
    assert co.validate_classic_offset_commit("simple", -1, "", None, 8) == 0
    assert h.group("simple").state == "Empty"
    assert co.validate_classic_offset_commit("fresh", 3, "m", None, 8) == ErrorCode.ILLEGAL_GENERATION
    assert co.classic_group("fresh") is None
    a, b, gen = _stable_pair(h)
    assert co.validate_classic_offset_commit("g", gen, a, None, 8) == 0
    assert co.validate_classic_offset_commit("g", gen - 1, a, None, 8) == ErrorCode.ILLEGAL_GENERATION
    assert co.validate_classic_offset_commit("g", gen, "ghost", None, 8) == ErrorCode.UNKNOWN_MEMBER_ID
    assert co.validate_classic_offset_commit("g", -1, "", None, 8) == ErrorCode.UNKNOWN_MEMBER_ID
    c = h.new_member()
    h.join(c)
    assert co.validate_classic_offset_commit("g", gen, a, None, 8) == 0  # PreparingRebalance still commits
    ja, jb = h.join(a), h.join(b)
    assert ja and jb and h.group().state == "CompletingRebalance"
    assert co.validate_classic_offset_commit("g", gen + 1, a, None, 8) == ErrorCode.REBALANCE_IN_PROGRESS


def test_validate_offset_commit_of_fenced_static_member() -> None:
    h = Harness()
    a = h.join(instance="i-a")[0].member_id
    h.sync(a, 1, {})
    assert h.coordinator.validate_classic_offset_commit("g", 1, "old", "i-a", 8) == ErrorCode.FENCED_INSTANCE_ID
    assert h.coordinator.validate_classic_offset_commit("g", 1, a, "i-x", 8) == ErrorCode.UNKNOWN_MEMBER_ID


def test_offset_commit_restarts_the_session() -> None:
    h = Harness()
    a = h.join(v4=False)[0].member_id
    h.sync(a, 1, {})
    for _ in range(4):
        h.clock.advance(SESSION - 1)
        assert h.coordinator.validate_classic_offset_commit("g", 1, a, None, 8) == 0
    assert h.group().has(a)


@pytest.mark.parametrize(("data", "topics"), [
    (_subscription("a", "b"), {"a", "b"}),
    (b"\x00\x01", None),
    (struct.pack(">hi", -1, 1) + struct.pack(">h", 1) + b"x" + struct.pack(">i", -1), {"x"}),  # any version reads as v0
    (struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"x", None),  # no user data: the reader runs out of bytes
], ids=["two-topics", "version-only", "negative-version", "no-user-data"])
def test_subscription_topics(data: bytes, topics: set[str] | None) -> None:
    assert subscription_topics(data) == topics


@pytest.mark.parametrize("data", [
    struct.pack(">hi", 0, 5) + b"\x00",  # more topics than bytes left
    struct.pack(">hi", 0, -1),
    struct.pack(">hi", 3, 1) + struct.pack(">h", 5) + b"ab",  # a name longer than what is left
    struct.pack(">hi", 0, 1) + struct.pack(">h", -1) + b"....",
    struct.pack(">hi", 0, 0) + struct.pack(">i", 9) + b"ab",  # user data longer than what is left
], ids=["count", "negative-count", "name-length", "null-name", "user-data"])
def test_subscriptions_kafkas_reader_throws_on(data: bytes) -> None:
    with pytest.raises(UnreadableSubscription):
        subscription_topics(data)


def test_store_hook_at_kafkas_store_points_and_loaded_groups() -> None:
    h = Harness()
    stored: list[tuple[str, int, dict[str, bytes]]] = []
    h.classic.on_group_stored = lambda g: stored.append((g.state, g.generation_id, {m: x.assignment for m, x in g.members.items()}))
    a = h.join(v4=False)[0].member_id
    h.sync(a, 1, {a: b"A"})
    assert stored == [("CompletingRebalance", 1, {a: b"A"})]
    h.classic.leave("g", [(a, None, None)])
    assert stored[-1] == ("Empty", 2, {})
    # a Stable group read back at start-up: its member must heartbeat within its session timeout
    from kafka_shim.shim.groups.classic import ClassicGroup, ClassicMember
    group = ClassicGroup("loaded")
    group.state, group.generation_id, group.protocol_name = "Stable", 7, "range"
    member = ClassicMember("m-1", None, "c", "/127.0.0.1", REBALANCE, SESSION, "consumer", [("range", b"")])
    group.add(member, None)
    h.classic.loaded(group)
    assert h.classic.heartbeat("loaded", "m-1", None, 7) == 0
    h.clock.advance(SESSION)
    assert not h.group("loaded").has("m-1")

"""FindCoordinator, JoinGroup, SyncGroup, Heartbeat and LeaveGroup beside Apache Kafka 3.9 (its default, old group
coordinator): scripted sequences run against each broker on its own, answers compared field by field.

Member ids are ``<client id>-<uuid>`` and so differ between brokers: each transcript's ids are relabelled in order of
appearance (M0, M1, ...), so that "the leader is the member itself" or "the static member got a new id" are still
compared. The client is User:ANONYMOUS on each PLAINTEXT listener with the same ACLs on both (test_acl_apis.Peers);
every test uses group ids of its own, since Kafka's session broker keeps groups between tests.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafka_shim.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_acl_apis import ANONYMOUS, Peers, acl
from tests.support.compare import field_diff, normalise
from tests.support.wire import Answer, Wire

FIND, JOIN, HEARTBEAT, LEAVE, SYNC = (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
                                      ApiKey.SYNC_GROUP)
GROUP, TXN = ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
PREFIXED, ALLOW = PatternType.PREFIXED, AclPermissionType.ALLOW
READ, DESCRIBE = AclOperation.READ, AclOperation.DESCRIBE
_Protocol = JoinGroupRequest.JoinGroupRequestProtocol
_Assignment = SyncGroupRequest.SyncGroupRequestAssignment
_Leaving = LeaveGroupRequest.MemberIdentity


def subscription(*topics: str) -> bytes:
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


@pytest.fixture(scope="module")
def shim_secured(group_protocols: str) -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({
        "group.coordinator.rebalance.protocols": group_protocols,
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false", "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    })
    with EmbeddedBroker(config) as broker:
        yield broker


def _admin(peers: Peers) -> Wire:
    wire = Wire(peers.oracle.sasl)
    wire.sasl_plain("admin", "admin-secret")
    return wire


def ensure_coordinators(peers: Peers) -> None:
    """Both brokers answer FindCoordinator for groups and transactional ids (the first calls create the internal
    topics and answer 15 on both), and Kafka has loaded every __consumer_offsets partition."""
    deadline = time.monotonic() + 90
    peers.grant(group_acl("probe-", DESCRIBE), acl(rtype=TXN, name="probe-", pattern=PREFIXED, principal=ANONYMOUS,
                                                  operation=DESCRIBE, permission=ALLOW))
    for key_type in (0, 1):
        body = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[f"probe-{i}" for i in range(60)])
        for address, login in ((peers.oracle.sasl, True), (peers.shim_address, False)):
            while True:
                with Wire(address) as wire:
                    if login:
                        wire.sasl_plain("admin", "admin-secret")
                    answer = wire.request(FIND, 4, body)
                if all(c.error_code == 0 for c in answer.body.coordinators):
                    break
                assert time.monotonic() < deadline, f"no coordinator at {address}: {answer}"
                time.sleep(0.2)
    # Kafka loads each __consumer_offsets partition after the topic exists: a heartbeat to a group hashed anywhere
    # answers 14/16 until then, 25 (no such member) once loaded.
    groups = [f"probe-{i}" for i in range(200)]
    with _admin(peers) as admin:
        while True:
            codes = {admin.request(HEARTBEAT, 4, HeartbeatRequest(group_id=g, generation_id=1, member_id="m")).body.error_code
                     for g in groups}
            if codes == {ErrorCode.UNKNOWN_MEMBER_ID}:
                break
            assert time.monotonic() < deadline, f"Kafka never loaded __consumer_offsets: {codes}"
            time.sleep(0.2)
    peers.reset()


@pytest.fixture(scope="module")
def coordinators_ready(oracle, shim_secured) -> None:
    peers = Peers(oracle, shim_secured)
    peers.reset()
    ensure_coordinators(peers)


@pytest.fixture
def peers(oracle, shim_secured, coordinators_ready) -> Iterator[Peers]:
    both = Peers(oracle, shim_secured)
    both.reset()
    yield both
    both.reset()


@pytest.fixture
def group() -> str:
    return f"cg-{uuid.uuid4().hex[:8]}"


def group_acl(name: str, operation: int):
    return acl(rtype=GROUP, name=name, pattern=PREFIXED, principal=ANONYMOUS, operation=operation, permission=ALLOW)


class Transcript:
    """One broker's answers to a script, with member ids relabelled M0, M1, ... in order of appearance."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.wires: dict[str, Wire] = {}
        self.answers: list[tuple[str, Any]] = []
        self.labels: dict[str, str] = {}

    def wire(self, name: str) -> Wire:
        if name not in self.wires:
            self.wires[name] = Wire(self.address, timeout=60.0)
        return self.wires[name]

    def relabel(self, tree: Any) -> Any:
        if isinstance(tree, dict):
            out = {}
            for key, value in tree.items():
                if key in ("member_id", "leader") and isinstance(value, str) and value:
                    out[key] = self.labels.setdefault(value, f"M{len(self.labels)}")
                else:
                    out[key] = self.relabel(value)
            return out
        if isinstance(tree, list):
            return [self.relabel(v) for v in tree]
        return tree

    def tree(self, answer: Answer) -> Any:
        tree = self.relabel(normalise(answer.body.to_dict(), ("throttle_time_ms",)))
        if isinstance(tree.get("members"), list) and "leader" in tree:
            # The leader's list follows a Scala HashMap of the (random) member ids, so its order differs between any
            # two brokers, Kafka's own included: compared as a set.
            tree["members"] = sorted(tree["members"], key=lambda m: m["member_id"])
        return tree

    def record(self, what: str, answer: Answer) -> Answer:
        assert not answer.closed, f"{self.address} closed the connection on {what}"
        self.answers.append((what, self.tree(answer)))
        return answer

    def request(self, what: str, api_key: int, version: int, body: Any, on: str = "a") -> Answer:
        return self.record(what, self.wire(on).request(api_key, version, body))

    def send(self, api_key: int, version: int, body: Any, on: str) -> None:
        wire = self.wire(on)
        wire._cid += 1
        from kafka_shim.protocol.framing import encode_request
        wire.send_frame(encode_request(api_key, version, wire._cid, body, client_id="differential"))

    def receive(self, what: str, api_key: int, version: int, on: str) -> Answer:
        return self.record(what, self.wire(on).read_answer(api_key, version))

    def close(self) -> None:
        for wire in self.wires.values():
            wire.close()


def compare(peers: Peers, script: Callable[[Transcript], None]) -> list[tuple[str, Any]]:
    kafka, shim = Transcript(peers.oracle.plaintext), Transcript(peers.shim_address)
    try:
        script(kafka)
        script(shim)
    finally:
        kafka.close()
        shim.close()
    assert [w for w, _ in kafka.answers] == [w for w, _ in shim.answers]
    lines = []
    for (what, k), (_, s) in zip(kafka.answers, shim.answers, strict=True):
        lines += [f"{what}: {line}" for line in field_diff(k, s)]
    assert not lines, "Kafka and kafka-shim disagree:\n  " + "\n  ".join(lines)
    return kafka.answers


def join_body(version: int, group: str, member: str = "", *, instance: str | None = None, session: int = 10000,
              protocol_type: str = "consumer", protocols: list | None = None) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=20000, member_id=member,
                            group_instance_id=instance, protocol_type=protocol_type,
                            protocols=protocols if protocols is not None else [_Protocol(name="range", metadata=subscription("t"))],
                            reason=None)


def sync_body(version: int, group: str, generation: int, member: str, assignments: dict[str, bytes],
              instance: str | None = None, protocol_type: str | None = "consumer",
              protocol_name: str | None = "range") -> SyncGroupRequest:
    return SyncGroupRequest(group_id=group, generation_id=generation, member_id=member, group_instance_id=instance,
                            protocol_type=protocol_type, protocol_name=protocol_name,
                            assignments=[_Assignment(member_id=m, assignment=a) for m, a in assignments.items()])


def versions(join_version: int) -> tuple[int, int, int]:
    """Sync, Heartbeat and LeaveGroup versions a client speaking this JoinGroup version would use."""
    return min(join_version, 5), min(join_version, 4), min(join_version, 5)


@pytest.mark.parametrize("version", range(10))
def test_member_lifecycle(peers, group, version) -> None:
    peers.grant(group_acl(group, READ))
    sv, hv, lv = versions(version)

    def script(t: Transcript) -> None:
        answer = t.request("join", JOIN, version, join_body(version, group))
        if answer.body.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            answer = t.request("join with id", JOIN, version, join_body(version, group, answer.body.member_id))
        member, generation = answer.body.member_id, answer.body.generation_id
        t.request("sync", SYNC, sv, sync_body(sv, group, generation, member, {member: b"assignment"}))
        t.request("heartbeat", HEARTBEAT, hv, HeartbeatRequest(group_id=group, generation_id=generation, member_id=member))
        t.request("heartbeat old generation", HEARTBEAT, hv,
                  HeartbeatRequest(group_id=group, generation_id=generation + 1, member_id=member))
        t.request("heartbeat unknown member", HEARTBEAT, hv,
                  HeartbeatRequest(group_id=group, generation_id=generation, member_id="ghost"))
        t.request("sync old generation", SYNC, sv, sync_body(sv, group, generation - 1, member, {}))
        t.request("sync again", SYNC, sv, sync_body(sv, group, generation, member, {}))
        t.request("join other protocol type", JOIN, version, join_body(version, group, protocol_type="connect"), on="b")
        t.request("join unshared protocol", JOIN, version,
                  join_body(version, group, protocols=[_Protocol(name="roundrobin", metadata=b"")]), on="b")
        if version >= 3:
            body = LeaveGroupRequest(group_id=group, members=[_Leaving(member_id=member), _Leaving(member_id="ghost")])
        else:
            body = LeaveGroupRequest(group_id=group, member_id=member)
        t.request("leave", LEAVE, lv, body)
        t.request("heartbeat after leave", HEARTBEAT, hv,
                  HeartbeatRequest(group_id=group, generation_id=generation, member_id=member))

    answers = compare(peers, script)
    assert answers[0][1]["error_code"] == (ErrorCode.MEMBER_ID_REQUIRED if version >= 4 else 0)


@pytest.mark.parametrize("version", range(10))
def test_second_member_triggers_a_rebalance(peers, group, version) -> None:
    peers.grant(group_acl(group, READ))
    sv, hv, _ = versions(version)

    def join(t: Transcript, on: str, member: str = "") -> Answer:
        answer = t.request(f"join {on}", JOIN, version, join_body(version, group, member), on=on)
        if answer.body.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            answer = t.request(f"join {on} with id", JOIN, version, join_body(version, group, answer.body.member_id), on=on)
        return answer

    def script(t: Transcript) -> None:
        first = join(t, "a")
        a, generation = first.body.member_id, first.body.generation_id
        t.request("sync a", SYNC, sv, sync_body(sv, group, generation, a, {a: b"all"}))
        # b's JoinGroup waits for a to rejoin; a learns of it from its heartbeat.
        probe = t.request("join b", JOIN, version, join_body(version, group), on="b") if version >= 4 else None
        b_id = probe.body.member_id if probe is not None else ""
        t.send(JOIN, version, join_body(version, group, b_id), on="b")
        deadline = time.monotonic() + 30
        while True:
            beat = t.wire("a").request(HEARTBEAT, hv, HeartbeatRequest(group_id=group, generation_id=generation, member_id=a))
            if beat.body.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
                t.record("heartbeat during rebalance", beat)
                break
            assert time.monotonic() < deadline, beat
            time.sleep(0.05)
        rejoined = t.request("join a again", JOIN, version, join_body(version, group, a), on="a")
        second = t.receive("join b answered", JOIN, version, on="b")
        b = second.body.member_id
        t.send(SYNC, sv, sync_body(sv, group, second.body.generation_id, b, {}), on="b")
        t.request("sync a as leader", SYNC, sv,
                  sync_body(sv, group, rejoined.body.generation_id, a, {a: b"half-a", b: b"half-b"}))
        t.receive("sync b answered", SYNC, sv, on="b")
        t.request("leave b", LEAVE, min(version, 5), LeaveGroupRequest(group_id=group, member_id=b) if version < 3 else
                  LeaveGroupRequest(group_id=group, members=[_Leaving(member_id=b)]), on="b")
        t.request("heartbeat a after b left", HEARTBEAT, hv,
                  HeartbeatRequest(group_id=group, generation_id=rejoined.body.generation_id, member_id=a))

    compare(peers, script)


@pytest.mark.parametrize("version", range(5, 10))
def test_static_member_rejoins_and_fences_its_old_id(peers, group, version) -> None:
    peers.grant(group_acl(group, READ))
    sv, hv, lv = versions(version)

    def script(t: Transcript) -> None:
        first = t.request("join static", JOIN, version, join_body(version, group, instance="static-1"))
        old, generation = first.body.member_id, first.body.generation_id
        t.request("sync", SYNC, sv, sync_body(sv, group, generation, old, {old: b"mine"}, instance="static-1"))
        again = t.request("restart", JOIN, version, join_body(version, group, instance="static-1"), on="b")
        new = again.body.member_id
        t.request("old id heartbeats", HEARTBEAT, hv, HeartbeatRequest(group_id=group, generation_id=generation,
                                                                         member_id=old, group_instance_id="static-1"))
        t.request("new id syncs", SYNC, sv, sync_body(sv, group, generation, new, {}, instance="static-1"), on="b")
        t.request("unknown instance heartbeats", HEARTBEAT, hv,
                  HeartbeatRequest(group_id=group, generation_id=generation, member_id=new, group_instance_id="other"))
        t.request("leave by instance", LEAVE, lv, LeaveGroupRequest(group_id=group, members=[
            _Leaving(member_id="", group_instance_id="static-1"), _Leaving(member_id="", group_instance_id="nobody")]))

    compare(peers, script)


@pytest.mark.parametrize("version", range(10))
def test_join_errors(peers, group, version) -> None:
    peers.grant(group_acl(group, READ))
    sv, hv, lv = versions(version)

    def script(t: Transcript) -> None:
        t.request("session timeout too short", JOIN, version, join_body(version, group, session=5999))
        t.request("session timeout too long", JOIN, version, join_body(version, group, session=1_800_001))
        t.request("unknown member of unknown group", JOIN, version, join_body(version, group + "-x", "ghost"))
        t.request("empty protocol type", JOIN, version, join_body(version, group + "-y", protocol_type=""))
        t.request("no protocols", JOIN, version, join_body(version, group + "-z", protocols=[]))
        t.request("sync unknown group", SYNC, sv, sync_body(sv, group + "-x", 1, "ghost", {}))
        t.request("heartbeat unknown group", HEARTBEAT, hv, HeartbeatRequest(group_id=group + "-x", generation_id=1,
                                                                              member_id="ghost"))
        body = (LeaveGroupRequest(group_id=group + "-x", members=[_Leaving(member_id="ghost"), _Leaving(
            member_id="", group_instance_id="i")]) if lv >= 3 else LeaveGroupRequest(group_id=group + "-x", member_id="ghost"))
        t.request("leave unknown group", LEAVE, lv, body)
        if sv >= 5:
            t.request("sync without protocol type", SYNC, sv, sync_body(sv, group, 1, "ghost", {}, protocol_type=None))
        if version >= 5:
            pending = t.request("new member", JOIN, version, join_body(version, group + "-p")).body.member_id
            t.request("pending member joins as static", JOIN, version,
                      join_body(version, group + "-p", pending, instance="static-p"))
            t.request("pending member joins", JOIN, version, join_body(version, group + "-p", pending))

    compare(peers, script)


@pytest.mark.parametrize("version", range(10))
def test_empty_group_id(peers, version) -> None:
    # Kafka refuses an ACL on an empty name: the wildcard grants the empty group id READ.
    peers.grant(acl(rtype=GROUP, name="*", pattern=PatternType.LITERAL, principal=ANONYMOUS, operation=READ,
                    permission=ALLOW))
    sv, hv, lv = versions(version)

    def script(t: Transcript) -> None:
        t.request("join", JOIN, version, join_body(version, ""))
        t.request("sync", SYNC, sv, sync_body(sv, "", 1, "m", {}))
        t.request("heartbeat", HEARTBEAT, hv, HeartbeatRequest(group_id="", generation_id=1, member_id="m"))
        t.request("leave", LEAVE, lv, LeaveGroupRequest(group_id="", member_id="m") if lv < 3 else
                  LeaveGroupRequest(group_id="", members=[_Leaving(member_id="m")]))

    compare(peers, script)


@pytest.mark.parametrize("version", range(10))
def test_denied_without_read_on_the_group(peers, group, version) -> None:
    peers.grant(group_acl(group, DESCRIBE))  # DESCRIBE is not READ
    sv, hv, lv = versions(version)

    def script(t: Transcript) -> None:
        t.request("join", JOIN, version, join_body(version, group))
        t.request("sync", SYNC, sv, sync_body(sv, group, 1, "m", {}))
        if sv >= 5:
            t.request("sync without protocol name (checked first)", SYNC, sv,
                      sync_body(sv, group, 1, "m", {}, protocol_name=None))
        t.request("heartbeat", HEARTBEAT, hv, HeartbeatRequest(group_id=group, generation_id=1, member_id="m"))
        t.request("leave", LEAVE, lv, LeaveGroupRequest(group_id=group, member_id="m") if lv < 3 else
                  LeaveGroupRequest(group_id=group, members=[_Leaving(member_id="m")]))

    answers = compare(peers, script)
    assert all(a["error_code"] in (ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
               for _, a in answers)


FIND_IGNORE = ("host", "port", "coordinators.*.host", "coordinators.*.port")


@pytest.mark.parametrize("version", range(7))
def test_find_coordinator_authorized_and_denied(peers, group, version) -> None:
    peers.grant(group_acl(group + "-ok", DESCRIBE),
                acl(rtype=TXN, name=group + "-tx-ok", pattern=PREFIXED, principal=ANONYMOUS, operation=DESCRIBE,
                    permission=ALLOW))
    cases = [(0, group + "-ok-1"), (0, group + "-secret")]
    if version >= 1:
        cases += [(1, group + "-tx-ok-1"), (1, group + "-tx-secret"), (2, group + "-ok-share"), (42, group + "-ok-2")]
    for key_type, key in cases:
        if version >= 4:
            body = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key, group + "-secret-2", key])
        else:
            body = FindCoordinatorRequest(key=key, key_type=key_type)
        kafka, shim = peers.both(FIND, version, body)
        diff = [line for line in field_diff(normalise(kafka.body.to_dict(), ("throttle_time_ms", *FIND_IGNORE)),
                                            normalise(shim.body.to_dict(), ("throttle_time_ms", *FIND_IGNORE)))]
        assert not diff, f"FindCoordinator v{version} key type {key_type}:\n  " + "\n  ".join(diff)


def test_silent_member_expires_at_its_session_timeout(peers, group) -> None:
    """Two members; one stops heartbeating. The other's heartbeats turn to 27 when the silent one's session timeout
    (6 s, the minimum) ends, on both brokers at about the same time, and the survivor rebalances alone."""
    peers.grant(group_acl(group, READ))
    version, session = 5, 6000
    elapsed: dict[tuple[str, int], float] = {}

    def join(t: Transcript, on: str, member: str = "") -> JoinGroupRequest:
        return JoinGroupRequest(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=20000, member_id=member,
                                protocol_type="consumer",
                                protocols=[_Protocol(name="range", metadata=subscription("t"))])

    def beat(t: Transcript, on: str, member: str, generation: int) -> int:
        return t.wire(on).request(HEARTBEAT, 3, HeartbeatRequest(group_id=group, generation_id=generation,
                                                                  member_id=member)).body.error_code

    def script(t: Transcript) -> None:
        a = t.request("join a", JOIN, version, join(t, "a")).body.member_id
        first = t.request("join a with id", JOIN, version, join(t, "a", a))
        t.request("sync a", SYNC, 3, sync_body(3, group, first.body.generation_id, a, {a: b"all"}))
        b = t.request("join b", JOIN, version, join(t, "b"), on="b").body.member_id
        t.send(JOIN, version, join(t, "b", b), on="b")
        deadline = time.monotonic() + 30
        while beat(t, "a", a, first.body.generation_id) != ErrorCode.REBALANCE_IN_PROGRESS:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        rejoined = t.request("join a again", JOIN, version, join(t, "a", a))
        generation = t.receive("join b answered", JOIN, version, on="b").body.generation_id
        t.send(SYNC, 3, sync_body(3, group, generation, b, {}), on="b")
        t.request("sync a", SYNC, 3, sync_body(3, group, rejoined.body.generation_id, a, {a: b"1", b: b"2"}))
        t.receive("sync b", SYNC, 3, on="b")
        silent_from = time.monotonic()  # a's session runs from its SyncGroup answer
        while (code := beat(t, "b", b, generation)) == ErrorCode.NONE:
            assert time.monotonic() - silent_from < 60, "the silent member was never expired"
            time.sleep(0.1)
        elapsed[t.address] = time.monotonic() - silent_from
        assert code == ErrorCode.REBALANCE_IN_PROGRESS
        alone = t.request("b rejoins alone", JOIN, version, join(t, "b", b), on="b")
        assert [m.member_id for m in alone.body.members] == [b]

    compare(peers, script)
    kafka, shim = elapsed[peers.oracle.plaintext], elapsed[peers.shim_address]
    for took in (kafka, shim):
        assert session / 1000 - 0.5 <= took <= session / 1000 + 5, elapsed
    assert abs(kafka - shim) < 2.0, elapsed


@pytest.mark.parametrize(("first", "second"), [
    (["range", "roundrobin"], ["roundrobin", "range"]),
    (["cooperative-sticky", "range"], ["range", "cooperative-sticky"]),
    (["sticky", "roundrobin", "range"], ["range", "sticky"]),
])
def test_protocol_vote_and_ties(peers, group, first, second) -> None:
    """Each member votes for its first protocol that every member supports; a tie goes the way Kafka's vote map
    (a Scala immutable HashMap) iterates."""
    peers.grant(group_acl(group, READ))

    def join(member: str, names: list[str]) -> JoinGroupRequest:
        return join_body(5, group, member, protocols=[_Protocol(name=n, metadata=subscription("t")) for n in names])

    def script(t: Transcript) -> None:
        a = t.request("join a", JOIN, 5, join("", first)).body.member_id
        one = t.request("join a with id", JOIN, 5, join(a, first))
        t.request("sync a", SYNC, 3, sync_body(3, group, one.body.generation_id, a, {a: b""}))
        b = t.request("join b", JOIN, 5, join("", second), on="b").body.member_id
        t.send(JOIN, 5, join(b, second), on="b")
        deadline = time.monotonic() + 30
        while t.wire("a").request(HEARTBEAT, 3, HeartbeatRequest(group_id=group, generation_id=one.body.generation_id,
                                                                 member_id=a)).body.error_code == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        t.request("join a again", JOIN, 5, join(a, first))
        t.receive("join b answered", JOIN, 5, on="b")

    answers = compare(peers, script)
    assert answers[-1][1]["protocol_name"] in set(first) & set(second)


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout(peers, group) -> None:
    """The leader rejoins a Stable group; the follower keeps heartbeating (27) but never rejoins. When the rebalance
    timeout (3 s, the largest of the members') passes, the rebalance completes without it and its next heartbeat is
    25, on both brokers at about the same time."""
    peers.grant(group_acl(group, READ))
    rebalance_ms = 3000
    took: dict[tuple[str, int], float] = {}

    def join(member: str = "") -> JoinGroupRequest:
        return JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=rebalance_ms,
                                member_id=member, protocol_type="consumer",
                                protocols=[_Protocol(name="range", metadata=subscription("t"))])

    def beat(t: Transcript, member: str, generation: int) -> int:
        return t.wire("b").request(HEARTBEAT, 3, HeartbeatRequest(group_id=group, generation_id=generation,
                                                                  member_id=member)).body.error_code

    def script(t: Transcript) -> None:
        a = t.request("join a", JOIN, 5, join()).body.member_id
        one = t.request("join a with id", JOIN, 5, join(a))
        t.request("sync a", SYNC, 3, sync_body(3, group, one.body.generation_id, a, {}))
        b = t.request("join b", JOIN, 5, join(), on="b").body.member_id
        t.send(JOIN, 5, join(b), on="b")
        deadline = time.monotonic() + 30
        while t.wire("a").request(HEARTBEAT, 3, HeartbeatRequest(group_id=group, generation_id=one.body.generation_id,
                                                                 member_id=a)).body.error_code == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        two = t.request("join a again", JOIN, 5, join(a))
        t.receive("join b answered", JOIN, 5, on="b")
        generation = two.body.generation_id
        t.send(SYNC, 3, sync_body(3, group, generation, b, {}), on="b")
        t.request("sync a", SYNC, 3, sync_body(3, group, generation, a, {}))
        t.receive("sync b", SYNC, 3, on="b")
        started = time.monotonic()
        t.send(JOIN, 5, join(a), on="a")  # the leader rejoins: a rebalance b will not take part in
        while (code := beat(t, b, generation)) == ErrorCode.NONE:  # until the broker has taken a's JoinGroup
            assert time.monotonic() - started < 30
            time.sleep(0.05)
        codes = []
        while code == ErrorCode.REBALANCE_IN_PROGRESS and time.monotonic() - started < 60:
            codes.append(code)
            time.sleep(0.2)
            code = beat(t, b, generation)
        t.receive("join a answered without b", JOIN, 5, on="a")
        took[t.address] = time.monotonic() - started
        assert codes and code == ErrorCode.UNKNOWN_MEMBER_ID, (codes, code)

    answers = compare(peers, script)
    assert [m["member_id"] for m in answers[-1][1]["members"]] == [answers[-1][1]["member_id"]]
    for elapsed in took.values():
        assert rebalance_ms / 1000 - 0.3 <= elapsed <= rebalance_ms / 1000 + 5, took
    assert abs(took[peers.oracle.plaintext] - took[peers.shim_address]) < 2.0, took


def _unanswered(t: Transcript, what: str, api_key: int, version: int, body: Any, on: str) -> None:
    """A request Kafka never answers (kafka-shim closes the connection instead): recorded as such on both sides."""
    wire = t.wires[on] = Wire(t.address, timeout=5.0)  # the connection is Kafka's to hang: nothing else goes on it
    try:
        answer = wire.request(api_key, version, body)
        outcome = "closed" if answer.closed else t.tree(answer)
    except TimeoutError:
        outcome = "closed"
    t.answers.append((what, {"no answer": outcome}))


def _describe(t: Transcript, what: str, group: str) -> list[str]:
    """DescribeGroups, its members compared as a set: both coordinators list them in a hash map's order of the
    (random) member ids."""
    answer = t.request(what, ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[group], include_authorized_operations=False),
                       on="admin")
    t.answers[-1][1]["groups"][0]["members"].sort(key=lambda m: m["member_id"])
    return [m.member_id for m in answer.body.groups[0].members]


# ConsumerProtocolSubscription bytes that Kafka's generated reader fails on with a RuntimeException (five topics
# announced, no byte left): the old coordinator's computeSubscribedTopics catches only SchemaException.
_UNREADABLE = struct.pack(">hi", 0, 5)


def test_a_subscription_kafkas_reader_throws_on_leaves_the_group_rebalancing(peers, group, group_protocols) -> None:
    """The join completes in Kafka's timer (a new group's initial delay): the generation moves on, the group stays
    PreparingRebalance, and no JoinGroup of it is answered (the new coordinator does not complete a rebalance that
    started from Empty on a join, and no timer is left)."""
    peers.grant(group_acl(group, READ))
    peers.grant(group_acl(group, DESCRIBE))

    def script(t: Transcript) -> None:
        _unanswered(t, "join with an unreadable subscription", JOIN, 3,
                    join_body(3, group, protocols=[_Protocol(name="range", metadata=_UNREADABLE)]), on="a")
        deadline = time.monotonic() + 30
        while True:  # the failed completion runs on Kafka's timer, a moment after the join
            first = _describe(t, "describe after the failed join", group)
            if t.answers[-1][1]["groups"][0]["group_state"] == "PreparingRebalance" or time.monotonic() > deadline:
                break
            t.answers.pop()
            time.sleep(0.2)
        _unanswered(t, "a second member's join", JOIN, 3, join_body(3, group), on="b")
        for generation in (0, 1):
            t.request(f"heartbeat at generation {generation}", HEARTBEAT, 3,
                      HeartbeatRequest(group_id=group, generation_id=generation, member_id=first[0]), on="admin")
        t.request("sync", SYNC, 3, sync_body(3, group, 1, first[0], {}), on="admin")
        t.request("the first member leaves", LEAVE, 3, LeaveGroupRequest(group_id=group, members=[_Leaving(member_id=first[0])]),
                  on="admin")
        _describe(t, "describe after the leave", group)

    answers = compare(peers, script)
    assert answers[1][1]["groups"][0]["group_state"] == "PreparingRebalance", answers[1]


def test_a_rejoin_with_a_subscription_kafkas_reader_throws_on(peers, group, group_protocols) -> None:
    """The join completes while Kafka handles the member's own rejoin: that JoinGroup gets UNKNOWN_SERVER_ERROR. The
    old coordinator then never answers a join of the group; the new one completes the rebalance at the next join."""
    peers.grant(group_acl(group, READ))
    peers.grant(group_acl(group, DESCRIBE))

    def script(t: Transcript) -> None:
        answer = t.request("join", JOIN, 5, join_body(5, group))
        member = answer.body.member_id
        answer = t.request("join with id", JOIN, 5, join_body(5, group, member))
        t.request("sync", SYNC, 5, sync_body(5, group, answer.body.generation_id, member, {member: b"a"}))
        t.request("rejoin with an unreadable subscription", JOIN, 5,
                  join_body(5, group, member, protocols=[_Protocol(name="range", metadata=_UNREADABLE)]))
        _describe(t, "describe", group)
        _unanswered(t, "the member joins again", JOIN, 5, join_body(5, group, member), on="b")

    answers = compare(peers, script)
    assert answers[3][1]["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR, answers[3]


def _pending(t: Transcript, what: str, on: str) -> None:
    """The answer to a JoinGroup sent earlier on ``on``, or "closed" when none comes (Kafka's old coordinator never
    answers it; kafka-shim closes the connection)."""
    wire = t.wires[on]
    wire.sock.settimeout(5.0)
    try:
        answer = wire.read_answer(JOIN, 5)
        outcome = "closed" if answer.closed else t.tree(answer)
    except TimeoutError:
        outcome = "closed"
    t.answers.append((what, {"pending join": outcome}))


def _join_pending(t: Transcript, group: str, member: str, on: str) -> None:
    t.send(JOIN, 5, join_body(5, group, member), on=on)


def _describe_once_rebalancing(t: Transcript, what: str, group: str) -> None:
    """DescribeGroups until the group is PreparingRebalance (a JoinGroup sent on another connection has been taken),
    recorded once: the last answer, whatever the state, when 30 s pass first."""
    deadline = time.monotonic() + 30
    while True:
        _describe(t, what, group)
        if t.answers[-1][1]["groups"][0]["group_state"] == "PreparingRebalance" or time.monotonic() > deadline:
            return
        t.answers.pop()
        time.sleep(0.1)


def _b_waits_while_a_rejoins_unreadable(t: Transcript, group: str) -> tuple[str, str]:
    """a alone and Stable, then b joins (the group rebalances, b's JoinGroup waits for a), then a rejoins with a
    subscription Kafka's reader throws on: the join phase fails. The member ids of a and b."""
    a = t.request("join a", JOIN, 5, join_body(5, group)).body.member_id
    answer = t.request("join a with id", JOIN, 5, join_body(5, group, a))
    t.request("sync a", SYNC, 5, sync_body(5, group, answer.body.generation_id, a, {a: b"a"}))
    b = t.request("join b", JOIN, 5, join_body(5, group), on="b").body.member_id
    _join_pending(t, group, b, on="b")  # a new member: the group rebalances and b waits for a
    _describe_once_rebalancing(t, "describe while b waits", group)
    t.request("a rejoins with an unreadable subscription", JOIN, 5,
              join_body(5, group, a, protocols=[_Protocol(name="range", metadata=_UNREADABLE)]))
    return a, b


def test_a_failed_rebalance_and_the_other_members_pending_joins(peers, group, group_protocols) -> None:
    """A rejoin with unreadable metadata completes the join phase while another member's JoinGroup waits: Kafka's new
    coordinator keeps that join waiting and answers it when the member's next, readable, join completes the
    rebalance; the old one answers neither."""
    peers.grant(group_acl(group, READ))
    peers.grant(group_acl(group, DESCRIBE))

    def script(t: Transcript) -> None:
        a, _ = _b_waits_while_a_rejoins_unreadable(t, group)
        _describe(t, "describe after the failed completion", group)
        _unanswered(t, "a rejoins with a readable subscription", JOIN, 5, join_body(5, group, a), on="c")
        _pending(t, "b's join", on="b")
        _describe(t, "describe at the end", group)

    answers = compare(peers, script)
    assert answers[5][1]["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR, answers[5]
    if group_protocols != "classic":
        assert answers[7][1]["no answer"]["generation_id"] == 3, answers[7]


def test_a_leave_naming_two_members_of_a_rebalancing_group(peers, group, group_protocols) -> None:
    """Of three members of a Stable group, the leader and one other have rejoined when a LeaveGroup names the third
    and the other. Kafka's old coordinator removes them one at a time: the first removal completes the join phase
    (both rejoined members answered), the second starts another rebalance. The new one removes both, then completes
    the join phase once, with the leader alone (the other's join answered UNKNOWN_MEMBER_ID)."""
    peers.grant(group_acl(group, READ))
    peers.grant(group_acl(group, DESCRIBE))

    def script(t: Transcript) -> None:
        ids, generation = {}, 0
        for count, name in enumerate(("a", "b", "c")):  # one member at a time, each rebalance with all so far
            ids[name] = t.request(f"join {name}", JOIN, 5, join_body(5, group), on=name).body.member_id
            joined = ("a", "b", "c")[:count + 1]
            _join_pending(t, group, ids[name], on=name)
            if count:  # the others rejoin once the new member's join has started the rebalance: taken before it, in
                # Stable with the same protocols, a rejoin would be answered at once (each connection is read apart)
                _describe_once_rebalancing(t, f"describe as {name} arrives", group)
            for member in joined[:-1]:
                _join_pending(t, group, ids[member], on=member)
            answers = {member: t.receive(f"{member}'s join as {name} arrives", JOIN, 5, on=member).body for member in joined}
            generation, leader = answers[name].generation_id, answers[name].leader
            for member in sorted(joined, key=lambda m: ids[m] != leader):  # the leader first: the others answered at once
                t.request(f"sync {member} as {name} arrives", SYNC, 5,
                          sync_body(5, group, generation, ids[member],
                                    {m: b"x" for m in ids.values()} if ids[member] == leader else {}), on=member)
        order = sorted(("a", "b", "c"), key=lambda m: ids[m] != leader)
        leader_name, rejoined, absent = order
        _join_pending(t, group, ids[leader_name], on=leader_name)  # the leader's rejoin starts a rebalance
        # before it, the other's rejoin would be answered at once (Stable, same protocols)
        _describe_once_rebalancing(t, "describe before the leave", group)
        _join_pending(t, group, ids[rejoined], on=rejoined)
        _describe(t, "describe with two members rejoined", group)
        t.request("leave", LEAVE, 3, LeaveGroupRequest(group_id=group, members=[_Leaving(member_id=ids[absent]),
                                                                             _Leaving(member_id=ids[rejoined])]),
                  on="admin")
        _pending(t, "the rejoined member's join", on=rejoined)
        _pending(t, "the leader's join", on=leader_name)
        _describe(t, "describe after the leave", group)

    answers = compare(peers, script)
    final = answers[-1][1]["groups"][0]
    assert final["group_state"] == ("PreparingRebalance" if group_protocols == "classic" else "CompletingRebalance"), final


_TWICE = [_Protocol(name="range", metadata=subscription("t")), _Protocol(name="range", metadata=subscription("t"))]


def test_a_leave_that_leaves_no_protocol_every_member_supports(peers, group, group_protocols) -> None:
    """A member listing ``range`` twice counts it twice: once the static member beside it leaves, the count (2) is not
    the group's size (1), no protocol is a candidate and the join completion's selectProtocol throws (vote's
    IllegalArgumentException). The LeaveGroup is answered UNKNOWN_SERVER_ERROR (the old coordinator's handleError, the
    new one's failed write operation) but its member stays gone, and the generation has moved on. ``range`` counts 2
    for 1 member now: b's rejoin is INCONSISTENT_GROUP_PROTOCOL, which the new coordinator (unlike the old one) does
    not follow with a try at completing the join phase. When b leaves too, the new coordinator completes it (the group
    Empty, the generation on again), as a new member's join shows; the old one answers no join of the group again."""
    peers.grant(group_acl(group, READ))
    peers.grant(group_acl(group, DESCRIBE))

    def script(t: Transcript) -> None:
        a = t.request("join a (static)", JOIN, 5, join_body(5, group, instance="inst-a"))
        t.request("sync a", SYNC, 5, sync_body(5, group, a.body.generation_id, a.body.member_id,
                                               {a.body.member_id: b"a"}, instance="inst-a"))
        b = t.request("join b naming range twice", JOIN, 5, join_body(5, group, protocols=_TWICE), on="b").body.member_id
        t.send(JOIN, 5, join_body(5, group, b, protocols=_TWICE), on="b")  # a new member: the group rebalances
        _describe_once_rebalancing(t, "describe while b waits", group)
        t.request("a leaves", LEAVE, 3, LeaveGroupRequest(group_id=group, members=[_Leaving(member_id=a.body.member_id)]),
                  on="admin")
        _describe(t, "describe after the failed completion", group)
        _unanswered(t, "b rejoins naming range once", JOIN, 5, join_body(5, group, b), on="c")
        _describe(t, "describe after b's rejoin", group)
        t.request("b leaves", LEAVE, 3, LeaveGroupRequest(group_id=group, members=[_Leaving(member_id=b)]), on="admin")
        _pending(t, "b's first join", on="b")
        _describe(t, "describe after b left", group)
        _unanswered(t, "a new member joins", JOIN, 5, join_body(5, group, instance="inst-c"), on="d")
        _describe(t, "describe at the end", group)

    answers = compare(peers, script)
    assert answers[4][1]["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR, answers[4]
    assert answers[6][1]["no answer"]["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL, answers[6]
    if group_protocols != "classic":
        assert answers[11][1]["no answer"]["generation_id"] == 4, answers[11]


def test_a_leave_answers_a_join_a_failed_rebalance_left_waiting(peers, group, group_protocols) -> None:
    """A rejoin with unreadable metadata fails the join phase while b's JoinGroup waits: b's join stays pending on
    both coordinators, and when b leaves, the removal answers it UNKNOWN_MEMBER_ID. The old coordinator then has no
    delayed join to complete (the LeaveGroup succeeds); the new one completes the join phase with a alone, whose
    unreadable subscription fails it again: that LeaveGroup is UNKNOWN_SERVER_ERROR."""
    peers.grant(group_acl(group, READ))
    peers.grant(group_acl(group, DESCRIBE))

    def script(t: Transcript) -> None:
        _, b = _b_waits_while_a_rejoins_unreadable(t, group)
        t.request("b leaves", LEAVE, 3, LeaveGroupRequest(group_id=group, members=[_Leaving(member_id=b)]), on="admin")
        _pending(t, "b's join", on="b")
        _describe(t, "describe at the end", group)

    answers = compare(peers, script)
    assert answers[5][1]["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR, answers[5]
    assert answers[7][1]["pending join"]["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID, answers[7]


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_new_member_beside_one_that_never_synced_and_a_pending_one(peers, group, when) -> None:
    """a joins alone at v0 (its rebalance timeout is its session timeout, 6 s) and never syncs; b is told its member id
    (79) and stays pending for its 10 s session. c then joins at v0 (rebalance timeout 20 s):

    - ``before`` a's session ends (the group CompletingRebalance at generation 1): c's join starts a rebalance that a's
      removal at 6 s cannot complete while b is pending; b's expiry completes it at about 10 s, c alone, generation 2.
    - ``after`` it (the group Empty: a's removal completed an empty rebalance at once, b pending or not, generation 2):
      c starts a new generation, 3, at once.

    A probe that sends each request to Kafka and only then to kafka-shim saw "2 on Kafka, 3 on kafka-shim" here: Kafka
    answered c's join at b's expiry, so kafka-shim got it after a had gone."""
    peers.grant(group_acl(group, READ))
    peers.grant(group_acl(group, DESCRIBE))
    took: dict[tuple[str, int], float] = {}

    def script(t: Transcript) -> None:
        t.request("a joins at v0", JOIN, 0, join_body(0, group, session=6000))
        t.request("b is told its member id", JOIN, 5, join_body(5, group, session=10000), on="b")
        pending_from = time.monotonic()
        deadline = pending_from + 60
        while True:
            _describe(t, f"describe {when} a's session ends", group)
            state = t.answers[-1][1]["groups"][0]["group_state"]
            # Kafka's new coordinator describes committed state: right after a's join the group may still be Dead
            # there (its records not yet committed on a busy machine), so "before" waits until it is visible.
            if (when == "before" and state != "Dead") or state == "Empty" or time.monotonic() > deadline:
                break
            t.answers.pop()
            time.sleep(0.1)
        t.request("c joins at v0", JOIN, 0, join_body(0, group, session=20000), on="c")
        took[t.address] = time.monotonic() - pending_from
        _describe(t, "describe at the end", group)

    answers = compare(peers, script)
    assert answers[3][1]["generation_id"] == (2 if when == "before" else 3), answers[3]
    if when == "before":
        # Answered when b's pending member expired (10 s), not at a's removal (6 s) nor at c's rebalance timeout (20 s):
        # bounds between those, wide enough for a busy machine.
        for elapsed in took.values():
            assert 10 - 0.5 <= elapsed < 19, took

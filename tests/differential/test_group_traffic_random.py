"""Random consumer-group traffic under random ACLs, on Apache Kafka 3.9 and on kafka-shim: every answer must agree.

Each example grants the same random group ACLs to User:ANONYMOUS on both brokers, then runs random steps:

- members (raw protocol clients, as the super user so that they always may) join a group (JoinGroup v1-9, with the
  member-id round of v4+, every current member rejoining once the rebalance has begun, then SyncGroup with the
  leader's assignments) or leave it (LeaveGroup v0-5, the others left to rebalance);
- User:ANONYMOUS commits offsets (OffsetCommit v2-8, as a "simple" consumer with generation -1, or as one of the
  members), fetches them (OffsetFetch v1-7), describes groups (DescribeGroups v0-5, authorized operations asked or
  not), lists them (ListGroups v0-5 with states and types filters) and deletes them (DeleteGroups v0-2);

and every answer is compared after each step. Group ids come from a small pool under a fixed prefix (and the empty id)
so that Kafka's hash orders replay exactly; both brokers are this module's own, so ListGroups shows only this test's
groups. Normalised: member ids (each broker makes its own; they are mapped to the member's slot) and, as both brokers
order members by those ids' hashes, the order of members in DescribeGroups and JoinGroup answers.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from kafka_shim.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_group_admin_clients import needs_group_protocol
from tests.differential.test_topic_sets_random import USERS, Brokers
from tests.support.compare import differences
from tests.support.peers import RealKafka, start_real_kafka, stop_real_kafka
from tests.support.wire import Answer, Wire

GROUP, TOPIC, CLUSTER = ResourceType.GROUP, ResourceType.TOPIC, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALL, READ, DELETE, DESCRIBE = AclOperation.ALL, AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE

PREFIX = "rg-"
TOPIC_NAME = "rg-topic"
GROUPS = ["+a", "+b", "+c", "+d", "+e", "+ab", ""]
SLOTS = ["m1", "m2", "m3", "m4"]
STATES = ["Empty", "Stable", "PreparingRebalance", "CompletingRebalance", "Dead", "stable", "bogus"]
TYPES = ["classic", "consumer", "CLASSIC", "share", "bogus"]
SESSION_MS, REBALANCE_MS = 300000, 300000
# The SyncGroup version a Java consumer pairs with each JoinGroup version.
SYNC_FOR_JOIN = {1: 0, 3: 1, 4: 2, 5: 3, 7: 4, 9: 5}
_MEMBER_ID = re.compile(r"differential-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def group_name(token: str) -> str:
    return PREFIX + token[1:] if token.startswith("+") else token


# -- the program -------------------------------------------------------------------------------------------------------
group_token = st.sampled_from(GROUPS)
group_acl = st.tuples(
    st.just(GROUP),
    st.one_of(st.tuples(st.sampled_from([*GROUPS[:-1], "*"]), st.just(LITERAL)), st.tuples(st.sampled_from(["+", "+a", "r"]), st.just(PREFIXED))),
    st.sampled_from([READ, DESCRIBE, DELETE, ALL]),
    st.sampled_from([ALLOW, ALLOW, ALLOW, DENY]),
)
cluster_acl = st.tuples(st.just(CLUSTER), st.just(("kafka-cluster", LITERAL)), st.sampled_from([DESCRIBE, ALL]), st.sampled_from([ALLOW, DENY]))
BROAD = (GROUP, ("+", PREFIXED), ALL, ALLOW)
acls = st.tuples(st.lists(st.one_of(group_acl, group_acl, group_acl, cluster_acl), max_size=6), st.sampled_from([True, True, False])).map(
    lambda drawn: drawn[0] + [BROAD] if drawn[1] else drawn[0])

step = st.one_of(
    st.tuples(st.just("join"), st.sampled_from([*GROUPS[:3], ""]), st.sampled_from(SLOTS), st.sampled_from([1, 3, 4, 5, 7, 9])),
    st.tuples(st.just("join"), st.sampled_from(GROUPS[:2]), st.sampled_from(SLOTS), st.sampled_from([5, 9])),
    st.tuples(st.just("join"), st.just("+a"), st.sampled_from(SLOTS), st.sampled_from([3, 4, 7, 9])),
    st.tuples(st.just("leave"), st.sampled_from(SLOTS), st.integers(0, 5)),
    st.tuples(st.just("commit"), group_token, st.sampled_from([None, *SLOTS]), st.integers(2, 8)),
    st.tuples(st.just("fetch"), group_token, st.integers(1, 7), st.booleans()),
    st.tuples(st.just("describe"), st.lists(group_token, min_size=1, max_size=5), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("list"), st.integers(0, 5), st.lists(st.sampled_from(STATES), max_size=2), st.lists(st.sampled_from(TYPES), max_size=2)),
    st.tuples(st.just("delete"), st.lists(group_token, min_size=1, max_size=6), st.integers(0, 2)),
)
program = st.fixed_dictionaries({"acls": acls, "steps": st.lists(step, min_size=1, max_size=14)})


# -- the brokers -------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def oracle_groups(tmp_path_factory) -> Iterator[RealKafka]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-random-groups"))
    yield kafka
    stop_real_kafka(kafka)


def shim_like_the_oracle() -> EmbeddedBroker:
    return EmbeddedBroker(BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "node.id": "1",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";",
        "auto.create.topics.enable": "false", "offsets.topic.replication.factor": "1", "group.initial.rebalance.delay.ms": "0",
    }))


@dataclass
class Member:
    wire: Wire
    group: str
    member_id: str
    generation: int
    version: int


class Side:
    """One broker's members (the super user's connections) and the member ids it made, by slot."""

    def __init__(self, name: str, admin: tuple[str, int]) -> None:
        self.name, self.admin = name, admin
        self.members: dict[str, Member] = {}
        self.slots: dict[str, str] = {}  # member id -> slot

    def connect(self) -> Wire:
        wire = Wire(self.admin, timeout=120)
        wire.sasl_plain("admin", USERS["admin"])
        return wire

    def request(self, api_key: int, version: int, body) -> Answer:
        with self.connect() as wire:
            return wire.request(api_key, version, body)

    def state_of(self, group: str) -> str:
        answer = self.request(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[group]))
        return answer.body.groups[0].group_state

    def in_group(self, group: str) -> list[str]:
        return sorted(slot for slot, m in self.members.items() if m.group == group)


def _join_body(group: str, member_id: str, version: int, slot: str) -> JoinGroupRequest:
    metadata = b"\x00\x00\x00\x00\x00\x01\x00\x08rg-topic\x00\x00\x00\x00" + slot.encode()
    return JoinGroupRequest(group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS, member_id=member_id,
                            group_instance_id=None, protocol_type="consumer", reason=None,
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata),
                                       JoinGroupRequest.JoinGroupRequestProtocol(name="roundrobin", metadata=metadata)])


def _plain(answer: Answer, side: Side) -> Any:
    """The answer as a tree, member ids replaced by their slots, member lists sorted by them."""
    if answer.closed:
        return "closed"

    def walk(tree: Any) -> Any:
        if isinstance(tree, dict):
            out = {k: walk(v) for k, v in tree.items() if k != "throttle_time_ms"}
            if isinstance(out.get("members"), list):
                out["members"] = sorted(out["members"], key=repr)
            return out
        if isinstance(tree, list):
            return [walk(v) for v in tree]
        if isinstance(tree, str):
            return _MEMBER_ID.sub(lambda m: "member:" + side.slots.get(m.group(0), "?"), tree)
        return tree

    return walk(answer.body.to_dict())


class Run:
    def __init__(self, brokers: Brokers) -> None:
        self.brokers = brokers
        self.sides = (Side("Kafka", brokers.admin_addresses[0]), Side("kafka-shim", brokers.admin_addresses[1]))
        self.anonymous = (brokers.oracle.plaintext, brokers.shim_address)

    def agree(self, what: str, kafka: Any, shim: Any) -> None:
        diff = differences(Answer(False, 0, kafka), Answer(False, 0, shim)) if not isinstance(kafka, str) else (
            [] if kafka == shim else [f"Kafka {kafka} != kafka-shim {shim}"])
        if diff:
            raise AssertionError("\n  ".join([f"Kafka and kafka-shim disagree on {what}:", *diff, f"Kafka:      {kafka}", f"kafka-shim: {shim}"]))

    def as_anonymous(self, what: str, api_key: int, version: int, body) -> None:
        note(f"{what}: {body!r}")
        answers = []
        for address, side in zip(self.anonymous, self.sides, strict=True):
            with Wire(address) as wire:
                answers.append(_plain(wire.request(api_key, version, body), side))
        self.agree(what, *answers)

    # -- members -----------------------------------------------------------------------------------------------------
    def join(self, token: str, slot: str, version: int) -> None:
        group = group_name(token)
        note(f"{slot} joins {group!r} with JoinGroup v{version}")
        views = []
        for side in self.sides:
            if slot in side.members:
                return  # a member of some group already: no step (the same on both sides)
            views.append(self._join_on(side, group, slot, version))
        self.agree(f"{slot} joining {group!r} (JoinGroup v{version}, SyncGroup)", *views)

    def _join_on(self, side: Side, group: str, slot: str, version: int) -> list:
        wire = side.connect()
        seen: list = []
        member_id = ""
        if version >= 4:  # KIP-394: the first join only hands out a member id
            first = wire.request(ApiKey.JOIN_GROUP, version, _join_body(group, member_id, version, slot))
            if first.closed or first.body.error_code != ErrorCode.MEMBER_ID_REQUIRED:
                wire.close()
                return [("join refused", _plain(first, side))]
            member_id = first.body.member_id
            side.slots[member_id] = slot
            seen.append(("first join", _plain(first, side)))
        others = side.in_group(group)
        with ThreadPoolExecutor(max_workers=len(others) + 1) as pool:
            mine = pool.submit(wire.request, ApiKey.JOIN_GROUP, version, _join_body(group, member_id, version, slot))
            if others:  # they rejoin once the rebalance has begun, as their heartbeats would tell them
                deadline = time.monotonic() + 60
                while not mine.done() and side.state_of(group) != "PreparingRebalance":
                    assert time.monotonic() < deadline, f"{side.name}: {group} never began rebalancing"
                    time.sleep(0.02)
                if mine.done() and (mine.result().closed or mine.result().body.error_code != 0):
                    others = []
            rejoins = {o: pool.submit(self._rejoin, side, o) for o in others}
            answers = {slot: mine.result(), **{o: f.result() for o, f in rejoins.items()}}
        answer = answers[slot]
        if not answer.closed and answer.body.error_code == 0:
            side.slots[answer.body.member_id] = slot
        return seen + self._sync(side, group, answers, {slot: (wire, version)})

    def _rejoin(self, side: Side, slot: str) -> Answer:
        m = side.members[slot]
        return m.wire.request(ApiKey.JOIN_GROUP, m.version, _join_body(m.group, m.member_id, m.version, slot))

    def _sync(self, side: Side, group: str, joins: dict[str, Answer], new: dict[str, tuple[Wire, int]]) -> list:
        seen = [("join", slot, _plain(a, side)) for slot, a in sorted(joins.items())]
        ok = {slot: a for slot, a in joins.items() if not a.closed and a.body.error_code == 0}
        for slot, (wire, version) in new.items():
            if slot in ok:
                side.members[slot] = Member(wire, group, ok[slot].body.member_id, ok[slot].body.generation_id, version)
            else:
                wire.close()
        for slot in joins:
            if slot not in ok and slot in side.members and slot not in new:
                side.members.pop(slot).wire.close()
        for slot, a in ok.items():
            side.members[slot].generation = a.body.generation_id
        leader = next((slot for slot, a in ok.items() if a.body.leader == a.body.member_id), None)

        def sync(slot: str) -> Answer:
            m = side.members[slot]
            plan = []
            if slot == leader:
                plan = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=x.member_id, assignment=b"assigned-to-" + side.slots[x.member_id].encode())
                        for x in ok[slot].body.members]
            version = SYNC_FOR_JOIN[m.version]
            body = SyncGroupRequest(group_id=group, generation_id=m.generation, member_id=m.member_id, assignments=plan)
            if version >= 5:
                body.protocol_type, body.protocol_name = "consumer", ok[slot].body.protocol_name
            return m.wire.request(ApiKey.SYNC_GROUP, version, body)

        with ThreadPoolExecutor(max_workers=max(1, len(ok))) as pool:
            syncs = {slot: pool.submit(sync, slot) for slot in sorted(ok)}
            seen += [("sync", slot, _plain(f.result(), side)) for slot, f in syncs.items()]
        return seen

    def leave(self, slot: str, version: int) -> None:
        views = []
        for side in self.sides:
            m = side.members.get(slot)
            group = m.group if m else PREFIX + "a"
            member_id = m.member_id if m else "not-a-member"
            body = (LeaveGroupRequest(group_id=group, member_id=member_id) if version < 3 else
                    LeaveGroupRequest(group_id=group, members=[LeaveGroupRequest.MemberIdentity(member_id=member_id)]))
            note(f"{slot} leaves {group!r} with LeaveGroup v{version}")
            with side.connect() as wire:
                views.append(_plain(wire.request(ApiKey.LEAVE_GROUP, version, body), side))
            if m:
                side.members.pop(slot).wire.close()
        self.agree(f"{slot} leaving (LeaveGroup v{version})", *views)

    # -- User:ANONYMOUS --------------------------------------------------------------------------------------------------
    def commit(self, token: str, slot: str | None, version: int) -> None:
        group = group_name(token)
        views = []
        for address, side in zip(self.anonymous, self.sides, strict=True):
            m = side.members.get(slot) if slot else None
            generation, member_id = (m.generation, m.member_id) if m and m.group == group else (-1, "")
            body = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC_NAME, partitions=[
                                           OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=3 + p,
                                                                                            committed_leader_epoch=-1, committed_metadata="m")
                                           for p in (0, 1)])])
            note(f"OffsetCommit v{version} to {group!r} as {slot or 'a simple consumer'}")
            with Wire(address) as wire:
                views.append(_plain(wire.request(ApiKey.OFFSET_COMMIT, version, body), side))
        self.agree(f"OffsetCommit v{version} to {group!r}", *views)

    def fetch(self, token: str, version: int, every: bool) -> None:
        group = group_name(token)
        topics = None if every and version >= 2 else [OffsetFetchRequest.OffsetFetchRequestTopic(name=TOPIC_NAME, partition_indexes=[0, 1])]
        self.as_anonymous(f"OffsetFetch v{version} of {group!r}", ApiKey.OFFSET_FETCH, version,
                          OffsetFetchRequest(group_id=group, topics=topics, require_stable=False))

    def step(self, s: tuple) -> None:
        kind, *args = s
        if kind == "join":
            self.join(*args)
        elif kind == "leave":
            self.leave(*args)
        elif kind == "commit":
            self.commit(*args)
        elif kind == "fetch":
            self.fetch(*args)
        elif kind == "describe":
            tokens, version, include = args
            self.as_anonymous(f"DescribeGroups v{version}", ApiKey.DESCRIBE_GROUPS, version, DescribeGroupsRequest(
                groups=[group_name(t) for t in tokens], include_authorized_operations=include and version >= 3))
        elif kind == "list":
            version, states, types = args
            self.as_anonymous(f"ListGroups v{version}", ApiKey.LIST_GROUPS, version, ListGroupsRequest(
                states_filter=states if version >= 4 else [], types_filter=types if version >= 5 else []))
        elif kind == "delete":
            tokens, version = args
            self.as_anonymous(f"DeleteGroups v{version}", ApiKey.DELETE_GROUPS, version,
                              DeleteGroupsRequest(groups_names=[group_name(t) for t in tokens]))
        else:
            raise AssertionError(f"unknown step {kind}")

    def clean_up(self) -> None:
        """Every member leaves, the super user deletes every pool group; both brokers then hold none of them."""
        for slot in SLOTS:
            if any(slot in side.members for side in self.sides):
                for side in self.sides:
                    m = side.members.pop(slot, None)
                    if m:
                        m.wire.request(ApiKey.LEAVE_GROUP, 0, LeaveGroupRequest(group_id=m.group, member_id=m.member_id))
                        m.wire.close()
        names = [group_name(t) for t in GROUPS]
        for side in self.sides:
            side.request(ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=names))
            left = side.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=[]))
            assert not [g.group_id for g in left.body.groups if g.group_id in names], f"{side.name} kept groups: {left.body.groups}"
        self.brokers.reset()


def _acl(a: tuple) -> CreateAclsRequest.AclCreation:
    rtype, (name, pattern), operation, permission = a
    return CreateAclsRequest.AclCreation(resource_type=rtype, resource_name=group_name(name) if rtype == GROUP and name != "*" else name,
                                         resource_pattern_type=pattern, principal="User:ANONYMOUS", host="*", operation=operation,
                                         permission_type=permission)


# Every example may read and describe the topic it commits to.
TOPIC_RIGHTS = [CreateAclsRequest.AclCreation(resource_type=TOPIC, resource_name=TOPIC_NAME, resource_pattern_type=LITERAL,
                                              principal="User:ANONYMOUS", host="*", operation=op, permission_type=ALLOW)
                for op in (READ, DESCRIBE)]


def prepare(brokers: Brokers) -> None:
    """The topic offsets are committed to, and __consumer_offsets in place and loaded on both."""
    body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=TOPIC_NAME, num_partitions=2, replication_factor=1)],
                               timeout_ms=30000)
    brokers.as_admin(ApiKey.CREATE_TOPICS, 5, body)
    brokers.as_admin(ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["rg-probe"]))
    deadline = time.monotonic() + 120
    probes = [f"rg-probe-{i}" for i in range(200)]
    while True:
        kafka, shim = brokers.as_admin(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=probes))
        if all(g.error_code == 0 for a in (kafka, shim) for g in a.body.groups):
            return
        assert time.monotonic() < deadline, f"the coordinators never loaded: {kafka} / {shim}"
        time.sleep(0.1)


def check_random_group_traffic(kafka: RealKafka, shim: EmbeddedBroker, max_examples: int = 100, derandomize: bool = True) -> None:
    brokers = Brokers(kafka, shim)
    brokers.reset()
    prepare(brokers)

    @settings(max_examples=max_examples, deadline=None, derandomize=derandomize, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(program=program)
    def check(program) -> None:
        run = Run(brokers)
        try:
            brokers.grant(*TOPIC_RIGHTS, *(_acl(a) for a in program["acls"]))
            for s in program["steps"]:
                run.step(s)
        finally:
            run.clean_up()

    check()


def test_random_group_traffic_agrees(oracle_groups) -> None:
    with shim_like_the_oracle() as shim:
        needs_group_protocol(shim)
        check_random_group_traffic(oracle_groups, shim)

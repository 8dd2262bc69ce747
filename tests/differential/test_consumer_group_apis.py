"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) against Kafka 3.9, answer for answer.

By default (``group.coordinator.rebalance.protocols=classic``) both answer 35 before any ACL check. With
``classic,consumer`` (a second Kafka started for this module) a scripted sequence of heartbeats and describes, by
members with and without READ/DESCRIBE on the group, gets the same answers from both brokers, once member ids
(random UUIDs on both sides) and topic ids are replaced by labels. Static members with the ``range`` assignor make
the assignments deterministic on both sides; with ``uniform`` the sizes are compared.
"""

from __future__ import annotations

import random
import re
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.messages import (
    ApiVersionsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.groups.assignors import UNIFORM, AssignorError, MemberSpec, assign, kafka_member_order
from kafka_shim.shim.javacompat.java_hash import hash_set_order, java_string_hash
from kafka_shim.shim.javacompat.scala_set import kafka_uuid_hash
from kafka_shim.shim.javacompat.timeline_table import TimelineTableOrder
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import create_topic
from tests.support.compare import assert_same
from tests.support.fetch_peers import Peers
from tests.support.peers import RealKafka, start_real_kafka, stop_real_kafka
from tests.support.wire import Answer

HEARTBEAT, DESCRIBE, FIND_COORDINATOR = 68, 69, 10
OFFSETS_TOPIC = "__consumer_offsets"
GROUP_RT, READ, DESCRIBE_OP = 3, 3, 8
_TP = ConsumerGroupHeartbeatRequest.TopicPartitions
_SECURED = {
    "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
}

# Shorter sessions than Kafka's 45 s so that an expiry can be compared in the module's run; both brokers the same.
_TIMEOUTS = {
    "group.consumer.min.session.timeout.ms": "6000", "group.consumer.session.timeout.ms": "15000",
    "group.consumer.min.heartbeat.interval.ms": "1000", "group.consumer.heartbeat.interval.ms": "1000",
}


@pytest.fixture(scope="module")
def oracle_consumer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-consumer-protocol"), "group.coordinator.rebalance.protocols=classic,consumer",
                             *(f"{k}={v}" for k, v in _TIMEOUTS.items()))
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="module")
def shim_consumer() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties({**_SECURED, **_TIMEOUTS, "group.coordinator.rebalance.protocols": "classic,consumer"})) as broker:
        yield broker


@pytest.fixture(scope="module")
def shim_classic() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties(_SECURED)) as broker:
        yield broker


@pytest.fixture(scope="module")
def fresh_peers(oracle_consumer: RealKafka, shim_consumer: EmbeddedBroker) -> Iterator[Peers]:
    """Both brokers before anything made ``__consumer_offsets``: no coordinator shard is loaded yet."""
    both = Peers(oracle_consumer, shim_consumer)
    both.reset_acls()
    both.topic("cg-a", 3)
    both.topic("cg-b", 2)
    yield both
    both.reset_acls()


def _grant_prefixed(peers: Peers, prefix: str, operation: int) -> None:
    """ALLOW ``operation`` on every group named ``prefix...`` to User:ANONYMOUS, on both brokers."""
    from kafka_shim.authorizer import (
        AccessControlEntry,
        AclBinding,
        AclOperation,
        AclPermissionType,
        PatternType,
        ResourcePattern,
        ResourceType,
    )
    from kafka_shim.authorizer.model import ANONYMOUS
    from kafka_shim.protocol.messages import CreateAclsRequest
    creation = CreateAclsRequest.AclCreation(resource_type=GROUP_RT, resource_name=prefix, resource_pattern_type=4, principal=ANONYMOUS,
                                             host="*", operation=operation, permission_type=3)
    with peers._admin() as admin:
        answer = admin.request(30, 3, CreateAclsRequest(creations=[creation]))
    assert [r.error_code for r in answer.body.results] == [0], answer
    peers.shim.call(lambda: peers.shim.broker.authorizer.create_acls([AclBinding(
        ResourcePattern(ResourceType.GROUP, prefix, PatternType.PREFIXED),
        AccessControlEntry(ANONYMOUS, "*", AclOperation(operation), AclPermissionType.ALLOW))]))
    peers._settle()


@pytest.fixture(scope="module")
def peers(fresh_peers: Peers) -> Peers:
    """Both brokers with ``__consumer_offsets``: Kafka creates it at a FindCoordinator and loads its shards."""
    with fresh_peers._admin() as admin:
        deadline = time.monotonic() + 60
        while True:
            found = admin.request(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["cg-any"]))
            if found.body.coordinators[0].error_code == 0:
                break
            assert time.monotonic() < deadline, f"Kafka's group coordinator never loaded: {found}"
            time.sleep(0.1)
    create_topic(fresh_peers.shim, OFFSETS_TOPIC, 50, {"cleanup.policy": "compact"})
    _grant_prefixed(fresh_peers, "cg-rand-", READ)
    return fresh_peers


class Script:
    """Members of one group on both brokers: each side's member ids and topic ids, mapped to labels."""

    def __init__(self, peers: Peers, group: str) -> None:
        self.peers = peers
        self.group = group
        self.member_ids: list[dict[str, str]] = [{}, {}]  # label -> that side's member id

    def topic_id(self, side: int, name: str) -> uuid.UUID:
        if name not in self.peers.topic_ids:
            return uuid.UUID(int=0x5EED)  # a topic id neither broker knows
        return self.peers.topic_ids[name][side]

    def heartbeat(self, label: str, epoch: int, *, what: str, topics: list[str] | None = None, owned: dict[str, list[int]] | None = None,
                  instance: str | None = None, assignor: str | None = None, rebalance_timeout_ms: int = -1,
                  member_id: str | None = None, group: str | None = None, ignore: tuple[str, ...] = ()) -> tuple[Answer, Answer]:
        def make(side: int) -> ConsumerGroupHeartbeatRequest:
            mid = member_id if member_id is not None else self.member_ids[side].get(label, "")
            tps = None if owned is None else [_TP(topic_id=self.topic_id(side, t), partitions=ps) for t, ps in owned.items()]
            return ConsumerGroupHeartbeatRequest(group_id=self.group if group is None else group, member_id=mid, member_epoch=epoch,
                                                 instance_id=instance, rebalance_timeout_ms=rebalance_timeout_ms,
                                                 subscribed_topic_names=topics, server_assignor=assignor, topic_partitions=tps)
        kafka, shim = self.peers.both(HEARTBEAT, 0, make)
        for side, answer in enumerate((kafka, shim)):
            body = answer.body
            if body.error_code == 0 and body.member_id and label not in self.member_ids[side]:
                self.member_ids[side][label] = body.member_id
        self._compare(kafka, shim, what, ignore)
        return kafka, shim

    def describe(self, groups: list[str], *, operations: bool, what: str, ignore: tuple[str, ...] = ()) -> tuple[Answer, Answer]:
        kafka, shim = self.peers.both(DESCRIBE, 0, lambda side: ConsumerGroupDescribeRequest(group_ids=groups, include_authorized_operations=operations))
        self._compare(kafka, shim, what, ignore)
        return kafka, shim

    def _compare(self, kafka: Answer, shim: Answer, what: str, ignore: tuple[str, ...] = ()) -> None:
        for side, answer in enumerate((kafka, shim)):
            labels = {mid: label for label, mid in self.member_ids[side].items()}
            names = {ids[side]: name for name, ids in self.peers.topic_ids.items()}
            _relabel(answer.body, labels, names)
        kafka.correlation_id = shim.correlation_id
        assert_same(kafka, shim, ignore=ignore, what=what)


_GENERATED_ID = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])")


def _relabel(node: Any, labels: dict[str, str], names: dict[uuid.UUID, str]) -> None:
    """Member ids -> labels, topic ids -> names, assignments sorted (Kafka lists them in hash order)."""
    if isinstance(node, list):
        for item in node:
            _relabel(item, labels, names)
        if node and all(hasattr(item, "topic_id") for item in node):
            node.sort(key=lambda item: str(item.topic_id))
        return
    if not hasattr(node, "to_dict"):
        return
    value = getattr(node, "member_id", None)
    if isinstance(value, str) and value in labels:
        node.member_id = labels[value]
    message = getattr(node, "error_message", None)
    if isinstance(message, str):
        for mid, label in labels.items():
            message = message.replace(mid, label)
        node.error_message = _GENERATED_ID.sub("<new member id>", message)
    if isinstance(getattr(node, "topic_id", None), uuid.UUID) and node.topic_id in names:
        node.topic_id = names[node.topic_id]
    if isinstance(getattr(node, "partitions", None), list):
        node.partitions.sort()
    if isinstance(getattr(node, "members", None), list) and hasattr(node, "group_epoch"):
        # Kafka keeps members in a TimelineHashMap keyed by their random ids: its order is random run to run.
        node.members.sort(key=lambda m: labels.get(m.member_id, m.member_id))
    if isinstance(getattr(node, "subscribed_topic_names", None), list):
        node.subscribed_topic_names.sort()
    if isinstance(getattr(node, "client_id", None), str):
        node.client_id = "<client>"
    for value in vars(node).values() if hasattr(node, "__dict__") else ():
        _relabel(value, labels, names)
    for slot in getattr(type(node), "__slots__", ()):
        _relabel(getattr(node, slot, None), labels, names)


def test_default_config_answers_35_before_any_acl_check(oracle, shim_classic: EmbeddedBroker) -> None:
    """Kafka's default coordinator serves neither API: 35, even for a principal with no ACL at all."""
    both = Peers(oracle, shim_classic)
    versions = both.both(18, 3, lambda side: ApiVersionsRequest(client_software_name="differential", client_software_version="1"))
    for answer in versions:
        ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.body.api_keys}
        assert (ranges.get(HEARTBEAT), ranges.get(DESCRIBE)) == ((0, 0), (0, 0)), answer
    heartbeat = ConsumerGroupHeartbeatRequest(group_id="cg-default", member_id="", member_epoch=0, rebalance_timeout_ms=30000,
                                              subscribed_topic_names=["t"], topic_partitions=[])
    kafka, shim = both.both(HEARTBEAT, 0, lambda side: heartbeat)
    kafka.correlation_id = shim.correlation_id
    assert_same(kafka, shim, what="ConsumerGroupHeartbeat with the default protocols")
    assert shim.body.error_code == ErrorCode.UNSUPPORTED_VERSION and shim.body.member_id is None
    describe = ConsumerGroupDescribeRequest(group_ids=["cg-default", "", "other"], include_authorized_operations=True)
    kafka, shim = both.both(DESCRIBE, 0, lambda side: describe)
    kafka.correlation_id = shim.correlation_id
    assert_same(kafka, shim, what="ConsumerGroupDescribe with the default protocols")
    assert [g.error_code for g in shim.body.groups] == [ErrorCode.UNSUPPORTED_VERSION] * 3


def test_before_the_offsets_topic_exists(fresh_peers: Peers) -> None:
    """No shard of ``__consumer_offsets`` is loaded, so the coordinator is not there: 16 for the authorized."""
    fresh_peers.grant("cg-early", READ, resource_type=GROUP_RT)
    script = Script(fresh_peers, "cg-early")
    kafka, _ = script.heartbeat("e", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=30000, what="heartbeat before __consumer_offsets")
    assert kafka.body.error_code == ErrorCode.NOT_COORDINATOR
    script.describe(["cg-early", "cg-denied", "", "cg-early"], operations=True, what="describe before __consumer_offsets")


def test_scripted_static_members_range_assignor(peers: Peers) -> None:
    script = Script(peers, "cg-range")
    script.heartbeat("m1", 0, topics=["cg-a"], owned={}, instance="i1", assignor="range", rebalance_timeout_ms=30000,
                     what="join without READ on the group")
    peers.grant("cg-range", READ, resource_type=GROUP_RT)
    script.describe(["cg-range"], operations=True, what="describe with READ only (READ implies DESCRIBE)")
    script.heartbeat("m1", 0, topics=["cg-a", "cg-b"], owned={}, instance="i1", assignor="range", rebalance_timeout_ms=30000,
                     what="first member joins")
    script.heartbeat("m2", 0, topics=["cg-a", "cg-b"], owned={}, instance="i2", assignor="range", rebalance_timeout_ms=30000,
                     what="second member joins: its partitions are still held")
    script.describe(["cg-range", "cg-missing", ""], operations=True, what="describe while reconciling")
    script.heartbeat("m1", 1, owned={"cg-a": [0, 1, 2], "cg-b": [0, 1]}, instance="i1", what="first member told to revoke")
    script.heartbeat("m1", 1, owned={"cg-a": [0, 1], "cg-b": [0]}, instance="i1", what="first member revoked: next epoch")
    script.heartbeat("m2", 2, owned={}, instance="i2", what="second member gets the released partitions")
    script.describe(["cg-range"], operations=False, what="describe when stable")
    script.heartbeat("m2", 7, owned={}, instance="i2", what="an epoch ahead of the coordinator")
    script.heartbeat("m2", 1, owned={}, instance="i2", what="an epoch behind the coordinator")
    script.heartbeat("m3", 0, topics=["cg-a"], owned={}, instance="i1", rebalance_timeout_ms=30000, what="instance id still in use")
    script.heartbeat("m1", 2, member_id="not-a-member", instance="i1", what="static member fenced by another member id")
    script.heartbeat("m2", -2, instance="i2", what="static member leaves for a while")
    script.describe(["cg-range"], operations=True, what="describe with a member at epoch -2")
    script.heartbeat("m4", 0, topics=["cg-a", "cg-b"], owned={}, instance="i2", assignor="range", rebalance_timeout_ms=30000,
                     what="static member comes back with a new member id")
    script.heartbeat("m1", -1, instance="i1", what="static member leaves for good")
    script.describe(["cg-range"], operations=False, what="describe after a member left")


def test_scripted_errors_and_dynamic_members(peers: Peers) -> None:
    script = Script(peers, "cg-dyn")
    peers.grant("cg-dyn", READ, resource_type=GROUP_RT)
    script.heartbeat("x", 0, topics=["cg-a"], owned={}, what="first heartbeat without a rebalance timeout")
    script.heartbeat("x", 0, topics=[], owned={}, rebalance_timeout_ms=1000, what="first heartbeat without topics")
    script.heartbeat("x", 0, topics=["cg-a"], owned=None, rebalance_timeout_ms=1000, what="first heartbeat with null owned partitions")
    script.heartbeat("x", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=1000, assignor="sticky", what="unknown server assignor")
    script.heartbeat("x", 3, what="epoch 3 without a member id")
    script.heartbeat("x", -3, member_id="m", what="epoch -3")
    script.heartbeat("x", -2, member_id="m", what="static leave without an instance id")
    script.heartbeat("x", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=1000, group="", what="empty group id")
    script.heartbeat("x", 5, member_id="ghost", group="cg-nowhere", what="heartbeat to a group that does not exist")
    script.heartbeat("x", -1, member_id="ghost", group="cg-nowhere", what="leave of a group that does not exist")
    script.heartbeat("a", 0, topics=["cg-a", "cg-missing-topic"], owned={}, rebalance_timeout_ms=30000, what="dynamic member joins")
    script.heartbeat("x", 1, member_id="ghost", what="unknown member id")
    script.heartbeat("b", 0, topics=["cg-b"], owned={}, rebalance_timeout_ms=30000, what="a member with another subscription")
    script.describe(["cg-dyn"], operations=True, what="heterogeneous group")
    script.heartbeat("a", 1, owned={"cg-a": [0, 1, 2]}, what="first member heartbeats")
    script.heartbeat("b", 2, owned={}, what="second member gets cg-b")
    script.heartbeat("b", -1, what="dynamic member leaves")
    script.describe(["cg-dyn"], operations=False, what="after the leave")


def test_uniform_assignor_balances_like_kafka(peers: Peers) -> None:
    script = Script(peers, "cg-uniform")
    peers.grant("cg-uniform", READ, resource_type=GROUP_RT)
    sizes: list[list[int]] = [[], []]
    for label in ("u1", "u2"):
        script.heartbeat(label, 0, topics=["cg-a", "cg-b"], owned={}, rebalance_timeout_ms=30000, what=f"{label} joins",
                         ignore=("assignment",))
    answers = peers.both(DESCRIBE, 0, lambda side: ConsumerGroupDescribeRequest(group_ids=["cg-uniform"]))
    for side, answer in enumerate(answers):
        group = answer.body.groups[0]
        assert (group.error_code, group.group_state, group.group_epoch, group.assignment_epoch) == (0, "Reconciling", 2, 2), group
        sizes[side] = sorted(sum(len(t.partitions) for t in m.target_assignment.topic_partitions) for m in group.members)
        for member in group.members:  # topics as Kafka's HashMap by topic id holds them (when in distinct buckets)
            listed = [t.topic_id for t in member.target_assignment.topic_partitions]
            buckets = [(kafka_uuid_hash(t) ^ (kafka_uuid_hash(t) >> 16)) & 15 for t in listed]
            if len(set(buckets)) == len(buckets):
                assert buckets == sorted(buckets), (("Kafka", "kafka-shim")[side], listed)
    assert sizes[0] == sizes[1] == [2, 3]


def _assert_targets(peers: Peers, group: str, targets: list[dict[str, dict]], what: str) -> None:
    """Each broker's described target assignments are those its model computed (``targets``: Kafka's, kafka-shim's)."""
    for side, answer in enumerate(peers.both(DESCRIBE, 0, lambda side: ConsumerGroupDescribeRequest(group_ids=[group]))):
        described = {m.member_id: {t.topic_id: frozenset(t.partitions) for t in m.target_assignment.topic_partitions}
                     for m in answer.body.groups[0].members}
        expected = {m: {t: ps for t, ps in a.items() if ps} for m, a in targets[side].items()}
        assert described == expected, (("Kafka", "kafka-shim")[side], what)


def test_uniform_assignor_splits_partitions_in_kafkas_member_order(peers: Peers) -> None:
    """Which members of a group get the extra partitions, and which partitions a member gives up, follow the Java
    hash orders Kafka's uniform assignor walks (its memberSpecs HashMap, a HashSet of partitions). The member ids
    are random and differ between the brokers, so each side's target assignments are checked, step after step,
    against the assignor fed that side's ids. 7 partitions over up to 5 members: two of them get a third. The
    members never heartbeat again; the steps take far less than the module's 15 s sessions."""
    group, topic = "cg-uniform-order", "cg-u7"
    peers.topic(topic, 7)
    script = Script(peers, group)
    peers.grant(group, READ, resource_type=GROUP_RT)
    tables = [TimelineTableOrder(java_string_hash), TimelineTableOrder(java_string_hash)]
    targets: list[dict[str, dict]] = [{}, {}]
    steps = [("join", f"u{i}") for i in range(5)] + [("leave", "u1"), ("join", "u5"), ("leave", "u3"), ("join", "u6")]
    for step, label in steps:
        joining = step == "join"
        script.heartbeat(label, 0 if joining else -1, topics=[topic] if joining else None, owned={} if joining else None,
                         rebalance_timeout_ms=60000 if joining else -1, what=f"{label} {step}s",
                         ignore=("assignment", "heartbeat_interval_ms", "member_epoch"))
        for side in (0, 1):
            member_id, table = script.member_ids[side][label], tables[side]
            if not joining:  # the target is computed again at the next join
                table.put(member_id)
                table.remove(member_id)
                targets[side].pop(member_id)
                continue
            before = table.order()
            table.put(member_id)
            table.put(member_id)
            topic_id = peers.topic_ids[topic][side]
            specs = {m: MemberSpec(m, subscribed_topic_ids=frozenset({topic_id}), assignment=targets[side].get(m, {}))
                     for m in kafka_member_order(before, member_id)}
            targets[side] = assign(UNIFORM, specs, {topic_id: 7}, homogeneous=True)
        if not joining:
            continue
        _assert_targets(peers, group, targets, f"after {label} joined")


def test_uniform_assignor_with_different_subscriptions_as_kafka_builds_it(peers: Peers) -> None:
    """Members subscribed to different topics: Kafka's UniformHeterogeneousAssignmentBuilder (sticky, the rest by
    partitions per subscriber, then balanced by moves). Each side's target assignments after every join are checked
    against the builder fed that side's member ids and topic ids (random, so the two sides may differ as Kafka
    itself would between runs). A builder that walked members and topics in sorted order failed on most runs."""
    group = "cg-uniform-mixed"
    shapes = {"cg-h4": 4, "cg-h3": 3, "cg-h6": 6}
    for name, count in shapes.items():
        peers.topic(name, count)
    script = Script(peers, group)
    peers.grant(group, READ, resource_type=GROUP_RT)
    tables = [TimelineTableOrder(java_string_hash), TimelineTableOrder(java_string_hash)]
    targets: list[dict[str, dict]] = [{}, {}]
    subscriptions: list[dict[str, frozenset]] = [{}, {}]
    steps = [("join", "h0", ["cg-h4", "cg-h3"]), ("join", "h1", ["cg-h3", "cg-h6"]), ("join", "h2", ["cg-h4", "cg-h6"]),
             ("join", "h3", ["cg-h6"]), ("join", "h4", list(shapes)), ("leave", "h1", []), ("join", "h5", ["cg-h4"]),
             ("join", "h6", ["cg-h3", "cg-h6"])]
    for step, label, topics in steps:
        joining = step == "join"
        script.heartbeat(label, 0 if joining else -1, topics=topics if joining else None, owned={} if joining else None,
                         rebalance_timeout_ms=60000 if joining else -1, what=f"{label} {step}s",
                         ignore=("assignment", "heartbeat_interval_ms", "member_epoch"))
        for side in (0, 1):
            member_id, table = script.member_ids[side][label], tables[side]
            if not joining:
                table.put(member_id)
                table.remove(member_id)
                targets[side].pop(member_id)
                subscriptions[side].pop(member_id)
                continue
            before = table.order()
            table.put(member_id)
            table.put(member_id)
            # Kafka's TopicIds: the ids in the order of the member's HashSet of names
            subscriptions[side][member_id] = tuple(peers.topic_ids[t][side] for t in hash_set_order(topics))
            counts = {peers.topic_ids[t][side]: n for t, n in shapes.items()}
            specs = {m: MemberSpec(m, subscribed_topic_ids=subscriptions[side][m], assignment=targets[side].get(m, {}))
                     for m in kafka_member_order(before, member_id)}
            targets[side] = assign(UNIFORM, specs, counts, homogeneous=len(set(subscriptions[side].values())) == 1)
        if not joining:
            continue
        _assert_targets(peers, group, targets, f"after {label} joined")


@pytest.mark.parametrize("seed", range(12))
def test_uniform_assignor_on_random_mixed_groups(peers: Peers, seed: int) -> None:
    """Random groups of members with different subscriptions joining and leaving (client-chosen member ids, as 3.9
    accepts them): after every heartbeat each broker's answer and target assignments are those of the builder fed
    that broker's own topic ids, a failed assignment (Kafka 3.9's movement mismatch) included."""
    rng = random.Random(seed)
    group = f"cg-uniform-random-{seed}"
    shapes = {f"cg-r{seed}-{i}": rng.randint(1, 9) for i in range(rng.randint(2, 4))}
    for name, count in shapes.items():
        peers.topic(name, count)
    peers.grant(group, READ, resource_type=GROUP_RT)
    tables = [TimelineTableOrder(java_string_hash), TimelineTableOrder(java_string_hash)]
    targets: list[dict[str, dict]] = [{}, {}]
    subscriptions: list[dict[str, frozenset]] = [{}, {}]
    live: list[str] = []
    for step in range(rng.randint(4, 9)):
        leaving = bool(live) and rng.random() < 0.25
        member_id = rng.choice(live) if leaving else f"member-{step}"
        topics = sorted(rng.sample(sorted(shapes), rng.randint(1, len(shapes))))

        def request(side: int, member_id: str = member_id, topics: list[str] = topics, leaving: bool = leaving) -> ConsumerGroupHeartbeatRequest:
            if leaving:
                return ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=-1)
            return ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=0, rebalance_timeout_ms=60000,
                                                 subscribed_topic_names=topics, topic_partitions=[])
        answers = peers.both(HEARTBEAT, 0, request)
        for side, answer in enumerate(answers):
            who = ("Kafka", "kafka-shim")[side]
            table = tables[side]
            if leaving:
                assert answer.body.error_code == 0, (who, answer.body)
                table.put(member_id)
                table.remove(member_id)
                targets[side].pop(member_id)
                subscriptions[side].pop(member_id)
                continue
            ids = {name: peers.topic_ids[name][side] for name in shapes}
            subscribed = {**subscriptions[side], member_id: tuple(ids[t] for t in hash_set_order(topics))}
            specs = {m: MemberSpec(m, subscribed_topic_ids=subscribed[m], assignment=targets[side].get(m, {}))
                     for m in kafka_member_order(table.order(), member_id)}
            try:
                expected = assign(UNIFORM, specs, {ids[t]: n for t, n in shapes.items()},
                                  homogeneous=len(set(subscribed.values())) == 1)
            except AssignorError:
                assert (answer.body.error_code, answer.body.error_message) == (-1, None), (who, f"step {step}", answer.body)
                continue
            assert answer.body.error_code == 0, (who, f"step {step}", answer.body)
            listed = [t.topic_id for t in answer.body.assignment.topic_partitions]
            # Kafka's HashMap of topic ids: in bucket order (the order within a bucket is not modelled here).
            assert [_bucket(t) for t in listed] == sorted(_bucket(t) for t in listed), (who, f"step {step}", listed)
            table.put(member_id)
            table.put(member_id)
            subscriptions[side] = subscribed
            targets[side] = expected
        live = [m for m in live if m != member_id] if leaving else [*live, member_id]
        _assert_targets(peers, group, targets, f"after step {step}")


def _bucket(topic_id: uuid.UUID) -> int:
    """The bucket of a java.util.HashMap of 16 buckets (a member's few topics) that holds this topic id."""
    h = kafka_uuid_hash(topic_id)
    return (h ^ (h >> 16)) & 15


def test_the_uniform_assignors_movement_mismatch_of_kafka_3_9(peers: Peers) -> None:
    """Kafka 3.9's heterogeneous uniform builder inverts a check of its movement records: a move opposite to an
    earlier one of the same topic between the same two members fails the assignment ("Mismatch in partition
    movement record ..."), and the heartbeat that needed it gets UNKNOWN_SERVER_ERROR (no message: Kafka logs it) while
    the group stays as it was. Member ids given by the client (which 3.9 accepts at epoch 0) make the case the same on both brokers, for
    any topic ids: the fourth join below fails on both, the group then goes on without that member."""
    group = "cg-uniform-mismatch"
    for name, count in (("cg-m8", 8), ("cg-m6", 6), ("cg-m2", 2)):
        peers.topic(name, count)
    script = Script(peers, group)
    peers.grant(group, READ, resource_type=GROUP_RT)
    for label, topics in (("member-0", ["cg-m8", "cg-m6", "cg-m2"]), ("member-1", ["cg-m8"]), ("member-2", ["cg-m8", "cg-m2"])):
        kafka, _ = script.heartbeat(label, 0, member_id=label, topics=topics, owned={}, rebalance_timeout_ms=60000,
                                    what=f"{label} joins", ignore=("assignment", "heartbeat_interval_ms"))
        assert kafka.body.error_code == 0, kafka.body
    for attempt in (1, 2):
        kafka, _ = script.heartbeat("member-3", 0, member_id="member-3", topics=["cg-m2"], owned={}, rebalance_timeout_ms=60000,
                                    what=f"member-3 joins (attempt {attempt}): the assignment fails")
        assert (kafka.body.error_code, kafka.body.error_message) == (-1, None), kafka.body  # Kafka only logs the reason
    script.describe([group], operations=False, what="the group as it was before the failed join")
    script.heartbeat("member-1", -1, member_id="member-1", what="member-1 leaves")
    script.heartbeat("member-3", 0, member_id="member-3", topics=["cg-m2"], owned={}, rebalance_timeout_ms=60000,
                     what="member-3 joins after member-1 left", ignore=("assignment", "heartbeat_interval_ms"))
    script.describe([group], operations=False, what="after member-3 joined")


def test_members_are_described_in_the_order_of_kafkas_member_table(peers: Peers) -> None:
    """Kafka lists a consumer group's members as its TimelineHashMap holds them: slots by Fibonacci hashing of the
    member id, a table that grows and never shrinks. The ids differ between the brokers, so each side's order is
    checked against the model fed that side's ids: a join is two puts (the member's metadata and assignment
    records), a leave a put then a removal (the assignment's tombstone, then the metadata's)."""
    script = Script(peers, "cg-order")
    peers.grant("cg-order", READ, resource_type=GROUP_RT)
    steps = [("join", f"o{i}") for i in range(11)] + [("leave", "o3"), ("leave", "o7"), ("leave", "o0")]
    steps += [("join", "o11"), ("join", "o12")]
    tables = [TimelineTableOrder(java_string_hash), TimelineTableOrder(java_string_hash)]
    for step, label in steps:
        epoch = 0 if step == "join" else -1
        topics = ["cg-a"] if step == "join" else None
        script.heartbeat(label, epoch, topics=topics, owned={} if step == "join" else None,
                         rebalance_timeout_ms=30000 if step == "join" else -1, what=f"{label} {step}s",
                         ignore=("assignment", "heartbeat_interval_ms", "member_epoch"))
        for side, table in enumerate(tables):
            member_id = script.member_ids[side][label]
            table.put(member_id)
            if step == "join":
                table.put(member_id)
            else:
                table.remove(member_id)
    answers = peers.both(DESCRIBE, 0, lambda side: ConsumerGroupDescribeRequest(group_ids=["cg-order"]))
    for side, answer in enumerate(answers):
        described = [m.member_id for m in answer.body.groups[0].members]
        assert described == tables[side].order(), ("Kafka", "kafka-shim")[side]
        assert len(described) == 10


def test_a_silent_member_expires_on_both(peers: Peers) -> None:
    """b stops heartbeating; a keeps going. Once b's session (15 s) has passed, both brokers have fenced it."""
    script = Script(peers, "cg-expire")
    peers.grant("cg-expire", READ, resource_type=GROUP_RT)
    # Static members and the range assignor make the split the same on both (uniform's depends on the random ids).
    a, _ = script.heartbeat("a", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=60000, instance="i-a", assignor="range", what="a joins")
    script.heartbeat("b", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=60000, instance="i-b", assignor="range", what="b joins")
    owned = sorted(p for t in a.body.assignment.topic_partitions for p in t.partitions)
    kept, _ = script.heartbeat("a", 1, owned={"cg-a": owned}, instance="i-a", what="a is told to revoke")
    mine = sorted(p for t in kept.body.assignment.topic_partitions for p in t.partitions)
    script.heartbeat("a", 1, owned={"cg-a": mine}, instance="i-a", what="a revoked")
    deadline = time.monotonic() + 90
    while True:
        # a keeps its session alive on both brokers; b says nothing.
        peers.both(HEARTBEAT, 0, lambda side: ConsumerGroupHeartbeatRequest(
            group_id="cg-expire", member_id=script.member_ids[side]["a"], member_epoch=2, instance_id="i-a", topic_partitions=None))
        answers = peers.both(DESCRIBE, 0, lambda side: ConsumerGroupDescribeRequest(group_ids=["cg-expire"]))
        if all(len(answer.body.groups[0].members) == 1 for answer in answers):
            break
        assert time.monotonic() < deadline, f"b never expired: {answers}"
        time.sleep(1.0)
    script.describe(["cg-expire"], operations=False, what="after b's session expired")
    script.heartbeat("a", 2, owned={"cg-a": mine}, instance="i-a", what="a takes b's partitions")
    script.heartbeat("b", 2, owned={}, instance="i-b", what="b comes back too late")
    script.describe(["cg-expire"], operations=False, what="a alone")


def test_scripted_subscription_changes_and_rejoins(peers: Peers) -> None:
    script = Script(peers, "cg-change")
    peers.grant("cg-change", READ, resource_type=GROUP_RT)
    peers.grant("cg-other", DESCRIBE_OP, resource_type=GROUP_RT)
    a, _ = script.heartbeat("a", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=30000, what="a joins")
    owned_a = sorted(p for t in a.body.assignment.topic_partitions for p in t.partitions)
    script.heartbeat("a", 1, topics=["cg-a", "cg-b"], owned={"cg-a": owned_a}, rebalance_timeout_ms=30000,
                     what="a subscribes to one more topic (a full request)")
    script.heartbeat("a", 2, topics=["cg-b", "cg-a"], what="the same topics in another order: no new epoch")
    script.heartbeat("a", 2, owned={"cg-a": owned_a, "cg-b": [0, 1]}, assignor="range", what="a asks for the range assignor")
    script.describe(["cg-change"], operations=False, what="the preferred assignor is the one the members ask for")
    script.heartbeat("a", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=30000, what="a rejoins with epoch 0 and its member id")
    script.heartbeat("a", 3, owned={"cg-a": [0], "cg-zzz": [0]}, what="owned partitions include a topic id nobody knows")
    script.heartbeat("b", 0, topics=["cg-b"], owned={}, rebalance_timeout_ms=30000, instance="solo", what="a static member joins")
    script.heartbeat("b", -1, instance="solo", what="the static member leaves for good")
    script.describe(["cg-change", "cg-range", "cg-change", "cg-other", "cg-nope"], operations=True,
                    what="several groups, a repeated one, a denied one (Kafka 3.9 walks every id once per shard)",
                    ignore=("groups.*.members",))  # another script's members: their ids are not labelled here


def test_a_member_that_does_not_revoke_in_time_is_fenced_on_both(peers: Peers) -> None:
    script = Script(peers, "cg-slow")
    peers.grant("cg-slow", READ, resource_type=GROUP_RT)
    a, _ = script.heartbeat("a", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=3000, instance="i-a", assignor="range", what="a joins")
    script.heartbeat("b", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=60000, instance="i-b", assignor="range", what="b joins")
    everything = sorted(p for t in a.body.assignment.topic_partitions for p in t.partitions)
    script.heartbeat("a", 1, owned={"cg-a": everything}, instance="i-a", what="a is told to revoke and does not")
    time.sleep(4.5)  # past a's 3 s rebalance timeout (Kafka's timer fires on its own; kafka-shim's when the group is next reached)
    script.heartbeat("a", 1, owned={"cg-a": everything}, instance="i-a", what="a comes back after its rebalance timeout")
    script.heartbeat("b", 2, owned={}, instance="i-b", what="b gets everything")
    script.describe(["cg-slow"], operations=False, what="b alone")


class RandomRun:
    """Random heartbeats of three static members (range assignor: deterministic on both brokers), each built
    from what that broker last answered, compared answer by answer."""

    def __init__(self, peers: Peers, group: str) -> None:
        self.script = Script(peers, group)
        self.epoch = {name: None for name in ("x", "y", "z")}  # None: not in the group (as the members believe)
        self.owned: dict[str, dict[str, list[int]]] = {name: {} for name in self.epoch}

    def step(self, op: str, name: str, topics: list[str]) -> None:
        script = self.script
        if op == "join" and self.epoch[name] is None:
            script.member_ids[0].pop(name, None)
            script.member_ids[1].pop(name, None)
            kafka, _ = script.heartbeat(name, 0, topics=topics, owned={}, rebalance_timeout_ms=60000, instance=f"inst-{name}",
                                        assignor="range", what=f"{name} joins {topics}")
        elif op == "beat" and self.epoch[name] is not None:
            kafka, _ = script.heartbeat(name, self.epoch[name], owned=self.owned[name], instance=f"inst-{name}",
                                        what=f"{name} heartbeats at {self.epoch[name]} owning {self.owned[name]}")
        elif op == "subscribe" and self.epoch[name] is not None:
            kafka, _ = script.heartbeat(name, self.epoch[name], topics=topics, owned=self.owned[name], instance=f"inst-{name}",
                                        what=f"{name} subscribes to {topics}")
        elif op in ("leave", "pause") and self.epoch[name] is not None:
            kafka, _ = script.heartbeat(name, -1 if op == "leave" else -2, instance=f"inst-{name}", what=f"{name} {op}s")
            self.epoch[name] = None
            self.owned[name] = {}
            return
        else:
            script.describe([script.group], operations=False, what="describe")
            return
        body = kafka.body
        if body.error_code != 0:
            self.epoch[name] = None
            self.owned[name] = {}
            return
        self.epoch[name] = body.member_epoch
        if body.assignment is not None:
            self.owned[name] = {str(t.topic_id): sorted(t.partitions) for t in body.assignment.topic_partitions}


_runs = iter(range(10_000))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["join", "beat", "beat", "beat", "subscribe", "leave", "pause", "describe"]),
                          st.sampled_from(["x", "y", "z"]),
                          st.sampled_from([["cg-a"], ["cg-b"], ["cg-a", "cg-b"]])), min_size=6, max_size=16))
def test_random_static_member_traffic(peers: Peers, steps: list) -> None:
    group = f"cg-rand-{next(_runs)}"
    run = RandomRun(peers, group)
    for op, name, topics in steps:
        run.step(op, name, topics)
    run.script.describe([group], operations=True, what="the final state")


def _subscription(*topics: str, owned: list[tuple[str, list[int]]] = (), version: int = 1) -> bytes:
    """A ConsumerProtocolSubscription (v0 or v1) as a classic Java consumer sends it."""
    def string(text: str) -> bytes:
        return struct.pack(">h", len(text)) + text.encode()
    out = struct.pack(">hi", version, len(topics)) + b"".join(string(t) for t in topics) + struct.pack(">i", -1)
    if version >= 1:
        out += struct.pack(">i", len(owned)) + b"".join(string(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
                                                      for t, ps in owned)
    return out


def _assignment(data: bytes) -> list[tuple[str, list[int]]]:
    """A ConsumerProtocolAssignment's partitions, sorted (Kafka lists topics in hash order)."""
    if not data:
        return []
    at = 2
    (count,) = struct.unpack_from(">i", data, at)
    at += 4
    result = []
    for _ in range(count):
        (length,) = struct.unpack_from(">h", data, at)
        at += 2
        topic = data[at:at + length].decode()
        at += length
        (n,) = struct.unpack_from(">i", data, at)
        at += 4
        result.append((topic, sorted(struct.unpack_from(f">{n}i", data, at))))
        at += 4 * n
    return sorted(result)


def test_classic_members_inside_a_consumer_group(peers: Peers) -> None:
    """Kafka 3.9's new coordinator takes classic JoinGroups into a non-empty consumer group (KIP-848's mixed groups,
    whatever group.consumer.migration.policy says): JoinGroup, SyncGroup, Heartbeat and LeaveGroup compared."""
    script = Script(peers, "cg-mixed")
    peers.grant("cg-mixed", READ, resource_type=GROUP_RT)
    script.heartbeat("a", 0, topics=["cg-a"], owned={}, rebalance_timeout_ms=30000, instance="i-a", assignor="range",
                     what="a consumer-protocol member joins")

    def join(label: str, *, protocol_type: str = "consumer", names: tuple[str, ...] = ("range",), owned=(), what: str):
        def make(side: int) -> JoinGroupRequest:
            return JoinGroupRequest(group_id="cg-mixed", session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                    member_id=script.member_ids[side].get(label, ""), group_instance_id="i-" + label,
                                    protocol_type=protocol_type, protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                        name=n, metadata=_subscription("cg-a", owned=list(owned))) for n in names])
        kafka, shim = peers.both(11, 9, make)
        for side, answer in enumerate((kafka, shim)):
            if answer.body.error_code == 0 and label not in script.member_ids[side]:
                script.member_ids[side][label] = answer.body.member_id
        script._compare(kafka, shim, what)
        return kafka

    def sync(label: str, generation: int, what: str) -> list[tuple[str, list[int]]]:
        kafka, shim = peers.both(14, 5, lambda side: SyncGroupRequest(
            group_id="cg-mixed", generation_id=generation, member_id=script.member_ids[side][label], group_instance_id="i-" + label,
            protocol_type="consumer", protocol_name="range", assignments=[]))
        partitions = [_assignment(bytes(a.body.assignment)) for a in (kafka, shim)]
        assert partitions[0] == partitions[1], (what, partitions)
        for a in (kafka, shim):
            a.body.assignment = b""
        script._compare(kafka, shim, what)
        return partitions[0]

    def heartbeat(label: str, generation: int, what: str) -> int:
        kafka, shim = peers.both(12, 4, lambda side: HeartbeatRequest(
            group_id="cg-mixed", generation_id=generation, member_id=script.member_ids[side].get(label, "nobody"),
            group_instance_id="i-" + label))
        script._compare(kafka, shim, what)
        return kafka.body.error_code

    join("b", protocol_type="other", what="a classic join with another protocol type")
    first = join("b", what="a static classic member joins the consumer group")
    generation = first.body.generation_id
    assert sync("b", generation, "SyncGroup of the classic member") == []  # its range is still held by a
    assert heartbeat("b", generation - 1, "a heartbeat with an old generation") == ErrorCode.ILLEGAL_GENERATION
    heartbeat("b", generation, "the classic member heartbeats while a still holds its partitions")
    a_owned = {"cg-a": [0, 1, 2]}
    script.heartbeat("a", 1, owned=a_owned, instance="i-a", what="a is told to revoke")
    script.heartbeat("a", 1, owned={"cg-a": [0, 1]}, instance="i-a", what="a revoked")
    heartbeat("b", generation, "the classic member is told to rejoin")
    again = join("b", what="the classic member rejoins")
    assert sync("b", again.body.generation_id, "SyncGroup after the rejoin") == [("cg-a", [2])]
    script.describe(["cg-mixed"], operations=False, what="a mixed group")
    kafka, shim = peers.both(13, 5, lambda side: LeaveGroupRequest(group_id="cg-mixed", members=[
        LeaveGroupRequest.MemberIdentity(member_id=script.member_ids[side]["b"], group_instance_id="i-b")]))
    script._compare(kafka, shim, "the classic member leaves")
    script.describe(["cg-mixed"], operations=False, what="after the classic member left")


@pytest.mark.parametrize("version", [8, 9])
def test_a_commit_with_a_generation_to_a_group_that_does_not_exist(peers: Peers, version: int) -> None:
    """The new coordinator's OffsetMetadataManager: GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before."""
    group = f"cg-rand-gone-{uuid.uuid4().hex[:8]}"  # READ on cg-rand-* groups is granted by the fixture
    peers.grant("cg-a", READ)
    body = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=5, member_id="ghost", group_instance_id=None,
                               retention_time_ms=-1, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="cg-a", partitions=[
                                   OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                                                    committed_leader_epoch=-1, committed_metadata="")])])
    kafka, _ = peers.same(8, version, lambda side: body, f"OffsetCommit v{version} with generation 5 to an unknown group")
    expected = ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
    assert kafka.body.topics[0].partitions[0].error_code == expected


def test_describing_an_authorized_empty_group_id_fails_the_whole_answer(peers: Peers) -> None:
    """Kafka's coordinator answers an empty group id with INVALID_GROUP_ID and a null id, which v0 cannot carry;
    serializing throws and KafkaApis sends the request's error answer: UNKNOWN_SERVER_ERROR for every group asked."""
    peers.grant("*", DESCRIBE_OP, resource_type=GROUP_RT)
    try:
        for groups in ([""], ["cg-rand-described", ""]):
            request = ConsumerGroupDescribeRequest(group_ids=groups, include_authorized_operations=True)
            kafka, shim = peers.both(DESCRIBE, 0, lambda side, request=request: request)
            kafka.correlation_id = shim.correlation_id
            assert_same(kafka, shim, what=f"ConsumerGroupDescribe of {groups}")
            assert [g.error_code for g in kafka.body.groups] == [ErrorCode.UNKNOWN_SERVER_ERROR] * len(groups)
    finally:
        peers.reset_acls()
        _grant_prefixed(peers, "cg-rand-", READ)

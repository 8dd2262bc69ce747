"""Group requests on Kafka 3.9's new group coordinator beside kafka-shim: what a second run of the random group probe
(/tmp/grp-probe-ng, seeds 201-210, classic,consumer) still found, each as a script both brokers run.

- A classic JoinGroup into a KIP-848 consumer group counts each protocol its member lists
  (ConsumerGroup.maybeUpdateClassicProtocolMembersSupportedProtocols): a member naming ``range`` twice makes the
  count of ``range`` two for one classic member, so every later classic join is INCONSISTENT_GROUP_PROTOCOL, the
  member's own rejoins too (supportsClassicProtocols wants a count equal to the number of classic members).
- A classic JoinGroup into a consumer group finds its (static) member before it reads the subscription: an unknown or
  fenced static member is told so (25, 82) even when its subscription bytes are unreadable (not -1).
- OffsetFetch v9 naming a consumer group with a null member id and a member epoch of 0 or more: the coordinator looks
  the null id up in its timeline map, whose hashing throws NullPointerException: UNKNOWN_SERVER_ERROR for the group.
- DescribeGroups: GroupCoordinatorService answers only a null id first; the empty id goes to its
  ``__consumer_offsets`` partition (0) like any other group id.
- The server assignor of a consumer group on a tie: the heartbeat that computes a target assignment copies the
  group's counts into a java.util.HashMap and applies its member's change with ``compute``, which links a name it
  (re)adds at the head of its bin, so that name wins the tie (ConsumerGroup.computePreferredServerAssignor);
  ConsumerGroupDescribe streams the counts' TimelineHashMap, where ``uniform`` comes first.

Member ids are random per broker: each side's ids are replaced by the label of the member that got them.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafka_shim.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    JoinGroupRequest,
    OffsetFetchRequest,
)
from tests.differential import test_committed_offsets as _offsets
from tests.differential.new_group_coordinator.test_consumer_group_probe_findings import JOIN, Members, _subscription
from tests.differential.test_committed_offsets import OFFSET_COMMIT, READ, _granted, commit
from tests.support.compare import field_diff, normalise
from tests.support.fetch_peers import Peers

shim_secured, peers = _offsets.shim_secured, _offsets.peers
OFFSET_FETCH, DESCRIBE_GROUPS, CONSUMER_HEARTBEAT, CONSUMER_DESCRIBE = 9, 15, 68, 69
DESCRIBE_OP, GROUP = 8, 3


def _classic_join(group: str, member: str, protocols: list[str], *, instance: str | None = None,
                  metadata: bytes | None = None) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id=member,
                            group_instance_id=instance, protocol_type="consumer", reason=None, protocols=[
                                JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=_subscription("co-a") if metadata is None else metadata)
                                for name in protocols])


def _join_as(members: Members, label: str, protocols: list[str], version: int = 6) -> dict[str, Any]:
    """A classic JoinGroup of member ``label`` (its id from an earlier answer, else none); records the id it gets."""
    kafka, shim = members.peers.both(JOIN, version, lambda side: _classic_join(members.group, members.ids[side].get(label, ""), protocols))
    trees = []
    for side, answer in enumerate((kafka, shim)):
        assert not answer.closed, (side, answer)
        if answer.body.member_id:
            members.ids[side][label] = answer.body.member_id
        trees.append(members._tree(side, answer))
    assert trees[0] == trees[1], f"JoinGroup of {label} with {protocols}: Kafka {trees[0]} != kafka-shim {trees[1]}"
    return trees[0]


def test_a_classic_member_naming_a_protocol_twice_counts_it_twice(peers: Peers) -> None:
    group = "gpf2-dup-protocol"
    _granted(peers, group, (READ,), {"co-a": (READ,)})
    members = Members(peers, group)
    members.join("m1", ["co-a"])  # a consumer-protocol member makes it a KIP-848 group
    assert _join_as(members, "k1", ["range", "range"])["error_code"] == 79  # MEMBER_ID_REQUIRED, then the real join
    assert _join_as(members, "k1", ["range", "range"])["error_code"] == 0
    # range now counts 2 for 1 classic member: nothing matches any more, the member's own rejoin included
    assert _join_as(members, "k1", ["range"])["error_code"] == 23
    assert _join_as(members, "k2", ["range"])["error_code"] == 23
    assert _join_as(members, "k2", ["range", "range"])["error_code"] == 23
    assert _join_as(members, "k1", ["roundrobin", "range"])["error_code"] == 23


def test_a_static_classic_join_is_checked_before_its_subscription_is_read(peers: Peers) -> None:
    group = "gpf2-static-first"
    _granted(peers, group, (READ,), {"co-a": (READ,)})
    members = Members(peers, group)
    members.join("m1", ["co-a"])
    # m1 is dynamic: a classic member joins as static member inst-x, then another id claims inst-x with bad bytes
    kafka, shim = peers.both(JOIN, 9, lambda side: _classic_join(group, "", ["range"], instance="inst-x"))
    assert kafka.body.error_code == 0 and shim.body.error_code == 0, (kafka, shim)
    cases = {
        "a member fenced by the static member, with an empty subscription": ("someone", "inst-x", b""),
        "an unknown static member with an unreadable subscription": ("someone", "inst-unknown", b"\x00"),
    }
    for what, (member, instance, metadata) in cases.items():
        answer = members.same(JOIN, 9, lambda side, m=member, i=instance, md=metadata: _classic_join(group, m, ["range"], instance=i, metadata=md),
                              what=f"JoinGroup v9 into a consumer group as {what}")
        assert answer["error_code"] in (25, 82), answer


def test_offset_fetch_v9_with_a_null_member_id_and_an_epoch(peers: Peers) -> None:
    group = "gpf2-fetch-null-member"
    _granted(peers, group, (READ, DESCRIBE_OP), {"co-a": (READ,)})
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0]}), what="seeding offsets")
    members = Members(peers, group)
    members.join("m1", ["co-a"])

    def fetch(member_id: str | None, epoch: int, topics: bool):
        def make(side: int) -> OffsetFetchRequest:
            return OffsetFetchRequest(require_stable=False, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id=group, member_id=member_id, member_epoch=epoch,
                topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name="co-a", partition_indexes=[0])] if topics else None)])
        return make
    for epoch in (-1, 0, 1, 5):
        for topics in (True, False):
            answer = members.same(OFFSET_FETCH, 9, fetch(None, epoch, topics),
                                  what=f"OffsetFetch v9, null member id, member epoch {epoch}, {'one partition' if topics else 'all topics'}")
            assert answer["groups"][0]["error_code"] == (0 if epoch < 0 else -1), answer


def test_describe_groups_places_the_empty_group_id_by_its_partition(peers: Peers) -> None:
    peers.reset_acls()
    peers.grant("*", DESCRIBE_OP, resource_type=GROUP)
    # "" and s204g1a both live in __consumer_offsets partition 0, s204g1b in 1, s204g0b in 20
    for groups in (["s204g1a", "s204g1b", "", "s204g0b"], ["gpf2-x", "", "gpf2-y", ""], [""]):
        peers.same(DESCRIBE_GROUPS, 5, lambda side, g=groups: DescribeGroupsRequest(groups=g, include_authorized_operations=False),
                   what=f"DescribeGroups {groups}")


class _Chooser:
    """Consumer-protocol members of one group with member ids of their own (the same on both brokers, so that the
    assignors, which order members by id, give the same assignments), each heartbeat and ConsumerGroupDescribe
    compared on both brokers."""

    def __init__(self, peers: Peers, group: str) -> None:
        self.peers, self.group = peers, group
        self.epochs: dict[str, int] = {}
        self.step = 0

    def heartbeat(self, member: str, topics: list[str] | None = None, assignor: str | None = None, *,
                  instance: str | None = None, join: bool = False, leave: bool = False) -> Any:
        epoch = 0 if join else -1 if leave else self.epochs[member]
        body = ConsumerGroupHeartbeatRequest(
            group_id=self.group, member_id=member, member_epoch=epoch, instance_id=instance, rack_id=None,
            rebalance_timeout_ms=30000 if join else -1, subscribed_topic_names=topics, server_assignor=assignor,
            topic_partitions=[] if join else None)
        answer = self._same(CONSUMER_HEARTBEAT, body,
                            f"heartbeat of {member} (epoch {epoch}, topics {topics}, assignor {assignor})")
        assert answer["error_code"] == 0, answer
        self.epochs[member] = answer["member_epoch"]
        return answer

    def describe(self) -> Any:
        body = ConsumerGroupDescribeRequest(group_ids=[self.group], include_authorized_operations=False)
        return self._same(CONSUMER_DESCRIBE, body, "ConsumerGroupDescribe")["groups"][0]

    def _same(self, api_key: int, body: Any, what: str) -> Any:
        """Both answers with each broker's topic ids named, topics sorted by name (their order follows the ids)."""
        self.step += 1
        trees = []
        for side, answer in enumerate(self.peers.both(api_key, 0, lambda side: body)):
            assert not answer.closed, (side, answer)
            names = {ids[side]: name for name, ids in self.peers.topic_ids.items()}
            trees.append(_named(normalise(answer.body.to_dict(), ("throttle_time_ms",)), names))
        lines = field_diff(trees[0], trees[1])
        assert not lines, f"step {self.step}, {what}: Kafka and kafka-shim disagree:\n  " + "\n  ".join(lines)
        return trees[0]


def _named(node: Any, names: dict) -> Any:
    if isinstance(node, dict):
        node = {k: names.get(v, v) if k == "topic_id" else _named(v, names) for k, v in node.items()}
        if isinstance(node.get("topic_partitions"), list):
            node["topic_partitions"].sort(key=lambda t: t["topic_id"])
        return node
    if isinstance(node, list):
        return [_named(v, names) for v in node]
    return node


# Every member takes partitions of one topic (6 partitions, where the range and uniform assignors part ways): their
# choices then depend on member ids only, the same on both brokers, not on topic ids (each broker's own). A
# subscription naming a missing topic too changes the group epoch without changing what is assigned.
SIX = "gpf2-six"
A, A2 = [SIX], [SIX, "co-missing"]


def _one_one_tie(members: _Chooser) -> None:
    """The reported case: a static member without a choice, then uniform, then range (1-1): range's own heartbeat
    computes with range, ConsumerGroupDescribe names uniform; whose heartbeat recomputes decides after that."""
    members.heartbeat("m-static", A, instance="inst-s", join=True)
    members.heartbeat("m-uniform", A, "uniform", join=True)
    members.heartbeat("m-range", A, "range", join=True)
    group = members.describe()
    assert group["assignor_name"] == "uniform", group
    members.heartbeat("m-static", A2)  # no choice of its own: the copy's order, uniform first
    members.describe()
    members.heartbeat("m-range", A2)  # range counts 1: removed and linked back at the head, range again
    members.describe()
    members.heartbeat("m-uniform", A2)
    members.describe()


def _two_two_tie(members: _Chooser) -> None:
    """2-2: a name counting 2 stays in place in the copy (uniform first); a leave then breaks the tie."""
    for member, assignor in (("m-u1", "uniform"), ("m-r1", "range"), ("m-u2", "uniform"), ("m-r2", "range")):
        members.heartbeat(member, A, assignor, join=True)
        members.describe()
    members.heartbeat("m-r1", A2)
    members.describe()
    members.heartbeat("m-u1", leave=True)
    members.heartbeat("m-r2", A2)  # the leave bumped the group epoch: this heartbeat computes the assignment
    members.describe()
    members.heartbeat("m-u2", A2)
    members.describe()


def _to_zero_and_back(members: _Chooser) -> None:
    """A count going to zero (the name leaves the map) and coming back."""
    members.heartbeat("m-a", A, "range", join=True)
    members.heartbeat("m-b", A, "uniform", join=True)  # 1-1 computed by uniform's heartbeat
    members.describe()
    members.heartbeat("m-a", leave=True)  # range gone
    members.heartbeat("m-b", A2)
    members.describe()
    members.heartbeat("m-c", A, "range", join=True)  # range back (1-1), linked at the head of the copy
    assert members.describe()["assignor_name"] == "uniform"
    members.heartbeat("m-d", A, join=True)  # a member without a choice computes: uniform first
    members.describe()
    members.heartbeat("m-c", A2, "uniform")  # range gone again: uniform 2
    members.describe()
    members.heartbeat("m-e", A, "range", join=True)
    members.describe()


@pytest.mark.parametrize("script", [_one_one_tie, _two_two_tie, _to_zero_and_back], ids=lambda f: f.__name__.strip("_"))
def test_the_server_assignor_chosen_on_a_tie(peers: Peers, script) -> None:
    group = f"gpf2-assignor-{script.__name__.strip('_')}"
    if SIX not in peers.topic_ids:
        peers.topic(SIX, 6)
    _granted(peers, group, (READ, DESCRIBE_OP), {SIX: (READ, DESCRIBE_OP)})
    script(_Chooser(peers, group))

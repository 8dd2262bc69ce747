"""Group requests around KIP-848 consumer groups on Kafka 3.9's new group coordinator, beside kafka-shim: the
differences a random probe of the group APIs found in this mode (/tmp/grp-probe-ng), each as a script both brokers run.

- OffsetCommit: an error the coordinator throws (a stale member epoch, an old version for a consumer member, ...) is
  turned into an answer by GroupCoordinatorService from the request KafkaApis *passed on*, and merged into KafkaApis'
  own errors (unknown partitions, unknown topics): not the whole request answered with the coordinator's code.
- JoinGroup into a non-empty consumer group: every error of that path is thrown, and the answer carries no member id.
- OffsetDelete on a consumer group that is reconciling: no group error, partitions of subscribed topics get 86.

Member ids are random per broker: each side's ids are replaced by the label of the member that got them.
"""

from __future__ import annotations

import re
import struct
from typing import Any

import pytest

from kafka_shim.protocol.messages import ConsumerGroupHeartbeatRequest, JoinGroupRequest, OffsetCommitRequest
from tests.differential import test_committed_offsets as _offsets
from tests.differential.test_committed_offsets import OFFSET_COMMIT, OFFSET_DELETE, READ, _granted, commit, delete
from tests.support.compare import field_diff, normalise
from tests.support.fetch_peers import Peers
from tests.support.wire import Answer

# That module's brokers (the new coordinator through this folder's conftest) and topics co-a (3), co-b (2).
shim_secured, peers = _offsets.shim_secured, _offsets.peers
HEARTBEAT, JOIN = 68, 11
DELETE_OP = 6
_NEW_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")


class Members:
    """Consumer-protocol members of one group on both brokers, by label."""

    def __init__(self, peers: Peers, group: str) -> None:
        self.peers, self.group = peers, group
        self.ids: list[dict[str, str]] = [{}, {}]
        self.epochs: list[dict[str, int]] = [{}, {}]

    def join(self, label: str, topics: list[str]) -> None:
        """A new member subscribing to ``topics``; both brokers must accept it."""
        kafka, shim = self.peers.both(HEARTBEAT, 0, lambda side: ConsumerGroupHeartbeatRequest(
            group_id=self.group, member_id="", member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_names=topics,
            topic_partitions=[]))
        for side, answer in enumerate((kafka, shim)):
            assert answer.body.error_code == 0, (side, answer)
            self.ids[side][label] = answer.body.member_id
            self.epochs[side][label] = answer.body.member_epoch

    def same(self, api_key: int, version: int, make, what: str) -> list[tuple[str, Any]]:
        kafka, shim = self.peers.both(api_key, version, make)
        trees = [self._tree(side, answer) for side, answer in enumerate((kafka, shim))]
        lines = field_diff(trees[0], trees[1])
        assert not lines, f"{what}: Kafka and kafka-shim disagree:\n  " + "\n  ".join(lines)
        return trees[0]

    def _tree(self, side: int, answer: Answer) -> Any:
        assert not answer.closed, (side, answer)
        labels = {mid: f"<{label}>" for label, mid in self.ids[side].items()}

        def relabel(node: Any) -> Any:
            if isinstance(node, dict):
                return {k: relabel(v) for k, v in node.items()}
            if isinstance(node, list):
                return [relabel(v) for v in node]
            if isinstance(node, str) and node in labels:
                return labels[node]
            if isinstance(node, str) and _NEW_ID.match(node):
                return "<new member id>"
            return node
        return relabel(normalise(answer.body.to_dict(), ("throttle_time_ms",)))


def _subscription(*topics: str) -> bytes:
    body = struct.pack(">hi", 0, len(topics)) + b"".join(struct.pack(">h", len(t)) + t.encode() for t in topics)
    return body + struct.pack(">i", -1)


def _join(group: str, member: str, *, protocol_type: str = "consumer", metadata: bytes | None = None,
          instance: str | None = None) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id=member,
                            group_instance_id=instance, protocol_type=protocol_type, reason=None, protocols=[
                                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=_subscription("co-a") if metadata is None else metadata)])


def _commit_as(members: Members, version: int, topics: list[tuple[str, list[int]]], label: str, epoch_delta: int) -> Any:
    """An OffsetCommit naming ``topics`` in this order (a topic may come twice) as member ``label``, its epoch moved by
    ``epoch_delta``."""
    def make(side: int) -> OffsetCommitRequest:
        request = commit(version, members.group, {})
        request.member_id = members.ids[side].get(label, label)
        request.generation_id_or_member_epoch = members.epochs[side].get(label, 0) + epoch_delta
        request.topics = [OffsetCommitRequest.OffsetCommitRequestTopic(name=name, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=5, committed_leader_epoch=-1,
                                                             commit_timestamp=-1, committed_metadata="m") for p in parts])
            for name, parts in topics]
        return request
    return make


MIXED = [("co-a", [0, 7]), ("co-missing", [0]), ("co-a", []), ("co-b", [1]), ("co-a", [2])]


@pytest.mark.parametrize("version", [1, 2, 7, 8, 9])
def test_commit_errors_thrown_by_the_coordinator_cover_only_what_it_was_given(peers: Peers, version: int) -> None:
    group = f"cgp-commit-{version}"
    _granted(peers, group, (READ,), {"co-a": (READ,), "co-b": (READ,)})
    members = Members(peers, group)
    members.join("m1", ["co-a"])
    # v9 with a stale epoch (FENCED/STALE_MEMBER_EPOCH); below v9 a consumer member cannot commit at all
    # (UNSUPPORTED_VERSION); an unknown member (UNKNOWN_MEMBER_ID) at every version.
    first = members.same(OFFSET_COMMIT, version, _commit_as(members, version, MIXED, "m1", epoch_delta=-1 if version >= 9 else 0),
                         what=f"OffsetCommit v{version} as the member, unknown partition/topic, empty and repeated topics")
    members.same(OFFSET_COMMIT, version, _commit_as(members, version, MIXED, "ghost", epoch_delta=1),
                 what=f"OffsetCommit v{version} as an unknown member")
    codes = {p["error_code"] for t in first["topics"] for p in t["partitions"]}
    assert len(codes - {3, 29}) == 1, first  # KafkaApis' own 3 and 29 beside the coordinator's one code


@pytest.mark.parametrize("version", [1, 4, 6, 9])
def test_join_errors_of_a_consumer_group_carry_no_member_id(peers: Peers, version: int) -> None:
    group = f"cgp-join-{version}"
    _granted(peers, group, (READ,), {})
    members = Members(peers, group)
    members.join("m1", ["co-a"])
    cases = {
        "another protocol type": _join(group, "", protocol_type="connect"),
        "a malformed subscription": _join(group, "some-member", metadata=b"\x00"),
    }
    if version >= 5:
        cases["an unknown static member"] = _join(group, "someone", instance="static-x")
    for what, body in cases.items():
        answer = members.same(JOIN, version, lambda side, body=body: body, what=f"JoinGroup v{version} into a consumer group with {what}")
        assert answer["error_code"] != 0 and answer["member_id"] == "", answer


def test_offset_delete_on_consumer_groups_in_every_state(peers: Peers) -> None:
    group = "cgp-offset-delete"
    _granted(peers, group, (READ, DELETE_OP), {"co-a": (READ,), "co-b": (READ,)})
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0, 1], "co-b": [0, 1]}), what="seeding offsets")
    members = Members(peers, group)
    request = [("co-a", [0]), ("co-b", [0]), ("co-a", []), ("co-missing", [1])]

    def make(side: int) -> Any:
        return _delete(group, request)
    members.join("m1", ["co-a"])
    members.same(OFFSET_DELETE, 0, make, what="OffsetDelete, one member (the group is stable)")
    members.join("m2", ["co-a", "co-b"])  # m1 must give partitions up: the group is reconciling
    members.same(OFFSET_DELETE, 0, make, what="OffsetDelete while the group reconciles")


def _delete(group: str, topics: list[tuple[str, list[int]]]) -> Any:
    """An OffsetDelete naming ``topics`` in this order, a topic possibly twice."""
    request = delete(group, {})
    request.topics = [delete(group, {name: parts}).topics[0] for name, parts in topics]
    return request

"""Groups whose ``__consumer_offsets`` partition does not exist, beside a fresh Apache Kafka 3.9.

Kafka's coordinators fix the partition count they divide keys by when the broker starts: the internal topic's, or
``offsets.topic.num.partitions`` (50) while it does not exist. A user who then makes ``__consumer_offsets`` with
fewer partitions leaves the groups that fall past them without a coordinator: FindCoordinator answers
COORDINATOR_NOT_AVAILABLE for them, the group APIs NOT_COORDINATOR, until the partition is added. Kafka is asked as
its SASL super user, kafka-shim on a PLAINTEXT listener without an authorizer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    FindCoordinatorRequest,
    JoinGroupRequest,
    OffsetFetchRequest,
)
from kafka_shim.shim.groups.offsets_log import partition_for
from tests.support.fresh_pair import fresh_pair
from tests.support.wire import Wire

FIND_COORDINATOR, CREATE_TOPICS, CREATE_PARTITIONS, JOIN_GROUP, OFFSET_FETCH = 10, 19, 37, 11, 9
OFFSETS = "__consumer_offsets"


@pytest.fixture(scope="module")
def wires(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Wire]]:
    with fresh_pair(tmp_path_factory.mktemp("kafka-fewer-offsets-partitions"), {"offsets.topic.replication.factor": "1"}) as both:
        yield both


def _groups_in(partition: int, count: int) -> list[str]:
    """``count`` group ids whose partition (of 50) is ``partition``."""
    return [g for g in (f"group-{i}" for i in range(5000)) if partition_for(g, 50) == partition][:count]


def _coordinators(wire: Wire, keys: list[str]) -> list[tuple[str, int, int]]:
    answer = wire.request(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=keys)).body
    return [(c.key, c.error_code, c.node_id) for c in answer.coordinators]


def _until(wire: Wire, ask, expected, what: str):
    """Kafka applies a topic change a moment after answering it: ask again until the answer is the expected one."""
    deadline = time.monotonic() + 60
    while (answer := ask(wire)) != expected:
        assert time.monotonic() < deadline, f"{what} at {wire.address}: {answer} (expected {expected})"
        time.sleep(0.2)
    return answer


def _join_error(wire: Wire, group: str) -> int:
    body = JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=20000, member_id="",
                            group_instance_id=None, protocol_type="consumer",
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")], reason=None)
    return wire.request(JOIN_GROUP, 5, body).body.error_code


def _offset_fetch_error(wire: Wire, group: str) -> int:
    body = OffsetFetchRequest(require_stable=False, groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, member_id=None, member_epoch=-1, topics=None)])
    return wire.request(OFFSET_FETCH, 8, body).body.groups[0].error_code


def test_groups_past_the_partitions_of_a_hand_made_offsets_topic_have_no_coordinator(wires: list[Wire]) -> None:
    in_0, in_1, in_7 = _groups_in(0, 2), _groups_in(1, 1), _groups_in(7, 2)
    keys = in_0 + in_1 + in_7
    made = [w.request(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, validate_only=False, topics=[
        CreateTopicsRequest.CreatableTopic(name=OFFSETS, num_partitions=1, replication_factor=1)])).body for w in wires]
    assert [[t.error_code for t in m.topics] for m in made] == [[0], [0]]

    one_partition = [(g, 0, 1) for g in in_0] + [(g, 15, -1) for g in in_1 + in_7]
    for wire in wires:
        _until(wire, lambda w: _coordinators(w, keys), one_partition, "FindCoordinator with one offsets partition")
        # A group past the partitions: the group APIs answer NOT_COORDINATOR, and nothing of it is kept.
        assert _join_error(wire, in_7[0]) == 16
        assert _offset_fetch_error(wire, in_7[1]) == 16
        _until(wire, lambda w: _offset_fetch_error(w, in_0[0]), 0, "OffsetFetch of a group in partition 0")
        # v3's single key carries the code's message.
        old = wire.request(FIND_COORDINATOR, 3, FindCoordinatorRequest(key_type=0, key=in_7[0])).body
        assert (old.error_code, old.error_message, old.node_id) == (15, "The coordinator is not available.", -1)

    grown = [w.request(CREATE_PARTITIONS, 3, CreatePartitionsRequest(timeout_ms=30000, validate_only=False, topics=[
        CreatePartitionsRequest.CreatePartitionsTopic(name=OFFSETS, count=2, assignments=None)])).body for w in wires]
    assert [[r.error_code for r in g.results] for g in grown] == [[0], [0]]
    two_partitions = [(g, 0, 1) for g in in_0 + in_1] + [(g, 15, -1) for g in in_7]
    for wire in wires:
        _until(wire, lambda w: _coordinators(w, keys), two_partitions, "FindCoordinator with two offsets partitions")
        assert _join_error(wire, in_7[0]) == 16

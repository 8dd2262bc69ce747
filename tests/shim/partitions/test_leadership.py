"""Leader changes on plain state: placement over the nodes, a node going down and back, the leader-epoch cache."""

from __future__ import annotations

import pytest

from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.partitions.append import append_records
from kafka_shim.shim.partitions.leadership import LeadershipError, change_leader, elect, node_down, node_up, reassign
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.offsets import EARLIEST, earliest_epoch, end_offset_for_epoch, offset_for_timestamp
from tests.support.appending import batch, values


def _partitions(nodes: int) -> Partitions:
    return Partitions(ClusterState(cluster_id="c", node_id=1, node_ids=list(range(1, nodes + 1))), LogManager(None), {})


def test_placement_stripes_replicas_and_leaders_over_the_live_nodes() -> None:
    cluster = ClusterState(cluster_id="c", node_id=1, node_ids=[1, 2, 3])
    assert cluster.placement(4, 2) == [[1, 2], [2, 3], [3, 1], [1, 2]]
    assert cluster.placement(2, 5) == [[2, 3, 1], [3, 1, 2]]  # never more copies than nodes; the start moves on
    cluster.down.add(2)
    assert cluster.placement(2, 2) == [[1, 3], [3, 1]]
    assert ClusterState(cluster_id="c", node_id=7).placement(2) == [[7], [7]]


def test_a_node_down_moves_its_leaders_to_the_next_in_sync_replica_and_back_up_leads_the_leaderless() -> None:
    partitions = _partitions(3)
    topic = partitions.create_topic("t", 2, replicas=[[1, 2], [2]])
    assert node_down(partitions, 2) == [("t", 1)]  # partition 0 is led by 1 (its first replica)
    p0, p1 = topic.partitions
    assert (p0.leader_id, p0.isr) == (1, [1])
    assert (p1.leader_id, p1.isr, p1.leader_epoch) == (-1, [2], 1)  # the last in-sync replica stays in the ISR
    assert node_up(partitions, 2) == [("t", 1)]
    assert (p0.leader_id, p0.isr) == (1, [1, 2])
    assert (p1.leader_id, p1.leader_epoch) == (2, 2)


def _two_epochs(partitions: Partitions):
    """Topic t's partition 0 with offsets 0-2 written at epoch 0 and 3-4 at epoch 1 (another leader)."""
    partitions.create_topic("t", 1, replicas=[[1, 2]])
    state = partitions.get("t", 0)
    assert append_records(partitions, "t", 0, batch(values("a", 3))).error == 0
    change_leader(partitions, "t", 0, 2)  # epoch 1 from offset 3
    assert append_records(partitions, "t", 0, batch(values("b", 2))).error == 0
    return state


def test_the_epoch_cache_ends_an_old_epoch_where_the_next_led_one_starts() -> None:
    partitions = _partitions(2)
    state = _two_epochs(partitions)
    assert state.epoch_cache == [(0, 0), (1, 3)]
    assert end_offset_for_epoch(state.log, 1, 0, state.epoch_cache) == (0, 3)
    assert end_offset_for_epoch(state.log, 1, 1, state.epoch_cache) == (1, 5)
    assert end_offset_for_epoch(state.log, 1, 2, state.epoch_cache) == (-1, -1)
    change_leader(partitions, "t", 0, -1)  # epoch 2: nobody leads, nothing is assigned
    change_leader(partitions, "t", 0, 1)  # epoch 3 from offset 5
    assert end_offset_for_epoch(state.log, 3, 2, state.epoch_cache) == (1, 5)


def test_earliest_offsets_carry_the_epoch_their_log_start_was_written_in() -> None:
    state = _two_epochs(_partitions(2))
    earliest = offset_for_timestamp(state.log, EARLIEST, 1, state.log.high_watermark, state.epoch_cache)
    assert (earliest.offset, earliest.leader_epoch) == (0, 0)  # not the current epoch, 1
    state.log.delete_records(4)  # Kafka cuts its epoch cache at the new log start: epoch 1 starts there now
    assert earliest_epoch(state.log, 1, state.epoch_cache) == 1
    assert earliest_epoch(state.log, 1, [(1, 6)]) == -1  # no entry starts at or before the log start


def test_the_coordinator_is_the_leader_of_the_keys_partition() -> None:
    partitions = _partitions(3)
    assert partitions.cluster.coordinator("__consumer_offsets", "g") is None
    partitions.create_topic("__consumer_offsets", 50, replicas=[[1 + i % 3] for i in range(50)])
    # Utils.abs("billing".hashCode()) % 50 picks the partition; its leader coordinates
    node = partitions.cluster.coordinator("__consumer_offsets", "billing")
    index = next(i for i in range(50) if partitions.cluster.topics["__consumer_offsets"].partitions[i].leader_id == node)
    assert node in (1, 2, 3) and index >= 0


def test_a_reassignment_waits_for_a_stopped_new_replica_and_can_be_cancelled() -> None:
    partitions = _partitions(4)
    topic = partitions.create_topic("t", 1, replicas=[[1, 2]])
    node_down(partitions, 3)
    reassign(partitions, "t", 0, [3, 2])
    p = topic.partitions[0]
    assert (p.replicas, p.adding, p.removing, p.leader_id) == ([3, 2, 1], [3], [1], 1)  # ongoing, led as before
    reassign(partitions, "t", 0, None)  # cancelled: the adding replicas go (PartitionReassignmentRevert keeps the order)
    assert (p.replicas, p.adding, p.removing, p.leader_id) == ([2, 1], [], [], 1)
    reassign(partitions, "t", 0, [3, 2])
    node_up(partitions, 3)  # the new replica is back: the reassignment completes and the first live replica leads
    assert (p.replicas, p.adding, p.removing, p.isr, p.leader_id) == ([3, 2], [], [], [3, 2], 3)
    with pytest.raises(LeadershipError) as refused:
        reassign(partitions, "t", 0, [3, 9])
    assert refused.value.message == "The manual partition assignment includes broker 9, but no such broker is registered."
    with pytest.raises(LeadershipError) as none:
        reassign(partitions, "t", 0, None)
    assert (none.value.code, none.value.message) == (85, None)


def test_elections_preferred_and_unclean() -> None:
    partitions = _partitions(3)
    topic = partitions.create_topic("t", 1, replicas=[[1, 2]])
    p = topic.partitions[0]
    with pytest.raises(LeadershipError) as not_needed:
        elect(partitions, "t", 0, unclean=False)
    assert not_needed.value.code == 84
    node_down(partitions, 1)
    with pytest.raises(LeadershipError) as unavailable:
        elect(partitions, "t", 0, unclean=False)  # the preferred replica is down
    assert unavailable.value.code == 80
    node_up(partitions, 1)
    elect(partitions, "t", 0, unclean=False)
    assert p.leader_id == 1
    node_down(partitions, 2)
    node_down(partitions, 1)
    assert p.leader_id == -1
    node_up(partitions, 2)  # 2 is not in the ISR ([1]): it does not lead by itself ...
    assert p.leader_id == 2  # ... but node_up gives a leaderless partition to a replica that is back

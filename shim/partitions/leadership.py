"""Leader changes: a partition moved to another replica, a node of the cluster going down or coming back, a
partition left without a leader (shim.faults). Each change bumps the leader epoch, as KRaft's PartitionChangeRecord
does, and the new leader's epoch starts at the log end in the partition's leader-epoch cache (Partition.makeLeader,
LeaderEpochFileCache.assign), so that consumers validating their position (OffsetForLeaderEpoch) read on.
"""

from __future__ import annotations

from kafka_shim.shim.partitions.manager import Partitions


def change_leader(partitions: Partitions, topic: str, index: int, leader: int) -> bool:
    """Make ``leader`` (-1: nobody) lead the partition; False when it already did."""
    partition = partitions.cluster.topics[topic].partitions[index]
    if partition.leader_id == leader:
        return False
    state = partitions.get(topic, index)
    if state is not None and not state.epoch_cache:
        state.epoch_cache.append((partition.leader_epoch, state.log.log_start_offset))
    partition.leader_id = leader
    partition.leader_epoch += 1
    if state is not None and leader >= 0:
        state.epoch_cache.append((partition.leader_epoch, state.log.log_end_offset))
    return True


def node_down(partitions: Partitions, node: int) -> list[tuple[str, int]]:
    """A node stops: it leaves every ISR, and the partitions it led move to the next in-sync replica (or have no
    leader when it was the only one). Returns the partitions that changed leader."""
    cluster = partitions.cluster
    cluster.down.add(node)
    moved = []
    for topic in cluster.topics.values():
        for partition in topic.partitions:
            if node in partition.isr and len(partition.isr) > 1:
                partition.isr.remove(node)  # KRaft keeps the last in-sync replica in the ISR
            if partition.leader_id == node:
                candidates = [r for r in partition.isr if r not in cluster.down]
                change_leader(partitions, topic.name, partition.index, candidates[0] if candidates else -1)
                moved.append((topic.name, partition.index))
    return moved


def node_up(partitions: Partitions, node: int) -> list[tuple[str, int]]:
    """A stopped node is back: it rejoins the ISR of its partitions (the logs are shared, it has caught up at once)
    and leads those that had no leader. Returns the partitions that changed leader."""
    cluster = partitions.cluster
    cluster.down.discard(node)
    moved = []
    for topic in cluster.topics.values():
        for partition in topic.partitions:
            if node not in partition.replicas:
                continue
            if node not in partition.isr:
                partition.isr = [r for r in partition.replicas if r in partition.isr or r == node]
            if partition.leader_id < 0:
                change_leader(partitions, topic.name, partition.index, node)
                moved.append((topic.name, partition.index))
    return moved

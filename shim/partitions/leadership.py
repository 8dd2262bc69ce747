"""Leader changes: a partition moved to another replica, a node of the cluster going down or coming back, a
partition left without a leader (shim.faults). Each change bumps the leader epoch, as KRaft's PartitionChangeRecord
does, and the new leader's epoch starts at the log end in the partition's leader-epoch cache (Partition.makeLeader,
LeaderEpochFileCache.assign), so that consumers validating their position (OffsetForLeaderEpoch) read on.
"""

from __future__ import annotations

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.partitions.manager import Partitions, assign_epoch
from kafka_shim.shim.partitions.topic_admin import manual_assignment_problem


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
        state.epoch_cache = assign_epoch(state.epoch_cache, partition.leader_epoch, state.log.log_end_offset)
    if state is not None:
        partitions.save_epochs(state)
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
    complete_reassignments(partitions)
    return moved


# -- ElectLeaders and AlterPartitionReassignments (ReplicationControlManager) -----------------------------------------

ELECTION_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."
PREFERRED_LEADER_NOT_AVAILABLE_MESSAGE = "The preferred leader was not available."
ELIGIBLE_LEADERS_NOT_AVAILABLE_MESSAGE = "Eligible topic partition leaders are not available."


class LeadershipError(Exception):
    """A partition the controller refuses to change: Kafka's error code and message."""

    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def elect(partitions: Partitions, topic: str, index: int, unclean: bool) -> None:
    """ReplicationControlManager.electLeader: the preferred replica (the first) leads if it is live and in sync; an
    unclean election makes any live replica lead a partition that has no leader. LeadershipError otherwise."""
    cluster = partitions.cluster
    found = cluster.topics.get(topic)
    if found is None:
        raise LeadershipError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
    if not 0 <= index < len(found.partitions):
        raise LeadershipError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}")
    partition = found.partitions[index]
    preferred = partition.replicas[0] if partition.replicas else -1
    if (not unclean and partition.leader_id == preferred) or (unclean and partition.leader_id >= 0):
        raise LeadershipError(ErrorCode.ELECTION_NOT_NEEDED, ELECTION_NOT_NEEDED_MESSAGE)
    live = [r for r in partition.replicas if r not in cluster.down]
    if not unclean:
        if preferred in partition.isr and preferred not in cluster.down:
            change_leader(partitions, topic, index, preferred)
            return
        raise LeadershipError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, PREFERRED_LEADER_NOT_AVAILABLE_MESSAGE)
    in_sync = [r for r in partition.isr if r in live]
    chosen = in_sync or live
    if not chosen:
        raise LeadershipError(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE_MESSAGE)
    if chosen[0] not in partition.isr:
        partition.isr = [chosen[0]]  # an unclean leader starts a new ISR of its own
    change_leader(partitions, topic, index, chosen[0])


def reassign(partitions: Partitions, topic: str, index: int, target: list[int] | None) -> None:
    """ReplicationControlManager.alterPartitionReassignment: move the partition to ``target`` (None: cancel the
    ongoing reassignment). The logs are shared, so live new replicas are in sync at once and the reassignment
    completes in the same step; one that waits for a stopped node stays ongoing until the node is back."""
    cluster = partitions.cluster
    found = cluster.topics.get(topic)
    if found is None:
        raise LeadershipError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}.")
    if not 0 <= index < len(found.partitions):
        raise LeadershipError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}.")
    partition = found.partitions[index]
    if target is None:
        if not (partition.adding or partition.removing):
            # ApiError.fromThrowable drops a message that is the error's default one: the answer carries none.
            raise LeadershipError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
        original = [r for r in partition.replicas if r not in partition.adding]
        partition.adding, partition.removing = [], []
        _settle(partitions, topic, index, original)
        return
    problem = manual_assignment_problem(target, set(cluster.node_ids))
    if problem is not None:
        raise LeadershipError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
    current = [r for r in partition.replicas if r not in partition.adding] if partition.adding else list(partition.replicas)
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    if any(r in cluster.down for r in adding):
        # PartitionReassignmentReplicas: the target first, then the replicas being removed.
        partition.replicas = list(target) + removing
        partition.adding, partition.removing = adding, removing
        return
    partition.adding, partition.removing = [], []
    _settle(partitions, topic, index, list(target))


def complete_reassignments(partitions: Partitions) -> None:
    """A node is back: the reassignments that waited for it are done."""
    cluster = partitions.cluster
    for topic in cluster.topics.values():
        for partition in topic.partitions:
            if partition.adding and not any(r in cluster.down for r in partition.adding):
                target = [r for r in partition.replicas if r not in partition.removing]
                partition.adding, partition.removing = [], []
                _settle(partitions, topic.name, partition.index, target)


def _settle(partitions: Partitions, topic: str, index: int, replicas: list[int]) -> None:
    """The partition's replicas become ``replicas``: the live ones in sync; its leader stays if it is one of them,
    else the first live in-sync replica leads."""
    cluster = partitions.cluster
    partition = cluster.topics[topic].partitions[index]
    partition.replicas = list(replicas)
    live = [r for r in replicas if r not in cluster.down]
    partition.isr = live or [r for r in replicas if r in partition.isr][:1]
    if partition.leader_id not in live:
        change_leader(partitions, topic, index, live[0] if live else -1)

"""ElectLeaders (43), AlterPartitionReassignments (45) and ListPartitionReassignments (46) against a real Kafka 3.9:
the same answers, authorized and denied, for every version, on a single node (node 1) holding the same topics."""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    CreateTopicsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from tests.support.acl_peers import ALTER, ANONYMOUS, CLUSTER, CREATE, DESCRIBE, Peers, acl

ELECT, ALTER_REASSIGN, LIST_REASSIGN, CREATE_TOPICS = 43, 45, 46, 19
E = ElectLeadersRequest
A = AlterPartitionReassignmentsRequest
L = ListPartitionReassignmentsRequest


@pytest.fixture
def topic(peers: Peers) -> str:
    """A fresh two-partition topic on both brokers (the real one lives for the session: a new name each test)."""
    name = f"leaders-{uuid.uuid4().hex[:8]}"
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=CREATE))
    kafka, shim = peers.both(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
        CreateTopicsRequest.CreatableTopic(name=name, num_partitions=2, replication_factor=1)]))
    assert kafka.body.topics[0].error_code == 0 and shim.body.topics[0].error_code == 0
    return name


def _may(peers: Peers, operation: int) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=operation))


def _elect(topic: str, partitions: list[int], election: int = 0) -> E:
    return E(election_type=election, timeout_ms=30000, topic_partitions=[E.TopicPartitions(topic=topic, partitions=partitions)])


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elect_leaders_denied_without_alter_on_the_cluster(peers: Peers, topic: str, version: int) -> None:
    _may(peers, DESCRIBE)  # DESCRIBE is not enough
    peers.same(ELECT, version, _elect(topic, [0, 1]), f"ElectLeaders v{version} denied")


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize("election", [0, 1])
def test_elect_leaders_on_one_node_needs_no_election(peers: Peers, topic: str, version: int, election: int) -> None:
    _may(peers, ALTER)
    body = E(election_type=election, timeout_ms=30000, topic_partitions=[
        E.TopicPartitions(topic=topic, partitions=[1, 0, 7]), E.TopicPartitions(topic=f"{topic}-missing", partitions=[0])])
    if version == 0 and election == 1:
        pytest.skip("v0 has no election type")
    peers.same(ELECT, version, body, f"ElectLeaders v{version} election {election}")


@pytest.mark.parametrize("version", [1, 2])
def test_elect_leaders_refuses_an_unknown_election_type(peers: Peers, topic: str, version: int) -> None:
    _may(peers, ALTER)
    peers.same(ELECT, version, _elect(topic, [0], election=5), f"ElectLeaders v{version} election type 5")


def test_elect_leaders_for_every_partition_lists_topics_without_partitions(peers: Peers, topic: str) -> None:
    _may(peers, ALTER)
    kafka, shim = peers.both(ELECT, 2, E(election_type=0, timeout_ms=30000, topic_partitions=None))
    for answer in (kafka, shim):
        results = {r.topic: r.partition_result for r in answer.body.replica_election_results}
        assert results[topic] == []  # every partition has its preferred leader: none is listed
        assert all(partitions == [] for partitions in results.values())


def _reassign(topic: str, *partitions: tuple[int, list[int] | None]) -> A:
    return A(timeout_ms=30000, topics=[A.ReassignableTopic(name=topic, partitions=[
        A.ReassignablePartition(partition_index=index, replicas=replicas) for index, replicas in partitions])])


def test_alter_partition_reassignments_denied_without_alter_on_the_cluster(peers: Peers, topic: str) -> None:
    _may(peers, DESCRIBE)
    peers.same(ALTER_REASSIGN, 0, _reassign(topic, (0, [1])), "AlterPartitionReassignments denied")


@pytest.mark.parametrize("replicas", [[1], [], [2], [1, 1], [1, 2], None], ids=str)
def test_alter_partition_reassignments_checks_each_replica_list(peers: Peers, topic: str, replicas: list[int] | None) -> None:
    _may(peers, ALTER)
    peers.same(ALTER_REASSIGN, 0, _reassign(topic, (0, replicas), (5, [1])), f"AlterPartitionReassignments to {replicas}")


def test_alter_partition_reassignments_of_an_unknown_topic(peers: Peers, topic: str) -> None:
    _may(peers, ALTER)
    peers.same(ALTER_REASSIGN, 0, _reassign(f"{topic}-missing", (0, [1])), "AlterPartitionReassignments unknown topic")


@pytest.mark.parametrize("body", [L(timeout_ms=30000, topics=None), None], ids=["all", "named"])
def test_list_partition_reassignments_finds_none_ongoing(peers: Peers, topic: str, body: L | None) -> None:
    if body is None:
        body = L(timeout_ms=30000, topics=[L.ListPartitionReassignmentsTopics(name=topic, partition_indexes=[0, 1, 9]),
                                           L.ListPartitionReassignmentsTopics(name=f"{topic}-missing", partition_indexes=[0])])
    _may(peers, DESCRIBE)
    peers.same(LIST_REASSIGN, 0, body, "ListPartitionReassignments")
    peers.reset()
    peers.same(LIST_REASSIGN, 0, body, "ListPartitionReassignments denied")

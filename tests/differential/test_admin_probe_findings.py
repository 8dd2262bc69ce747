"""What a random differential probe of the admin APIs found kafka-shim answering unlike Kafka 3.9, compared again with a
Kafka of this module's own (so that both brokers hold exactly the same topics, created in the same order):

- AlterPartitionReassignments naming no topic: QuorumController answers at once, message "" (not null), whatever the
  timeout; ElectLeaders with an empty (not null) list likewise, whatever the election type and timeout.
- ElectLeaders with a timeout <= 0 and an unknown election type: the passed deadline wins (REQUEST_TIMED_OUT).
- ElectLeaders for every partition lists the topics in the order of the controller's TimelineHashMap of topics by name.
- AlterReplicaLogDirs answers in the order of KafkaApis' ``groupBy`` over ReplicaManager's Scala map.
- ListClientMetricsResources lists in the order of ClientMetricsManager's ConcurrentHashMap.
- AlterClientQuotas reports the first refused value in the order of the controller's ``new HashMap<>(ops.size())``.
- DescribeQuorum v2 lists the voter's controller endpoint from ``controller.quorum.voters``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import (
    AlterClientQuotasRequest,
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    CreateTopicsRequest,
    DescribeQuorumRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListClientMetricsResourcesRequest,
)
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_peers import ALTER, ANONYMOUS, CLUSTER, CREATE, DESCRIBE, Peers, acl, secured_config
from tests.support.peers import RealKafka, start_real_kafka, stop_real_kafka

ELECT, ALTER_REASSIGN, ALTER_LOG_DIRS, ALTER_QUOTAS, CREATE_TOPICS = 43, 45, 34, 49, 19
INCREMENTAL_ALTER_CONFIGS, LIST_CLIENT_METRICS, DESCRIBE_QUORUM = 44, 74, 55
DESCRIBE_CONFIGS, ALTER_CONFIGS = 10, 11
CLIENT_METRICS_RESOURCE = 16
E = ElectLeadersRequest
A = AlterPartitionReassignmentsRequest
Q = AlterClientQuotasRequest
R = AlterReplicaLogDirsRequest


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    """This module's own Kafka: no topic but those the tests below create, on both brokers alike."""
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-admin-probe"))
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="module")
def shim_secured(oracle: RealKafka) -> Iterator[EmbeddedBroker]:
    """kafka-shim as the module's Kafka, with the same static quorum (its controller endpoint)."""
    quorum = {"controller.listener.names": "CONTROLLER", "controller.quorum.voters": f"1@127.0.0.1:{oracle.info['ports']['CONTROLLER']}"}
    with EmbeddedBroker(secured_config(**quorum)) as broker:
        yield broker


def _may(peers: Peers, *operations: int) -> None:
    peers.grant(*(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=op) for op in operations))


def _create(peers: Peers, *names: str, partitions: int = 1) -> None:
    """The topics on both brokers, one request each, so that each broker creates them in this order."""
    for name in names:
        kafka, shim = peers.both(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)]))
        assert kafka.body.topics[0].error_code == 0 and shim.body.topics[0].error_code == 0, (kafka, shim)


@pytest.mark.parametrize("timeout", [30000, 0, -1])
def test_alter_partition_reassignments_naming_no_topic(peers: Peers, timeout: int) -> None:
    _may(peers, ALTER)
    peers.same(ALTER_REASSIGN, 0, A(timeout_ms=timeout, topics=[]), f"AlterPartitionReassignments of nothing, timeout {timeout}")


# v0 has no election type: it is always 0 there.
_EMPTY_ELECTIONS = [(version, election, timeout) for version in (0, 1, 2)
                    for election, timeout in [(0, 30000), (5, 30000), (-1, 0), (1, -1)] if version or election == 0]


@pytest.mark.parametrize(("version", "election", "timeout"), _EMPTY_ELECTIONS)
def test_elect_leaders_with_an_empty_list(peers: Peers, version: int, election: int, timeout: int) -> None:
    _may(peers, ALTER)
    peers.same(ELECT, version, E(election_type=election, timeout_ms=timeout, topic_partitions=[]),
               f"ElectLeaders v{version} of nothing, election {election}, timeout {timeout}")


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("timeout", [0, -1])
def test_elect_leaders_past_its_deadline_with_an_unknown_election_type(peers: Peers, version: int, timeout: int) -> None:
    _may(peers, ALTER)
    body = E(election_type=-1, timeout_ms=timeout, topic_partitions=[E.TopicPartitions(topic="probe-missing", partitions=[0, 1])])
    peers.same(ELECT, version, body, f"ElectLeaders v{version} election -1, timeout {timeout}")


def test_alter_replica_log_dirs_answers_in_kafkas_map_order(peers: Peers) -> None:
    _may(peers, ALTER)
    # An unknown directory (the same on both; the real ones differ) and topics that need not exist: every partition
    # is refused alike, what is compared is where each comes in the answer.
    body = R(dirs=[
        R.AlterReplicaLogDir(path="/no/such/dir", topics=[R.AlterReplicaLogDirTopic(name=name, partitions=[0, 1, 2, 3])
                                                          for name in ("ard-a", "ard-b", "ard-c")]),
        R.AlterReplicaLogDir(path="relative", topics=[R.AlterReplicaLogDirTopic(name="ard-b", partitions=[1, 7])]),
    ])
    for version in (0, 1, 2):
        peers.same(ALTER_LOG_DIRS, version, body, f"AlterReplicaLogDirs v{version}")


def test_alter_client_quotas_reports_the_first_refused_key_of_kafkas_map(peers: Peers) -> None:
    _may(peers, ALTER_CONFIGS)
    entity = [Q.EntityData(entity_type="user", entity_name="probe-user")]
    ops = [Q.OpData(key="request_percentage", value=100.0, remove=False), Q.OpData(key="consumer_byte_rate", value=50.5, remove=False),
           Q.OpData(key="", value=1e300, remove=False)]
    for version in (0, 1):
        peers.same(ALTER_QUOTAS, version, Q(entries=[Q.EntryData(entity=entity, ops=ops)], validate_only=True), f"AlterClientQuotas v{version}")


def test_list_client_metrics_resources_in_kafkas_map_order(peers: Peers) -> None:
    _may(peers, ALTER_CONFIGS, DESCRIBE_CONFIGS)
    names = [f"cm-order-{i}" for i in range(4)]  # Kafka's map holds them as 1, 0, 3, 2
    for name in names:
        kafka, shim = peers.both(INCREMENTAL_ALTER_CONFIGS, 1, IncrementalAlterConfigsRequest(validate_only=False, resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=CLIENT_METRICS_RESOURCE, resource_name=name, configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name="interval.ms", config_operation=0, value="10000")])]))
        assert kafka.body.responses[0].error_code == 0 and shim.body.responses[0].error_code == 0, (kafka, shim)
    deadline = time.monotonic() + 15  # Kafka's broker learns the subscriptions from the controller asynchronously
    while True:
        kafka, _ = peers.both(LIST_CLIENT_METRICS, 0, ListClientMetricsResourcesRequest())
        if len(kafka.body.client_metrics_resources) == len(names) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    peers.same(LIST_CLIENT_METRICS, 0, ListClientMetricsResourcesRequest(), "ListClientMetricsResources")


def test_elect_leaders_for_every_partition_in_the_controllers_order(peers: Peers) -> None:
    _may(peers, CREATE, ALTER)
    _create(peers, *(f"probe-el-{i}" for i in range(5)), partitions=2)  # Kafka's table: 2, 4, 1, 3, 0
    for version in (0, 1, 2):
        peers.same(ELECT, version, E(election_type=0, timeout_ms=30000, topic_partitions=None), f"ElectLeaders v{version} of everything")


def test_describe_quorum_lists_the_voters_controller_endpoint(peers: Peers) -> None:
    _may(peers, DESCRIBE)
    body = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(topic_name="__cluster_metadata", partitions=[
        DescribeQuorumRequest.PartitionData(partition_index=0)])])
    kafka, shim = peers.both(DESCRIBE_QUORUM, 2, body)
    assert [(n.node_id, [(x.name, x.host, x.port) for x in n.listeners]) for n in shim.body.nodes] == \
        [(n.node_id, [(x.name, x.host, x.port) for x in n.listeners]) for n in kafka.body.nodes]

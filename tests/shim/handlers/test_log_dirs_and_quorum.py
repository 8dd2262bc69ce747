"""DescribeLogDirs, AlterReplicaLogDirs and DescribeQuorum where no real Kafka can be the judge: a broker in memory,
several configured log directories, and a cluster of several nodes in one process.

The single-node answers on disk are compared with Kafka 3.9 in tests/differential/test_log_dirs.py and
test_describe_quorum.py.
"""

from __future__ import annotations

from pathlib import Path

from kafka_shim.protocol.messages import AlterReplicaLogDirsRequest, DescribeLogDirsRequest, DescribeQuorumRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.client.wire import WireClient
from kafka_shim.shim.handlers.log_dirs import MEMORY_LOG_DIR, absolute_log_dir
from tests.support.acl_helpers import config, running

A = AlterReplicaLogDirsRequest
BATCH = encode_batch(build_batch([(b"k", b"v" * 100, [], 1_700_000_000_000)]))


def _alter(path: str, topic: str, partitions: list[int]) -> A:
    return A(dirs=[A.AlterReplicaLogDir(path=path, topics=[A.AlterReplicaLogDirTopic(name=topic, partitions=partitions)])])


def _codes(answer) -> dict[tuple[str, int], int]:
    return {(t.topic_name, p.partition_index): p.error_code for t in answer.results for p in t.partitions}


def _hosted(answer) -> dict[str, dict[str, dict[int, int]]]:
    return {r.log_dir: {t.name: {p.partition_index: p.partition_size for p in t.partitions} for t in r.topics} for r in answer.results}


async def _client(broker: Broker, node: int = 0) -> WireClient:
    host, port = broker.bootstrap_servers.split(",")[node].rsplit(":", 1)
    return await WireClient.connect(host, int(port))


async def test_in_memory_one_virtual_directory_with_the_bytes_held() -> None:
    async with running(config(authorizer=False)) as broker:
        broker.services.partitions.create_topic("orders", 2)
        client = await _client(broker)
        try:
            produced = await client.request(0, 9, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
                name="orders", partition_data=[ProduceRequest.PartitionProduceData(index=1, records=BATCH)])]))
            assert produced.responses[0].partition_responses[0].error_code == 0
            answer = await client.request(35, 4, DescribeLogDirsRequest(topics=None))
            assert _hosted(answer) == {MEMORY_LOG_DIR: {"orders": {0: 0, 1: len(BATCH)}}}
            assert (answer.results[0].total_bytes, answer.results[0].usable_bytes) == (-1, -1)  # no volume to report
            # The virtual directory is where every replica is; anything else is not a log directory.
            moved = await client.request(34, 2, A(dirs=[
                A.AlterReplicaLogDir(path=MEMORY_LOG_DIR, topics=[A.AlterReplicaLogDirTopic(name="orders", partitions=[0])]),
                A.AlterReplicaLogDir(path="/tmp", topics=[A.AlterReplicaLogDirTopic(name="orders", partitions=[1])])]))
            assert _codes(moved) == {("orders", 0): 0, ("orders", 1): 57}
        finally:
            await client.close()


async def test_several_log_dirs_partitions_in_the_first_and_no_moves(tmp_path: Path) -> None:
    first, second, missing = tmp_path / "a", tmp_path / "b", tmp_path / "never-made"
    first.mkdir()
    second.mkdir()
    # Kafka refuses to start with a directory named twice; kafka-shim starts and reports each directory once.
    dirs = f"{first}/,{second},{first},{missing}"
    async with running(config(authorizer=False, log_dirs=dirs)) as broker:
        broker.services.partitions.create_topic("orders", 1)
        client = await _client(broker)
        try:
            answer = await client.request(35, 4, DescribeLogDirsRequest(topics=None))
            assert [(r.log_dir, r.error_code) for r in answer.results] == [(str(first), 0), (str(second), 0), (str(missing), 56)]
            assert _hosted(answer)[str(first)] == {"orders": {0: 0}} and _hosted(answer)[str(second)] == {}
            assert answer.results[1].total_bytes >= answer.results[1].usable_bytes >= 0
            # Moving the replica to the second directory would need a copy kafka-shim does not make: 56, not a 0 that
            # would leave a reassignment waiting.
            assert _codes(await client.request(34, 2, _alter(str(second), "orders", [0]))) == {("orders", 0): 56}
            assert _codes(await client.request(34, 2, _alter(str(first), "orders", [0]))) == {("orders", 0): 0}
        finally:
            await client.close()


def test_absolute_log_dir_is_javas_absolute_path(monkeypatch) -> None:
    monkeypatch.chdir("/tmp")
    assert absolute_log_dir("data//x/") == "/tmp/data/x"
    assert absolute_log_dir("/var/lib/kafka/") == "/var/lib/kafka"
    assert absolute_log_dir("/a/../b") == "/a/../b"  # Paths.toAbsolutePath resolves nothing


async def test_cluster_nodes_describe_their_own_replicas_and_one_quorum() -> None:
    async with running(config(authorizer=False, kafka_shim_brokers="2", node_id="1")) as broker:
        broker.services.partitions.create_topic("orders", 2, replicas=[[1], [2]])
        first, second = await _client(broker, 0), await _client(broker, 1)
        try:
            for client, node, other in ((first, 1, 1), (second, 2, 0)):
                hosted = _hosted(await client.request(35, 4, DescribeLogDirsRequest(topics=None)))
                assert hosted == {MEMORY_LOG_DIR: {"orders": {node - 1: 0}}}
                codes = _codes(await client.request(34, 2, A(dirs=[A.AlterReplicaLogDir(path=MEMORY_LOG_DIR, topics=[
                    A.AlterReplicaLogDirTopic(name="orders", partitions=[node - 1, other])])])))
                assert codes == {("orders", node - 1): 0, ("orders", other): 9}  # no replica here: REPLICA_NOT_AVAILABLE
            request = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
                topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])
            for client in (first, second):  # a broker forwards it, so every node answers alike
                answer = await client.request(55, 2, request)
                partition = answer.topics[0].partitions[0]
                assert (partition.leader_id, [v.replica_id for v in partition.current_voters], [o.replica_id for o in partition.observers]) \
                    == (1, [1], [2])
                assert [(n.node_id, n.listeners) for n in answer.nodes] == [(1, [])]
        finally:
            await first.close()
            await second.close()

"""DescribeProducers (61) against a real Kafka 3.9: an idempotent producer's state after writing to both brokers,
denied and unknown topics, illegal names; and `kafka-transactions.sh describe-producers` against kafka-shim."""

from __future__ import annotations

import subprocess
import sys
import uuid

from confluent_kafka import Producer

from kafka_shim.protocol.messages import CreateTopicsRequest, DescribeProducersRequest
from kafka_shim.shim.testing.handle import KafkaShim
from tests.support.acl_peers import ANONYMOUS, CLUSTER, CREATE, READ, TOPIC, WRITE, Peers, acl
from tests.support.peers import REAL_KAFKA

DESCRIBE_PRODUCERS, CREATE_TOPICS = 61, 19
D = DescribeProducersRequest
# Each broker hands out its own producer ids and the records carry their own timestamps.
VARYING = ("topics.*.partitions.*.active_producers.*.producer_id", "topics.*.partitions.*.active_producers.*.last_timestamp")


def _produce(address: tuple[str, int], topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": "{}:{}".format(*address), "enable.idempotence": True, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode(), partition=0)
        producer.flush(60)  # one batch each: the last sequence counts them
    assert producer.flush(60) == 0


def test_describe_producers_as_kafka(peers: Peers) -> None:
    topic = f"producers-{uuid.uuid4().hex[:8]}"
    secret = f"{topic}-secret"
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=CREATE),
                acl(rtype=TOPIC, name=topic, principal=ANONYMOUS, operation=WRITE),
                acl(rtype=TOPIC, name=topic, principal=ANONYMOUS, operation=READ))
    kafka, shim = peers.both(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
        CreateTopicsRequest.CreatableTopic(name=name, num_partitions=2, replication_factor=1) for name in (topic, secret)]))
    assert [t.error_code for t in kafka.body.topics] == [0, 0] == [t.error_code for t in shim.body.topics]
    for address in (peers.oracle.plaintext, peers.shim_address):
        _produce(address, topic, 3)
    body = D(topics=[D.TopicRequest(name=topic, partition_indexes=[0, 1, 7]), D.TopicRequest(name=secret, partition_indexes=[0]),
                     D.TopicRequest(name=f"{topic}-missing", partition_indexes=[0]), D.TopicRequest(name="bad/name", partition_indexes=[0])])
    kafka, shim = peers.same(DESCRIBE_PRODUCERS, 0, body, "DescribeProducers", ignore=VARYING)
    [producer] = shim.body.topics[0].partitions[0].active_producers
    assert (producer.producer_epoch, producer.last_sequence) == (0, 2)


def test_kafka_transactions_describe_producers() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        host, port = shim.bootstrap_servers.split(":")
        _produce((host, int(port)), "orders", 2)
        proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", "org.apache.kafka.tools.TransactionsCommand",
                               "--bootstrap-server", shim.bootstrap_servers, "describe-producers", "--topic", "orders",
                               "--partition", "0"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        header, row = proc.stdout.strip().splitlines()
        assert header.split() == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                                  "LastTimestamp", "CurrentTransactionStartOffset"]
        assert row.split()[1:4] + row.split()[5:] == ["0", "-1", "1", "None"]

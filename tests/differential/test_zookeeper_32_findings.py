"""Differences a random differential probe (seeds against real 3.2.3 in ZooKeeper mode, /tmp/old-probe/probe.py) found
between real Kafka 3.2.3 and kafka-shim with ``kafka.version=3.2``, each pinned as the same request to both brokers,
answers compared field by field.

scripts/real-kafka starts 3.2.3 in ZooKeeper mode with AclAuthorizer and the same SASL users and super users as the
other oracles, here with auto.create.topics.enable=true; kafka-shim runs with ``kafka.version=3.2`` and the same. One
real broker for the module; every test names its own topics.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import FetchRequest, MetadataRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.config.broker_config import BrokerConfig
from tests.differential.test_kraft_release_findings import Pair, release_pair
from tests.support.compare import assert_same
from tests.support.peers import INTERNAL_TOPIC_PROPERTIES
from tests.support.sasl_setup import sasl_properties

LINE, RELEASE = "3.2", "3.2.3"  # the emulated release line and the real release that judges it
UNKNOWN_REPLICA = 2  # a single-node cluster: no partition has a follower with this id
METADATA_IGNORED = ("cluster_id", "brokers.*.port", "topics.*.topic_id")


def shim_config() -> BrokerConfig:
    """kafka-shim as scripts/real-kafka configures a ZooKeeper-mode Kafka: the same users and super users, AclAuthorizer."""
    return BrokerConfig.from_properties(sasl_properties() | {
        "kafka.version": LINE,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin;User:broker",
        "allow.everyone.if.no.acl.found": "false",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
    } | INTERNAL_TOPIC_PROPERTIES)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    yield from release_pair(tmp_path_factory.mktemp(f"kafka-{RELEASE}"), RELEASE, shim_config(),
                            "ZooKeeper 3.2 findings (ZooKeeper mode)", "auto.create.topics.enable=true")


def _what(text: str) -> str:
    return f"{text} (Kafka {RELEASE} vs kafka-shim kafka.version={LINE})"


def _topic_with_three_records(pair: Pair, name: str) -> None:
    pair.create_topic(name)
    batch = encode_batch(build_batch([(b"k", f"v{i}".encode(), [], 1_700_000_000_000 + i) for i in range(3)]))
    body = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name=name, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    deadline = time.monotonic() + 30
    # ZooKeeper mode elects the new partition's leader a moment after CreateTopics answers: retried while 6 / 5
    while True:
        kafka, shim = pair.both(ApiKey.PRODUCE, 3, body)
        codes = [a.body.responses[0].partition_responses[0].error_code for a in (kafka, shim)]
        if codes == [0, 0] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert codes == [0, 0], (kafka, shim)


@pytest.mark.parametrize("offset", [0, 100], ids=["in-range", "past-the-end"])
def test_follower_fetch_from_an_unknown_replica(pair: Pair, offset: int) -> None:
    """Before KAFKA-13837 (3.3) a follower fetch (admin: CLUSTER_ACTION) from a replica id the partition does not know
    was read all the same, the records then dropped: an offset past the log end answers OFFSET_OUT_OF_RANGE (1) and
    one in range 0 with no records, where 3.3+ refuse the replica first (6)."""
    topic = f"zk32-follower-fetch-{offset}"
    _topic_with_three_records(pair, topic)
    body = FetchRequest(replica_id=UNKNOWN_REPLICA, max_wait_ms=0, min_bytes=0, max_bytes=1048576, isolation_level=0, session_id=0,
                        session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                            partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1, partition_max_bytes=65536)])],
                        forgotten_topics_data=[], rack_id="")
    kafka, shim = pair.both(ApiKey.FETCH, 7, body)
    assert_same(kafka, shim, what=_what(f"a follower Fetch v7 at offset {offset} from replica {UNKNOWN_REPLICA}"))


@pytest.mark.parametrize("version", [0, 4, 9])
def test_metadata_auto_creation_answers_leader_not_available(pair: Pair, version: int) -> None:
    """A ZooKeeper-mode broker auto-creates a missing topic itself (AutoTopicCreationManager.createTopicsInZk) and
    answers it LEADER_NOT_AVAILABLE (5), where a KRaft broker forwards the creation to its controller and answers 3."""
    name = f"zk32-auto-created-v{version}"
    body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=True)
    kafka, shim = pair.both(ApiKey.METADATA, version, body)
    assert_same(kafka, shim, ignore=METADATA_IGNORED, what=_what(f"Metadata v{version} of a topic it auto-creates"))

"""DescribeLogDirs (35) and AlterReplicaLogDirs (34) against a real Kafka 3.9, every version, allowed and denied.

Both brokers keep their partitions on disk (kafka-shim with ``log.dirs``) and hold the same topic with the same
batch produced to it, so partition sizes compare exactly. Normalised before comparing: each broker's own log
directory (checked to be the absolute path it was configured with), the volume sizes (checked to be a real
file system's), answer order (Kafka's comes from hash maps), and, for a request of every topic, the topics
other tests of the session left on the long-lived Kafka. AlterReplicaLogDirs is sent to each broker with its own
directory in place of ``OWN``, since the paths are the request's subject.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_shim.protocol.messages import (
    AlterReplicaLogDirsRequest,
    CreateTopicsRequest,
    DescribeLogDirsRequest,
    ProduceRequest,
)
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_peers import ALLOW, ALTER, ANONYMOUS, CLUSTER, DENY, DESCRIBE, TOPIC, WRITE, Peers, acl, secured_config
from tests.support.compare import field_diff
from tests.support.produce import create_topic
from tests.support.wire import Answer, Wire

DESCRIBE_LOG_DIRS, ALTER_REPLICA_LOG_DIRS, PRODUCE, CREATE_TOPICS = 35, 34, 0, 19
A = AlterReplicaLogDirsRequest
D = DescribeLogDirsRequest
OWN = "<own log dir>"
TOPIC_NAME = f"logdirs-{uuid.uuid4().hex[:8]}"
PARTITIONS = 3
BATCH = encode_batch(build_batch([(b"k", b"value-%d" % i, [("h", b"v")], 1_700_000_000_000 + i) for i in range(5)]))


@pytest.fixture(scope="module")
def shim_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shim-log-dirs")


@pytest.fixture(scope="module")
def shim_secured(shim_dir: Path) -> Iterator[EmbeddedBroker]:
    """kafka-shim configured as scripts/real-kafka configures Kafka, with its partitions on disk."""
    with EmbeddedBroker(secured_config(**{"log.dirs": str(shim_dir)})) as broker:
        yield broker


def _kafka_admin(peers: Peers) -> Wire:
    wire = Wire(peers.oracle.sasl)
    wire.sasl_plain("admin", "admin-secret")
    return wire


def _kafka_sizes(peers: Peers) -> dict[int, int]:
    with _kafka_admin(peers) as admin:
        answer = admin.request(DESCRIBE_LOG_DIRS, 4, D(topics=[D.DescribableLogDirTopic(topic=TOPIC_NAME, partitions=list(range(PARTITIONS)))]))
    return {p.partition_index: p.partition_size for r in answer.body.results for t in r.topics for p in t.partitions}


@pytest.fixture(scope="module")
def topic(oracle, shim_secured: EmbeddedBroker) -> str:
    """TOPIC_NAME on both brokers, its partitions' logs made, one identical batch in partition 0."""
    peers = Peers(oracle, shim_secured)
    with _kafka_admin(peers) as admin:
        created = admin.request(CREATE_TOPICS, 5, CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=TOPIC_NAME, num_partitions=PARTITIONS, replication_factor=1)]))
        assert created.body.topics[0].error_code == 0, created
    create_topic(shim_secured, TOPIC_NAME, PARTITIONS)
    deadline = time.monotonic() + 30
    while len(_kafka_sizes(peers)) < PARTITIONS:  # Kafka makes the logs once its broker applies the new metadata
        assert time.monotonic() < deadline, "Kafka never made the new topic's logs"
        time.sleep(0.05)
    peers.reset()
    peers.grant(acl(rtype=TOPIC, name=TOPIC_NAME, principal=ANONYMOUS, operation=WRITE))
    produce = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name=TOPIC_NAME, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=BATCH)])])
    for answer in peers.both(PRODUCE, 9, produce):
        assert answer.body.responses[0].partition_responses[0].error_code == 0, answer
    peers.reset()
    return TOPIC_NAME


def _log_dirs(answer: Answer, wanted: set[str] | None = None) -> dict[str, Any]:
    """The answer as a tree in a fixed order, topics limited to ``wanted`` (None: all), paths and volumes masked."""
    tree = answer.body.to_dict()
    tree.pop("throttle_time_ms")
    for result in tree["results"]:
        result["log_dir"] = "<dir>"
        for key in ("total_bytes", "usable_bytes"):
            if key in result:
                result[key] = "<volume>"
        result["topics"] = sorted(({**t, "partitions": sorted(t["partitions"], key=lambda p: p["partition_index"])}
                                   for t in result["topics"] if wanted is None or t["name"] in wanted), key=lambda t: t["name"])
    return tree


def _assert_volumes(answer: Answer, version: int, directory: str) -> None:
    for result in answer.body.results:
        assert result.log_dir == directory
        if version >= 4:
            assert result.total_bytes >= result.usable_bytes >= 0, result
        else:
            assert (result.total_bytes, result.usable_bytes) == (-1, -1)  # absent before v4


def _same(kafka: Answer, shim: Answer, what: str, wanted: set[str] | None = None) -> None:
    assert not kafka.closed and not shim.closed, (kafka, shim)
    diff = field_diff(_log_dirs(kafka, wanted), _log_dirs(shim, wanted))
    assert not diff, "\n  ".join([f"Kafka and kafka-shim disagree on {what}:", *diff])


REQUESTS = {
    "every topic": D(topics=None),
    "no topics": D(topics=[]),
    "some partitions": D(topics=[D.DescribableLogDirTopic(topic=TOPIC_NAME, partitions=[0, 2, 0, 7, -1]),
                                 D.DescribableLogDirTopic(topic="logdirs-missing", partitions=[0])]),
    "unknown only": D(topics=[D.DescribableLogDirTopic(topic="logdirs-missing", partitions=[0, 1])]),
}


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize("grant", [DESCRIBE, ALTER], ids=["describe", "alter implies describe"])
@pytest.mark.parametrize("name", list(REQUESTS))
def test_describe_log_dirs_allowed(peers: Peers, topic: str, shim_dir: Path, version: int, grant: int, name: str) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=grant))
    kafka, shim = peers.both(DESCRIBE_LOG_DIRS, version, REQUESTS[name])
    _same(kafka, shim, f"DescribeLogDirs v{version} ({name})", wanted={topic, "logdirs-missing"})
    _assert_volumes(kafka, version, str(peers.oracle.dir / "data"))
    _assert_volumes(shim, version, str(shim_dir))
    if name == "every topic":  # the produced batch is counted alike: sizes compared above, and not zero
        sizes = {p.partition_index: p.partition_size for t in shim.body.results[0].topics if t.name == topic for p in t.partitions}
        assert sizes[0] == len(BATCH) and sizes[1] == sizes[2] == 0


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize("acls", [(), ((CLUSTER, "kafka-cluster", DESCRIBE, DENY), (CLUSTER, "kafka-cluster", DESCRIBE, ALLOW)),
                                  ((TOPIC, TOPIC_NAME, DESCRIBE, ALLOW),)],
                         ids=["no acl", "describe denied", "topic describe only"])
def test_describe_log_dirs_denied(peers: Peers, topic: str, version: int, acls: tuple) -> None:
    for rtype, name, operation, permission in acls:
        peers.grant(acl(rtype=rtype, name=name, principal=ANONYMOUS, operation=operation, permission=permission))
    for request in (D(topics=None), REQUESTS["some partitions"]):
        kafka, shim = peers.both(DESCRIBE_LOG_DIRS, version, request)
        _same(kafka, shim, f"DescribeLogDirs v{version}, not allowed")
        assert shim.body.results == [] and shim.body.error_code == (31 if version >= 3 else 0)


# -- AlterReplicaLogDirs ----------------------------------------------------------------------------------------------

def _alter(*dirs: tuple[str, dict[str, list[int]]]) -> A:
    return A(dirs=[A.AlterReplicaLogDir(path=path, topics=[A.AlterReplicaLogDirTopic(name=n, partitions=p) for n, p in topics.items()])
                   for path, topics in dirs])


def _for(request: A, own: str) -> A:
    """The request with ``OWN`` (and ``OWN/``) naming this broker's log directory."""
    return A(dirs=[A.AlterReplicaLogDir(path=d.path.replace(OWN, own), topics=d.topics) for d in request.dirs])


def _results(answer: Answer) -> list[tuple[str, list[tuple[int, int]]]]:
    return sorted((t.topic_name, sorted((p.partition_index, p.error_code) for p in t.partitions)) for t in answer.body.results)


def _alter_both(peers: Peers, shim_dir: Path, version: int, request: A) -> tuple[Answer, Answer]:
    peers._cid += 1
    with Wire(peers.oracle.plaintext) as kafka_wire, Wire(peers.shim_address) as shim_wire:
        kafka = kafka_wire.request(ALTER_REPLICA_LOG_DIRS, version, _for(request, str(peers.oracle.dir / "data")))
        shim = shim_wire.request(ALTER_REPLICA_LOG_DIRS, version, _for(request, str(shim_dir)))
    assert not kafka.closed and not shim.closed, (kafka, shim)
    return kafka, shim


ALTERS = {
    "own dir": _alter((OWN, {TOPIC_NAME: [0, 1, 2]})),
    "unknown partitions": _alter((OWN, {TOPIC_NAME: [3, -1], "logdirs-missing": [0]})),
    "not a log dir": _alter(("/nowhere/at/all", {TOPIC_NAME: [0], "logdirs-missing": [0]}), (OWN + "/", {TOPIC_NAME: [1]}),
                            ("data", {TOPIC_NAME: [2]})),
    "names too long": _alter((OWN, {"x" * 213: [0], "x" * 214: [0], "y" * 212: [10], "z" * 249: [0]}),
                             ("/nowhere", {"x" * 214: [1]})),
    "a partition twice": _alter(("/nowhere", {TOPIC_NAME: [0, 1]}), (OWN, {TOPIC_NAME: [0], "logdirs-missing": [2]}),
                                ("/elsewhere", {TOPIC_NAME: [1, 0]}), (OWN, {TOPIC_NAME: [1]})),
    "empty": _alter(),
}


@pytest.mark.parametrize("version", range(3))
@pytest.mark.parametrize("name", list(ALTERS))
def test_alter_replica_log_dirs_allowed(peers: Peers, topic: str, shim_dir: Path, version: int, name: str) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER))
    kafka, shim = _alter_both(peers, shim_dir, version, ALTERS[name])
    assert _results(shim) == _results(kafka), f"AlterReplicaLogDirs v{version} ({name})"


@pytest.mark.parametrize("version", range(3))
@pytest.mark.parametrize("grant", [None, DESCRIBE], ids=["no acl", "describe only"])
def test_alter_replica_log_dirs_denied(peers: Peers, topic: str, shim_dir: Path, version: int, grant: int | None) -> None:
    if grant is not None:
        peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=grant))
    for name in ("own dir", "a partition twice", "empty"):
        kafka, shim = _alter_both(peers, shim_dir, version, ALTERS[name])
        # Listed as the request lists them: one entry per (directory, topic), in request order, on both brokers.
        assert [(t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in shim.body.results] == \
               [(t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in kafka.body.results], name
        assert all(p.error_code == 31 for t in shim.body.results for p in t.partitions)

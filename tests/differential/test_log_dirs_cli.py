"""kafka-log-dirs.sh (org.apache.kafka.tools.LogDirsCommand) and kafka-metadata-quorum.sh
(org.apache.kafka.tools.MetadataQuorumCommand) of Kafka 3.9 against kafka-shim and Apache Kafka.

Each command runs against Kafka as its super user (SASL) and against kafka-shim with no authorizer and its
partitions on disk, and what the tool prints is compared after masking what legitimately differs: the log
directory, the cluster id, the metadata log's offsets and the times of the answer, and the voter's controller
endpoint (kafka-shim serves no controller listener). Denied runs go to both brokers' PLAINTEXT listeners as
User:ANONYMOUS without ACLs and must fail alike.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.protocol.messages import CreateTopicsRequest, DescribeLogDirsRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_peers import Peers
from tests.support.peers import REAL_KAFKA, RealKafka
from tests.support.produce import create_topic
from tests.support.wire import Wire

LOG_DIRS_COMMAND = "org.apache.kafka.tools.LogDirsCommand"
QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand"
TOPIC_NAME = f"logdirs-cli-{uuid.uuid4().hex[:8]}"
BATCH = encode_batch(build_batch([(b"k", b"cli-%d" % i, [], 1_700_000_000_000 + i) for i in range(3)]))


@pytest.fixture(scope="module")
def shim_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shim-cli-log-dirs")


@pytest.fixture(scope="module")
def shim_on_disk(shim_dir: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
                                                      "auto.create.topics.enable": "false", "log.dirs": str(shim_dir)})) as broker:
        yield broker


def _kafka_admin(oracle: RealKafka) -> Wire:
    wire = Wire(oracle.sasl)
    wire.sasl_plain("admin", "admin-secret")
    return wire


def _produce(wire: Wire) -> None:
    answer = wire.request(0, 9, ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name=TOPIC_NAME, partition_data=[ProduceRequest.PartitionProduceData(index=1, records=BATCH)])]))
    assert answer.body.responses[0].partition_responses[0].error_code == 0, answer


@pytest.fixture(scope="module")
def topic(oracle: RealKafka, shim_on_disk: EmbeddedBroker) -> str:
    """Two partitions on both brokers, the same batch in partition 1."""
    with _kafka_admin(oracle) as admin:
        created = admin.request(19, 5, CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=TOPIC_NAME, num_partitions=2, replication_factor=1)]))
        assert created.body.topics[0].error_code == 0, created
        describe = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic=TOPIC_NAME, partitions=[0, 1])])
        deadline = time.monotonic() + 30
        while sum(len(t.partitions) for r in admin.request(35, 4, describe).body.results for t in r.topics) < 2:
            assert time.monotonic() < deadline, "Kafka never made the new topic's logs"
            time.sleep(0.05)
        _produce(admin)
    create_topic(shim_on_disk, TOPIC_NAME, 2)
    with Wire(Peers(oracle, shim_on_disk).shim_address) as wire:
        _produce(wire)
    return TOPIC_NAME


def _run(main_class: str, bootstrap: str, *args: str, command_config: str | None = None) -> subprocess.CompletedProcess:
    extra = ["--command-config", command_config] if command_config else []
    return subprocess.run([sys.executable, str(REAL_KAFKA), "run", main_class, "--bootstrap-server", bootstrap, *extra, *args],
                          capture_output=True, text=True, timeout=300)


def _both(oracle: RealKafka, shim: EmbeddedBroker, main_class: str, *args: str) -> tuple[subprocess.CompletedProcess, ...]:
    kafka = _run(main_class, "{}:{}".format(*oracle.sasl), *args, command_config=oracle.info["files"]["admin_properties"])
    ours = _run(main_class, shim.bootstrap_servers, *args)
    assert kafka.returncode == ours.returncode == 0, f"Kafka:\n{kafka.stderr[-3000:]}\nkafka-shim:\n{ours.stderr[-3000:]}"
    return kafka, ours


def _log_dirs_json(stdout: str, directory: str) -> dict:
    """The tool's JSON line, the log directory checked and masked, partitions in name order."""
    tree = json.loads(stdout.strip().splitlines()[-1])
    for broker in tree["brokers"]:
        for log_dir in broker["logDirs"]:
            assert log_dir.pop("logDir") == directory
            log_dir["partitions"].sort(key=lambda p: p["partition"])
    return tree


@pytest.mark.parametrize("topics", [None, f"{TOPIC_NAME},logdirs-cli-missing"], ids=["every topic", "topic list"])
def test_kafka_log_dirs_describe(oracle: RealKafka, shim_on_disk: EmbeddedBroker, shim_dir: Path, topic: str, topics: str | None) -> None:
    args = ["--describe"] + (["--topic-list", topics] if topics else [])
    kafka, ours = _both(oracle, shim_on_disk, LOG_DIRS_COMMAND, *args)
    assert ours.stdout.splitlines()[:2] == kafka.stdout.splitlines()[:2]  # "Querying brokers ...", "Received ... from brokers 1"
    kafka_tree, shim_tree = _log_dirs_json(kafka.stdout, str(oracle.dir / "data")), _log_dirs_json(ours.stdout, str(shim_dir))
    if topics is None:  # the session's Kafka holds other tests' topics too: compare this test's
        for tree in (kafka_tree, shim_tree):
            for log_dir in tree["brokers"][0]["logDirs"]:
                log_dir["partitions"] = [p for p in log_dir["partitions"] if p["partition"].startswith(TOPIC_NAME + "-")]
    assert shim_tree == kafka_tree
    sizes = [p["size"] for p in shim_tree["brokers"][0]["logDirs"][0]["partitions"]]
    assert sizes == [0, len(BATCH)]


_STATUS_MASKED = re.compile(r"^(ClusterId|HighWatermark|LeaderEpoch):\s+\S+$")


def _status(stdout: str) -> list[str]:
    lines = []
    for line in stdout.strip().splitlines():
        if _STATUS_MASKED.match(line):
            line = line.split(":", 1)[0] + ": <masked>"
        elif line.startswith("CurrentVoters:"):
            voters = json.loads(line.split(":", 1)[1])
            line = "CurrentVoters: " + json.dumps([{k: v for k, v in voter.items() if k != "endpoints"} for voter in voters])
        lines.append(line)
    return lines


def test_kafka_metadata_quorum_describe_status(oracle: RealKafka, shim_on_disk: EmbeddedBroker) -> None:
    kafka, ours = _both(oracle, shim_on_disk, QUORUM_COMMAND, "describe", "--status")
    assert _status(ours.stdout) == _status(kafka.stdout)
    assert "LeaderId:               1" in ours.stdout and "MaxFollowerLag:         0" in ours.stdout


def _replication(stdout: str) -> list[list[str]]:
    """The table, with the offsets and times masked (the lag kept: 0 on both)."""
    rows = [line.split() for line in stdout.strip().splitlines()]
    header = rows[0]
    masked = {header.index(c) for c in ("LogEndOffset", "LastFetchTimestamp", "LastCaughtUpTimestamp")}
    return [header] + [[("<masked>" if i in masked else cell) for i, cell in enumerate(row)] for row in rows[1:]]


def test_kafka_metadata_quorum_describe_replication(oracle: RealKafka, shim_on_disk: EmbeddedBroker) -> None:
    kafka, ours = _both(oracle, shim_on_disk, QUORUM_COMMAND, "describe", "--replication")
    assert _replication(ours.stdout) == _replication(kafka.stdout)


def _failure(proc: subprocess.CompletedProcess) -> tuple[int, list[str]]:
    return proc.returncode, [line for line in proc.stderr.splitlines() if line.startswith("Caused by:")]


@pytest.mark.parametrize("command", [(LOG_DIRS_COMMAND, "--describe"), (QUORUM_COMMAND, "describe", "--status")],
                         ids=["kafka-log-dirs", "kafka-metadata-quorum"])
def test_tools_without_describe_on_the_cluster(peers: Peers, command: tuple[str, ...]) -> None:
    """ANONYMOUS with no ACL: both tools fail with ClusterAuthorizationException against either broker."""
    kafka = _run(command[0], "{}:{}".format(*peers.oracle.plaintext), *command[1:])
    ours = _run(command[0], "{}:{}".format(*peers.shim_address), *command[1:])
    assert _failure(ours) == _failure(kafka)
    assert kafka.returncode != 0 and any("ClusterAuthorizationException" in line for line in _failure(kafka)[1])


def _probe(bootstrap: str, directory: str, command_config: str | None = None) -> dict:
    """kafkashim.oracle.LogDirsProbe: the Java admin client's alterReplicaLogDirs, then describeReplicaLogDirs."""
    moves = [f"{TOPIC_NAME}:0:{directory}", f"{TOPIC_NAME}:1:/nowhere", f"{TOPIC_NAME}:5:{directory}", "logdirs-cli-missing:0:" + directory]
    extra = ["--command-config", command_config] if command_config else []
    args = [sys.executable, str(REAL_KAFKA), "run", "kafkashim.oracle.LogDirsProbe", "--bootstrap", bootstrap, *extra]
    proc = subprocess.run([*args, *(a for m in moves for a in ("--move", m))], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.replace(json.dumps(directory)[1:-1], "<dir>"))


def test_java_admin_alter_and_describe_replica_log_dirs(oracle: RealKafka, shim_on_disk: EmbeddedBroker, shim_dir: Path,
                                                        topic: str) -> None:
    kafka = _probe("{}:{}".format(*oracle.sasl), str(oracle.dir / "data"), oracle.info["files"]["admin_properties"])
    ours = _probe(shim_on_disk.bootstrap_servers, str(shim_dir))
    assert ours == kafka
    assert ours["alter"][f"{TOPIC_NAME}-0"] == "ok"
    assert ours["alter"][f"{TOPIC_NAME}-1"] == "org.apache.kafka.common.errors.LogDirNotFoundException"

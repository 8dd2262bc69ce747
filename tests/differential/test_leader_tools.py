"""Kafka's own kafka-leader-election.sh and kafka-reassign-partitions.sh (org.apache.kafka.tools 3.9) against a
three-node kafka-shim cluster in one process, and against a real single-node Kafka 3.9 where both can answer."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from tests.support.peers import REAL_KAFKA, RealKafka

LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaShim]:
    with KafkaShim(ShimOptions(brokers=3)) as shim:
        yield shim


def _tool(main: str, bootstrap: str, *args: str, command_config: str | None = None) -> tuple[int, str]:
    extra = ["--admin.config" if main == LEADER_ELECTION else "--command-config", command_config] if command_config else []
    proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", main, "--bootstrap-server", bootstrap, *extra, *args],
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout.strip()


def _layout(shim: KafkaShim, topic: str) -> dict[int, tuple[int, list[int]]]:
    partitions = AdminClient(shim.confluent_config()).list_topics(topic, timeout=60).topics[topic].partitions
    return {p.id: (p.leader, list(p.replicas)) for p in partitions.values()}


def _not_preferred(shim: KafkaShim) -> list[str]:
    topics = AdminClient(shim.confluent_config()).list_topics(timeout=60).topics
    return sorted(f"{name}-{p.id}" for name, t in topics.items() for p in t.partitions.values() if p.leader != p.replicas[0])


def _create(shim: KafkaShim, topic: str, partitions: int, factor: int) -> None:
    admin = AdminClient(shim.confluent_config())  # kept while waiting: a collected client cancels its futures
    for future in admin.create_topics([NewTopic(topic, partitions, factor)]).values():
        future.result(60)


def test_preferred_leaders_come_back_with_kafka_leader_election(cluster: KafkaShim) -> None:
    topic = f"elect-{uuid.uuid4().hex[:6]}"
    _create(cluster, topic, 3, 3)
    before = _layout(cluster, topic)
    assert all(leader == replicas[0] for leader, replicas in before.values())
    stopped = before[0][0]
    cluster.faults.stop_broker(stopped)
    cluster.faults.start_broker(stopped)  # back, but the partitions it led stay with their new leaders
    moved = _not_preferred(cluster)  # the internal __consumer_offsets partitions it led too
    assert f"{topic}-0" in moved
    code, out = _tool(LEADER_ELECTION, cluster.bootstrap_servers, "--election-type", "PREFERRED", "--all-topic-partitions")
    assert code == 0, out
    assert out.startswith("Successfully completed leader election (PREFERRED) for partitions ")
    assert sorted(out.split(" for partitions ", 1)[1].split(", ")) == moved
    assert _not_preferred(cluster) == []
    code, out = _tool(LEADER_ELECTION, cluster.bootstrap_servers, "--election-type", "PREFERRED", "--topic", topic, "--partition", "0")
    assert (code, out) == (0, f"Valid replica already elected for partitions {topic}-0")


def test_kafka_reassign_partitions_moves_replicas_and_verifies(cluster: KafkaShim, tmp_path: Path) -> None:
    topic = f"move-{uuid.uuid4().hex[:6]}"
    _create(cluster, topic, 1, 3)
    leader, replicas = _layout(cluster, topic)[0]
    target = [r for r in replicas if r != leader][::-1]  # the old leader leaves: another replica must lead
    plan = tmp_path / "plan.json"
    plan.write_text(f'{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":{target}}}]}}')
    code, out = _tool(REASSIGN, cluster.bootstrap_servers, "--reassignment-json-file", str(plan), "--execute")
    assert code == 0 and out.endswith(f"Successfully started partition reassignment for {topic}-0"), out
    code, out = _tool(REASSIGN, cluster.bootstrap_servers, "--reassignment-json-file", str(plan), "--verify")
    assert code == 0 and f"Reassignment of partition {topic}-0 is completed." in out, out
    assert _layout(cluster, topic)[0] == (target[0], target)


def test_leader_election_tool_answers_as_kafka_on_one_node(oracle: RealKafka, tmp_path: Path) -> None:
    topic = f"elect-{uuid.uuid4().hex[:6]}"
    with KafkaShim() as single:
        _create(single, topic, 2, 1)
        kafka_admin = AdminClient({"bootstrap.servers": "{}:{}".format(*oracle.sasl),
                                   **_client_properties(oracle.info["files"]["admin_properties"])})
        for future in kafka_admin.create_topics([NewTopic(topic, 2, 1)]).values():
            future.result(60)
        args = ("--election-type", "PREFERRED", "--topic", topic, "--partition", "1")
        kafka = _tool(LEADER_ELECTION, "{}:{}".format(*oracle.sasl), *args, command_config=oracle.info["files"]["admin_properties"])
        assert _tool(LEADER_ELECTION, single.bootstrap_servers, *args) == kafka
        unknown = ("--election-type", "UNCLEAN", "--topic", f"{topic}-missing", "--partition", "0")
        kafka = _tool(LEADER_ELECTION, "{}:{}".format(*oracle.sasl), *unknown, command_config=oracle.info["files"]["admin_properties"])
        assert _tool(LEADER_ELECTION, single.bootstrap_servers, *unknown)[0] == kafka[0]


def _client_properties(path: str) -> dict[str, str]:
    """The real broker's admin.properties as librdkafka options (SASL/PLAIN as admin)."""
    props = dict(line.split("=", 1) for line in Path(path).read_text().splitlines() if "=" in line and not line.startswith("#"))
    jaas = props.get("sasl.jaas.config", "")
    user = jaas.split('username="', 1)[1].split('"', 1)[0]
    password = jaas.split('password="', 1)[1].split('"', 1)[0]
    return {"security.protocol": props.get("security.protocol", "SASL_PLAINTEXT"), "sasl.mechanism": props.get("sasl.mechanism", "PLAIN"),
            "sasl.username": user, "sasl.password": password}

"""OffsetCommit, OffsetFetch (KIP-163) and OffsetDelete: Apache Kafka 3.9 and kafka-shim side by side.

Both brokers hold the same topics and ``__consumer_offsets`` (Kafka creates it on a FindCoordinator; kafka-shim's is
created directly, as its FindCoordinator would); both run their authorizer with the same ACLs. Requests come from
User:ANONYMOUS on each PLAINTEXT listener, allowed or denied per scenario, and every answer is compared field by
field. Kafka's answer orders come from its Scala maps, so the requests name several partitions and topics.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import (
    FindCoordinatorRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import create_topic
from tests.support.fetch_peers import Peers
from tests.support.wire import Wire

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, OFFSET_DELETE = 8, 9, 10, 47
READ, DELETE, DESCRIBE = 3, 6, 8
GROUP = 3


@pytest.fixture(scope="module")
def shim_secured(group_protocols: str) -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({
        "group.coordinator.rebalance.protocols": group_protocols,
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
    })
    with EmbeddedBroker(config) as broker:
        yield broker


def _offsets_topic_on_kafka(peers: Peers) -> None:
    """FindCoordinator (as admin) until Kafka has created __consumer_offsets and leads the group's partition."""
    deadline = time.monotonic() + 60
    with peers._admin() as admin:
        while True:
            answer = admin.request(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["probe"]))
            if answer.body.coordinators[0].error_code == 0:
                return
            assert time.monotonic() < deadline, f"Kafka never became a group coordinator: {answer}"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def peers(oracle, shim_secured) -> Iterator[Peers]:
    both = Peers(oracle, shim_secured)
    both.reset_acls()
    _offsets_topic_on_kafka(both)
    if "__consumer_offsets" not in shim_secured.call(lambda: set(shim_secured.broker.services.cluster.topics)):
        create_topic(shim_secured, "__consumer_offsets", 50, {"cleanup.policy": "compact", "compression.type": "producer",
                                                              "segment.bytes": "104857600"})
    both.topic("co-a", 3)
    both.topic("co-b", 2)
    both.topic("co-secret", 1)
    yield both
    both.reset_acls()


def commit(version: int, group: str, topics: dict[str, list[int]], *, offset: int = 10, metadata: str | None = "m",
           generation: int = -1, member: str = "", retention: int = -1, timestamp: int = -1) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member, group_instance_id=None,
                               retention_time_ms=retention, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=name, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset + p, committed_leader_epoch=2,
                                                             commit_timestamp=timestamp, committed_metadata=metadata)
            for p in parts]) for name, parts in topics.items()])


def fetch(version: int, group: str, topics: dict[str, list[int]] | None, *, more: dict[str, dict[str, list[int]] | None] | None = None,
          require_stable: bool = False) -> OffsetFetchRequest:
    if version >= 8:
        groups = {group: topics, **(more or {})}
        return OffsetFetchRequest(require_stable=require_stable, groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, member_id=None, member_epoch=-1, topics=None if ts is None else [
                OffsetFetchRequest.OffsetFetchRequestTopics(name=n, partition_indexes=ps) for n, ps in ts.items()])
            for g, ts in groups.items()])
    return OffsetFetchRequest(group_id=group, require_stable=require_stable, topics=None if topics is None else [
        OffsetFetchRequest.OffsetFetchRequestTopic(name=n, partition_indexes=ps) for n, ps in topics.items()])


def delete(group: str, topics: dict[str, list[int]]) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name=n, partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p) for p in ps]) for n, ps in topics.items()])


def _granted(peers: Peers, group: str, group_ops: tuple[int, ...], topic_ops: dict[str, tuple[int, ...]]) -> None:
    peers.reset_acls()
    if group_ops:
        peers.grant(group, *group_ops, resource_type=GROUP)
    for topic, ops in topic_ops.items():
        peers.grant(topic, *ops)


def _seed(peers: Peers, group: str, topics: dict[str, list[int]]) -> None:
    """Commit the same offsets on both brokers (compared too), with READ on the group and the topics."""
    _granted(peers, group, (READ,), {t: (READ,) for t in topics})
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, topics), what=f"seeding {group}")


def test_commit_and_fetch_every_version_authorized(peers) -> None:
    group = "co-full"
    _granted(peers, group, (READ,), {"co-a": (READ,), "co-b": (READ,)})
    many = {"co-a": [0, 1, 2, 7], "co-b": [1, 0], "co-missing": [0], "co-secret": [0]}
    for version in range(1, 10):
        peers.same(OFFSET_COMMIT, version, lambda side, v=version: commit(v, group, many, offset=100 * v),
                   what=f"OffsetCommit v{version}: valid, unknown partition, unknown topic, denied topic")
    for version in range(1, 10):
        peers.same(OFFSET_FETCH, version, lambda side, v=version: fetch(v, group, {"co-a": [2, 0, 1, 5], "co-b": [0, 1], "co-secret": [0],
                                                                                  "co-missing": [3]}),
                   what=f"OffsetFetch v{version} by partition")
    for version in range(2, 10):
        peers.same(OFFSET_FETCH, version, lambda side, v=version: fetch(v, group, None), what=f"OffsetFetch v{version}, all partitions")
    peers.same(OFFSET_FETCH, 8, lambda side: fetch(8, group, {"co-a": [0]}, more={"co-unknown-group": None, "co-other": {"co-b": [1]}},
                                                   require_stable=True), what="OffsetFetch v8, three groups")

    def with_member(side: int) -> OffsetFetchRequest:
        request = fetch(9, group, {"co-a": [0, 1]})
        request.groups[0].member_id, request.groups[0].member_epoch = "not-a-member", 7
        return request

    peers.same(OFFSET_FETCH, 9, with_member, what="OffsetFetch v9 naming a member and epoch (the old coordinator ignores them)")


def test_commit_checks_generation_metadata_and_old_versions(peers) -> None:
    group = "co-checks"
    _granted(peers, group, (READ,), {"co-a": (READ,)})
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0]}, generation=3, member="someone"),
               what="OffsetCommit to an unknown group with a generation")
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0, 1]}, metadata="x" * 4097),
               what="OffsetCommit with metadata above offset.metadata.max.bytes")
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0]}, metadata=None), what="OffsetCommit with null metadata")
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0]}, generation=3, member="someone"),
               what="OffsetCommit with a generation to a group that only stores offsets")
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0]}, member="someone"),
               what="OffsetCommit naming a member of a group without members")
    peers.same(OFFSET_COMMIT, 1, lambda side: commit(1, group, {"co-a": [1]}, timestamp=1234), what="OffsetCommit v1 with a timestamp")
    peers.same(OFFSET_COMMIT, 3, lambda side: commit(3, group, {"co-a": [2]}, retention=60000), what="OffsetCommit v3 with retention")
    peers.same(OFFSET_COMMIT, 4, lambda side: commit(4, group, {"co-b": [1]}, retention=2**63 - 1),
               what="OffsetCommit v4 whose expiry overflows a long (Kafka's sum wraps)")
    peers.same(OFFSET_FETCH, 5, lambda side: fetch(5, group, {"co-a": [0, 1, 2]}), what="after the old-version commits")
    peers.same(OFFSET_COMMIT, 0, lambda side: commit(0, group, {"co-a": [0], "co-missing": [1]}), what="OffsetCommit v0 (ZooKeeper only)")
    peers.same(OFFSET_COMMIT, 0, lambda side: commit(0, group, {"co-missing": [1]}), what="OffsetCommit v0, nothing valid")
    peers.same(OFFSET_FETCH, 0, lambda side: fetch(0, group, {"co-a": [0, 1], "co-b": [0]}), what="OffsetFetch v0 (ZooKeeper only)")
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, "", {"co-a": [0]}), what="OffsetCommit with the empty group id")


@pytest.mark.parametrize("version", [1, 3, 7, 8, 9])
def test_kip163_describe_reads_but_cannot_commit(peers, version) -> None:
    group = f"co-kip163-{version}"
    _seed(peers, group, {"co-a": [0, 1, 2], "co-b": [0, 1]})
    _granted(peers, group, (DESCRIBE,), {"co-a": (DESCRIBE,), "co-b": (DESCRIBE,)})
    peers.same(OFFSET_FETCH, version, lambda side: fetch(version, group, {"co-a": [0, 1, 2], "co-b": [1]}),
               what=f"KIP-163: DESCRIBE on group and topics reads (v{version})")
    peers.same(OFFSET_COMMIT, min(version, 9), lambda side: commit(min(version, 9), group, {"co-a": [0, 1]}),
               what="KIP-163: DESCRIBE on the group cannot commit (30 on each partition)")
    if version >= 2:
        peers.same(OFFSET_FETCH, version, lambda side: fetch(version, group, None), what="KIP-163: all partitions")
    _granted(peers, group, (READ,), {"co-a": (READ,)})
    peers.same(OFFSET_FETCH, version, lambda side: fetch(version, group, {"co-a": [0], "co-b": [0, 1]}),
               what="READ on the group, no DESCRIBE on co-b: 29 on its partitions")
    if version >= 2:
        peers.same(OFFSET_FETCH, version, lambda side: fetch(version, group, None), what="all partitions: co-b silently dropped")
    _granted(peers, group, (), {"co-a": (READ, DESCRIBE), "co-b": (READ,)})
    peers.same(OFFSET_FETCH, version, lambda side: fetch(version, group, {"co-a": [0]}), what="nothing on the group: 30")
    peers.same(OFFSET_COMMIT, min(version, 9), lambda side: commit(min(version, 9), group, {"co-a": [0]}), what="commit without READ on the group")


def test_offset_fetch_v8_judges_each_group_alone(peers) -> None:
    _seed(peers, "co-multi-1", {"co-a": [0, 1]})
    _seed(peers, "co-multi-2", {"co-b": [0]})
    _granted(peers, "co-multi-1", (DESCRIBE,), {"co-a": (DESCRIBE,)})
    for version in (8, 9):
        peers.same(OFFSET_FETCH, version, lambda side, v=version: fetch(v, "co-multi-1", None, more={"co-multi-2": {"co-b": [0]},
                                                                                                    "co-multi-3": None}),
                   what=f"OffsetFetch v{version}: one group described, two refused")


def test_offset_delete(peers) -> None:
    group = "co-delete"
    _seed(peers, group, {"co-a": [0, 1, 2], "co-b": [0, 1]})
    _granted(peers, group, (READ,), {"co-a": (READ,)})
    peers.same(OFFSET_DELETE, 0, lambda side: delete(group, {"co-a": [0]}), what="OffsetDelete without DELETE on the group")
    _granted(peers, group, (DELETE,), {"co-a": (READ,)})
    peers.same(OFFSET_DELETE, 0, lambda side: delete(group, {"co-a": [0, 2, 9], "co-b": [0], "co-missing": [1]}),
               what="OffsetDelete: deleted, unknown partition, denied topic, unknown topic")
    peers.same(OFFSET_DELETE, 0, lambda side: delete("co-never", {"co-a": [0]}), what="OffsetDelete of an unknown group")
    peers.same(OFFSET_DELETE, 0, lambda side: delete("", {"co-a": [0]}), what="OffsetDelete of the empty group id")
    _granted(peers, group, (DELETE, DESCRIBE), {"co-a": (READ,), "co-b": (READ,)})
    peers.same(OFFSET_FETCH, 8, lambda side: fetch(8, group, None), what="what OffsetDelete left")
    peers.same(OFFSET_DELETE, 0, lambda side: delete(group, {"co-a": [1], "co-b": [0, 1]}), what="OffsetDelete of the last offsets")
    peers.same(OFFSET_DELETE, 0, lambda side: delete(group, {"co-a": [1]}), what="OffsetDelete once the group is gone")


def test_deleting_a_topic_drops_its_offsets_and_groups_left_without_any(peers) -> None:
    from kafka_shim.protocol.messages import DeleteTopicsRequest

    peers.topic("co-doomed", 2)
    _seed(peers, "co-doomed-mixed", {"co-doomed": [0, 1], "co-a": [0]})
    _seed(peers, "co-doomed-only", {"co-doomed": [1]})
    with peers._admin() as admin:
        answer = admin.request(20, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[DeleteTopicsRequest.DeleteTopicState(name="co-doomed")]))
        assert answer.body.responses[0].error_code == 0, answer
    peers.shim.call(lambda: peers.shim.broker.services.partitions.delete_topic("co-doomed"))
    peers.topic_ids.pop("co-doomed", None)
    _granted(peers, "co-doomed-mixed", (READ, DELETE), {"co-a": (READ,), "co-doomed": (READ,)})
    peers.grant("co-doomed-only", READ, DELETE, resource_type=GROUP)
    deadline = time.monotonic() + 60
    while True:  # Kafka removes the offsets when its metadata log reaches the coordinator
        kafka, _ = peers.both(OFFSET_FETCH, 8, lambda side: fetch(8, "co-doomed-mixed", None))
        if {t.name for t in kafka.body.groups[0].topics} == {"co-a"}:
            break
        assert time.monotonic() < deadline, f"Kafka kept the deleted topic's offsets: {kafka}"
        time.sleep(0.2)
    peers.same(OFFSET_FETCH, 8, lambda side: fetch(8, "co-doomed-mixed", None, more={"co-doomed-only": None}),
               what="offsets after the topic's deletion")
    peers.same(OFFSET_FETCH, 8, lambda side: fetch(8, "co-doomed-mixed", {"co-doomed": [0, 1], "co-a": [0]}),
               what="the deleted topic's partitions, named")
    peers.same(OFFSET_DELETE, 0, lambda side: delete("co-doomed-only", {"co-a": [0]}),
               what="a group whose only offsets were the deleted topic's is gone")


def _group_command(bootstrap: str, *args: str) -> tuple[int, str]:
    """kafka-consumer-groups.sh (Kafka 3.9's ConsumerGroupCommand), its output with runs of spaces collapsed."""
    import re
    import subprocess
    import sys

    from tests.support.peers import REAL_KAFKA

    proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                           "--bootstrap-server", bootstrap, *args], capture_output=True, text=True, timeout=300)
    text = proc.stdout + "\n".join(line for line in proc.stderr.splitlines() if line.startswith("Error"))
    return proc.returncode, "\n".join(re.sub(r" +", " ", line).strip() for line in text.splitlines() if line.strip())


def test_kip163_kafka_consumer_groups_describe(peers) -> None:
    """A monitoring user with DESCRIBE on the group and its topic: ``--describe`` shows the committed offsets; with
    nothing on the group it fails with Kafka's authorization error."""
    from kafka_shim.protocol.codes import ApiKey
    from kafka_shim.shim.handlers import load_all

    group = "co-cli"
    _seed(peers, group, {"co-a": [0, 1, 2]})
    _granted(peers, group, (DESCRIBE,), {"co-a": (DESCRIBE,)})
    host, port = peers.oracle.plaintext
    kafka = _group_command(f"{host}:{port}", "--describe", "--group", group)
    assert kafka[0] == 0 and f"{group} co-a 0 10 0 -" in kafka[1], kafka  # offset 10 committed; the log is empty
    _granted(peers, group, (), {"co-a": (DESCRIBE,)})
    kafka_denied = _group_command(f"{host}:{port}", "--describe", "--group", group)
    assert "GroupAuthorizationException" in kafka_denied[1], kafka_denied  # the tool exits 0 even so
    assert _group_command(peers.shim.bootstrap_servers, "--describe", "--group", group) == kafka_denied
    if ApiKey.DESCRIBE_GROUPS not in load_all():
        pytest.skip("kafka-consumer-groups.sh --describe also sends DescribeGroups (the group admin part of issue 14)")
    _granted(peers, group, (DESCRIBE,), {"co-a": (DESCRIBE,)})
    assert _group_command(peers.shim.bootstrap_servers, "--describe", "--group", group) == kafka


def _subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, no user data."""
    import struct

    out = struct.pack(">hi", 0, len(topics)) + b"".join(struct.pack(">h", len(t)) + t.encode() for t in topics)
    return out + struct.pack(">i", -1)


def _join_as_member(peers: Peers, group: str, topics: tuple[str, ...]) -> list[tuple[str, int]]:
    """JoinGroup (twice: v9 wants a member id first) and SyncGroup on each broker: (member id, generation) per side."""
    from kafka_shim.protocol.messages import JoinGroupRequest, SyncGroupRequest
    from tests.support.wire import Wire

    members = []
    for address in (peers.oracle.plaintext, peers.shim_address):
        with Wire(address) as wire:
            member = ""
            for _ in range(2):
                joined = wire.request(11, 9, JoinGroupRequest(
                    group_id=group, session_timeout_ms=120000, rebalance_timeout_ms=60000, member_id=member, group_instance_id=None,
                    protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=_subscription(*topics))],
                    reason=None)).body
                member = joined.member_id
            assert joined.error_code == 0, joined
            synced = wire.request(14, 5, SyncGroupRequest(
                group_id=group, generation_id=joined.generation_id, member_id=member, group_instance_id=None, protocol_type="consumer",
                protocol_name="range", assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"")])).body
            assert synced.error_code == 0, synced
            members.append((member, joined.generation_id))
    return members


def test_commits_of_a_group_with_members(peers) -> None:
    group = "co-members"
    _granted(peers, group, (READ, DELETE), {"co-a": (READ,), "co-b": (READ,)})
    members = _join_as_member(peers, group, ("co-a",))
    assert members[0][1] == members[1][1] == 1
    kafka, _ = peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0, 1], "co-b": [0]}, generation=1,
                                                                member=members[side][0]), what="a member's commit")
    assert {p.error_code for t in kafka.body.topics for p in t.partitions} == {0}
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0]}, generation=2, member=members[side][0]),
               what="a member's commit from another generation")
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0]}, generation=1, member="someone-else"),
               what="a commit from an unknown member")
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [0]}), what="a commit without membership to a group with members")
    peers.same(OFFSET_COMMIT, 1, lambda side: commit(1, group, {"co-a": [2]}, generation=1, member=members[side][0], timestamp=5),
               what="a member's v1 commit")
    kafka, _ = peers.same(OFFSET_DELETE, 0, lambda side: delete(group, {"co-a": [0], "co-b": [0]}),
                          what="OffsetDelete in a Stable consumer group: its subscribed topic 86, the other deleted")
    assert sorted((t.name, p.error_code) for t in kafka.body.topics for p in t.partitions) == [("co-a", 86), ("co-b", 0)]
    _granted(peers, group, (DESCRIBE,), {"co-a": (DESCRIBE,), "co-b": (DESCRIBE,)})
    peers.same(OFFSET_FETCH, 8, lambda side: fetch(8, group, None), what="what the members committed")


def test_partitions_named_twice(peers) -> None:
    group = "co-twice"
    _granted(peers, group, (READ, DELETE), {"co-a": (READ,)})
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [1, 0, 1, 9, 9], "co-secret": [0, 0]}),
               what="OffsetCommit naming partitions twice (valid, unknown and denied)")
    peers.same(OFFSET_FETCH, 8, lambda side: fetch(8, group, {"co-a": [0, 1, 0], "co-secret": [0, 0]}), what="OffsetFetch naming partitions twice")
    peers.same(OFFSET_DELETE, 0, lambda side: delete(group, {"co-a": [0, 0, 9, 9]}), what="OffsetDelete naming partitions twice")


def _offsets_log_end(peers: Peers, group: str) -> tuple[int, int]:
    """The log end offset of the group's ``__consumer_offsets`` partition on Kafka (ListOffsets as admin) and on
    kafka-shim (its log, read directly)."""
    from kafka_shim.protocol.messages import ListOffsetsRequest
    from kafka_shim.shim.groups.offsets_log import partition_for

    partition = partition_for(group, 50)
    with peers._admin() as admin:
        answer = admin.request(2, 7, ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="__consumer_offsets", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=-1)])]))
    kafka = answer.body.topics[0].partitions[0].offset
    shim = peers.shim.call(lambda: peers.shim.broker.services.partitions.get("__consumer_offsets", partition).log.log_end_offset)
    return kafka, shim


def test_commits_and_deletions_are_records_of_the_offsets_topic(peers) -> None:
    """Each commit is a record per partition in the group's ``__consumer_offsets`` partition, and each deletion a
    tombstone per partition, on Kafka and on kafka-shim without a data directory alike: what ListOffsets on the
    topic and consumers of it (lag monitors reading commits) see."""
    group = "co-log-records"
    before = _offsets_log_end(peers, group)
    _seed(peers, group, {"co-a": [0, 1, 2]})
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-a": [1]}, offset=20), what="a second commit")
    _granted(peers, group, (READ, DELETE), {"co-a": (READ,)})
    peers.same(OFFSET_DELETE, 0, lambda side: delete(group, {"co-a": [0, 2]}), what="deleting two offsets")
    after = _offsets_log_end(peers, group)
    assert after[0] - before[0] == after[1] - before[1] == 6, (before, after)


TXN_OFFSET_COMMIT, WRITE, TRANSACTIONAL_ID = 28, 4, 5


def test_topics_named_without_partitions(peers) -> None:
    """Since 3.5 Kafka's response builders open a topic's entry before adding its partitions, so an unreadable or
    unknown topic named with no partitions is answered with none; a readable one is left out."""
    group = "co-no-partitions"
    _granted(peers, group, (READ, DELETE), {"co-a": (READ,)})
    peers.grant("co-txn", WRITE, resource_type=TRANSACTIONAL_ID)
    topics = {"co-missing": [], "co-a": [0], "co-secret": [], "co-b": [], "co-gone": [3]}
    for version in (2, 6, 8, 9):
        peers.same(OFFSET_COMMIT, version, lambda side, v=version: commit(v, group, topics), what=f"OffsetCommit v{version}")
    peers.same(OFFSET_COMMIT, 8, lambda side: commit(8, group, {"co-missing": [], "co-secret": []}), what="nothing but empty topics")
    twice = commit(8, group, {"co-secret": []})
    twice.topics += commit(8, group, {"co-missing": [0], "co-a": []}).topics + commit(8, group, {"co-secret": [1]}).topics
    peers.same(OFFSET_COMMIT, 8, lambda side: twice, what="an empty topic named again later keeps its first place")
    peers.same(OFFSET_DELETE, 0, lambda side: delete(group, topics), what="OffsetDelete")

    # Only refused and unknown topics: a valid partition would go to the transaction coordinator, whose answer
    # depends on whether each broker's __transaction_state exists yet.
    refused_only = {name: parts for name, parts in topics.items() if name != "co-a"}

    def txn_commit(side: int, version: int) -> TxnOffsetCommitRequest:
        return TxnOffsetCommitRequest(transactional_id="co-txn", group_id=group, producer_id=424242, producer_epoch=0,
                                      generation_id=-1, member_id="", group_instance_id=None, topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=name, partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=5,
                                                                      committed_leader_epoch=-1, committed_metadata="")
                for p in parts]) for name, parts in refused_only.items()])

    for version in (0, 3, 4):
        peers.same(TXN_OFFSET_COMMIT, version, lambda side, v=version: txn_commit(side, v), what=f"TxnOffsetCommit v{version}")


def test_offset_fetch_naming_no_group(peers) -> None:
    # Kafka counts the errors of a v8+ answer without groups as a v0-7 answer's null error, fails to send it and
    # never answers the connection again; kafka-shim closes it.
    for version in (8, 9):
        with Wire(peers.oracle.plaintext, timeout=3) as wire:
            try:
                kafka = wire.request(OFFSET_FETCH, version, OffsetFetchRequest(require_stable=False, groups=[]))
            except TimeoutError:
                kafka = None
        with Wire(peers.shim_address, timeout=10) as wire:
            shim = wire.request(OFFSET_FETCH, version, OffsetFetchRequest(require_stable=False, groups=[]))
        assert kafka is None or kafka.closed, f"Kafka answered: {kafka}"
        assert shim.closed, f"kafka-shim answered OffsetFetch v{version} naming no group: {shim}"

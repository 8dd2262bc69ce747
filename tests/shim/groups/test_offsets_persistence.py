"""Committed offsets survive a restart with log.dirs: written to __consumer_offsets in Kafka's record formats and read
back at start; tombstones remove them; Kafka's own kafka-dump-log --offsets-decoder reads the segment."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.groups.offsets import OffsetAndMetadata
from kafka_shim.shim.groups.offsets_log import (
    GroupRecord,
    MemberRecord,
    group_metadata_value,
    offset_commit_value,
    partition_for,
    read_group_value,
    read_key,
    read_offset_value,
)
from kafka_shim.shim.log.partition_log import decoded_batches
from tests.support.acl_helpers import connect

ROOT = Path(__file__).resolve().parents[3]


def _config(data: Path) -> BrokerConfig:
    return BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.dirs": str(data),
                                         "group.initial.rebalance.delay.ms": "0"})


def _commit(group: str, offsets: dict[tuple[str, int], int]) -> OffsetCommitRequest:
    topics: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_leader_epoch=4, committed_metadata=f"m{offset}"))
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                               topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=n, partitions=ps) for n, ps in topics.items()])


def _fetch_all(group: str) -> OffsetFetchRequest:
    return OffsetFetchRequest(require_stable=False, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id=group, member_id=None, member_epoch=-1, topics=None)])


def _committed(answer) -> dict[tuple[str, int], tuple[int, int, str]]:
    (group,) = answer.groups
    assert group.error_code == ErrorCode.NONE
    return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata) for t in group.topics for p in t.partitions}


def test_record_formats_round_trip() -> None:
    o = OffsetAndMetadata(42, 3, "meta", 1_700_000_000_000)
    assert read_offset_value(offset_commit_value(o)) == o
    assert offset_commit_value(o)[:2] == b"\x00\x03"  # version 3, as Kafka 3.9 writes it
    expiring = OffsetAndMetadata(42, -1, "", 5, expire_timestamp=99)
    assert offset_commit_value(expiring)[:2] == b"\x00\x01" and read_offset_value(offset_commit_value(expiring)) == expiring
    group = GroupRecord("consumer", 3, "range", "m-1", 1234, (MemberRecord("m-1", None, "c", "/127.0.0.1", 300000, 45000, b"s", b"a"),))
    assert read_group_value(group_metadata_value(group)) == group
    assert partition_for("my-group", 50) == 12  # abs("my-group".hashCode()) % 50, as Kafka's partitionFor
    assert read_key(b"\x00\x09junk") is None


async def test_offsets_survive_a_restart_and_deletions_stay_deleted(tmp_path: Path) -> None:
    async with Broker(_config(tmp_path)) as broker:
        broker.services.partitions.create_topic("orders", 3)
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
        async with await connect(broker) as client:
            answer = await client.request(ApiKey.OFFSET_COMMIT, 8, _commit("app", {("orders", 0): 5, ("orders", 1): 7, ("orders", 2): 9}))
            assert {p.error_code for t in answer.topics for p in t.partitions} == {ErrorCode.NONE}
            await client.request(ApiKey.OFFSET_COMMIT, 8, _commit("app", {("orders", 1): 8}))
            await client.request(ApiKey.OFFSET_COMMIT, 8, _commit("other", {("orders", 0): 1}))
            deleted = await client.request(ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="app", topics=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic(name="orders", partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=2)])]))
            assert deleted.error_code == ErrorCode.NONE
    async with Broker(_config(tmp_path)) as broker:
        assert set(broker.services.groups.groups) == {"app", "other"}  # groups that only store offsets come back Empty
        async with await connect(broker) as client:
            assert _committed(await client.request(ApiKey.OFFSET_FETCH, 8, _fetch_all("app"))) == {
                ("orders", 0): (5, 4, "m5"), ("orders", 1): (8, 4, "m8")}
            assert _committed(await client.request(ApiKey.OFFSET_FETCH, 8, _fetch_all("other"))) == {("orders", 0): (1, 4, "m1")}
        broker.services.partitions.delete_topic("orders")  # a deleted topic's offsets go, tombstoned
    async with Broker(_config(tmp_path)) as broker:
        assert broker.services.groups.offsets.group_ids() == []
        assert broker.services.groups.groups == {}


async def test_kafka_dump_log_decodes_the_offsets_segment(tmp_path: Path) -> None:
    async with Broker(_config(tmp_path)) as broker:
        broker.services.partitions.create_topic("orders", 1)
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
        async with await connect(broker) as client:
            await client.request(ApiKey.OFFSET_COMMIT, 8, _commit("my-group", {("orders", 0): 17}))
        broker.services.groups.record_group("my-group", GroupRecord("consumer", 1, "range", "m-1", 1234, (
            MemberRecord("m-1", None, "cli", "/127.0.0.1", 300000, 45000, b"", b""),)))
    segment = tmp_path / f"__consumer_offsets-{partition_for('my-group', 50)}" / "00000000000000000000.log"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "real-kafka"), "run", "kafka.tools.DumpLogSegments",
                          "--files", str(segment), "--offsets-decoder", "--print-data-log"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert '"group":"my-group","topic":"orders","partition":0' in out, out
    assert '"offset":17' in out and '"leaderEpoch":4' in out and '"metadata":"m17"' in out, out
    assert '"protocolType":"consumer"' in out and '"generation":1' in out and '"memberId":"m-1"' in out, out


async def test_the_retention_chore_expires_offsets_at_its_interval(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.dirs": str(tmp_path),
                                           "offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "20"})
    now = [1_700_000_000_000]
    async with Broker(config) as broker:
        groups = broker.services.groups
        groups.offsets.now_ms = lambda: now[0]
        broker.services.partitions.create_topic("orders", 1)
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
        async with await connect(broker) as client:
            await client.request(ApiKey.OFFSET_COMMIT, 8, _commit("app", {("orders", 0): 5}))
        now[0] += 59_999
        assert groups.expire_offsets() == 0 and groups.offsets.has_offsets("app")  # a minute less a millisecond: kept
        now[0] += 1
        deadline = asyncio.get_running_loop().time() + 30
        while groups.offsets.has_offsets("app"):
            assert asyncio.get_running_loop().time() < deadline, "the retention chore never expired the offset"
            await asyncio.sleep(0.02)
        assert "app" not in groups.groups
    async with Broker(config) as broker:  # the expiry was tombstoned
        assert not broker.services.groups.offsets.has_offsets("app")


def _offsets_log_in_memory():
    """An OffsetsLog over one in-memory ``__consumer_offsets`` partition, and that partition's log."""
    from kafka_shim.shim.groups.offsets_log import OffsetsLog
    from kafka_shim.shim.log.log_config import LogConfig
    from kafka_shim.shim.log.partition_log import PartitionLog, wall_clock_ms
    from kafka_shim.shim.log.storage import MemoryDirectory

    log = PartitionLog.open(MemoryDirectory("__consumer_offsets-0", wall_clock_ms), LogConfig())

    class Topic:
        def partition_count(self):
            return 1

        def log(self, partition):
            return log

        def leader_epoch(self, partition: int) -> int:
            return 0

        def producers(self, partition: int) -> None:
            return None  # no producer state kept here

        def appended(self, partition):
            pass

    return OffsetsLog(Topic()), log


def test_an_unreadable_record_is_skipped_at_load() -> None:
    from kafka_shim.protocol.records import build_batch, encode_batch
    from kafka_shim.shim.groups.offsets_log import offset_commit_key

    good, log = _offsets_log_in_memory()
    good.append_offsets("g", {("t", 0): OffsetAndMetadata(3)})
    log.append(encode_batch(build_batch([(offset_commit_key("g", ("t", 1)), b"\x00\x07garbage", [], 0)])))
    loaded = good.load().offsets  # the garbage value is skipped, the good record before it is kept
    assert list(loaded) == ["g"] and list(loaded["g"]) == [("t", 0)] and loaded["g"][("t", 0)].offset == 3


def _join(member_id: str) -> JoinGroupRequest:
    return JoinGroupRequest(group_id="app", session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id=member_id,
                            group_instance_id=None, protocol_type="consumer",
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")])


async def _join_and_sync(client) -> tuple[int, str]:
    """One dynamic member through JoinGroup v5 (79 and its id first) and SyncGroup: its generation and member id."""
    first = await client.request(ApiKey.JOIN_GROUP, 5, _join(""))
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    joined = await client.request(ApiKey.JOIN_GROUP, 5, _join(first.member_id))
    assert joined.error_code == ErrorCode.NONE
    synced = await client.request(ApiKey.SYNC_GROUP, 3, SyncGroupRequest(
        group_id="app", generation_id=joined.generation_id, member_id=joined.member_id, group_instance_id=None,
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"\x00\x01")]))
    assert synced.error_code == ErrorCode.NONE
    return joined.generation_id, joined.member_id


async def test_a_group_and_its_members_survive_a_restart(tmp_path: Path) -> None:
    """The classic protocol's metadata records (GroupMetadataValue) are written where Kafka writes them, so after a
    restart the group is back Stable at its generation with its member, which goes on heartbeating and syncing
    without a rebalance (as after a Kafka broker's restart); a new member then moves it to the next generation."""
    async with Broker(_config(tmp_path)) as broker:
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
        async with await connect(broker) as client:
            generation, member_id = await _join_and_sync(client)
    async with Broker(_config(tmp_path)) as broker:
        restored = broker.services.groups.classic_group("app")
        assert restored is not None and (restored.state, restored.generation_id) == ("Stable", generation)
        assert restored.leader_id == member_id and restored.members[member_id].assignment == b"\x00\x01"
        async with await connect(broker) as client:
            beat = await client.request(ApiKey.HEARTBEAT, 3, HeartbeatRequest(
                group_id="app", generation_id=generation, member_id=member_id, group_instance_id=None))
            assert beat.error_code == ErrorCode.NONE
            synced = await client.request(ApiKey.SYNC_GROUP, 3, SyncGroupRequest(
                group_id="app", generation_id=generation, member_id=member_id, group_instance_id=None, assignments=[]))
            assert (synced.error_code, synced.assignment) == (ErrorCode.NONE, b"\x00\x01")


async def test_zookeeper_offsets_of_an_older_release_survive_a_restart(tmp_path: Path) -> None:
    """kafka.version=2.8 keeps OffsetCommit v0's offsets as ZooKeeper kept them: across a restart, apart from the
    coordinator's __consumer_offsets."""
    config = BrokerConfig.from_properties({**_config(tmp_path).raw, "kafka.version": "2.8"})
    fetch = OffsetFetchRequest(group_id="old", topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="orders", partition_indexes=[0, 1])])
    async with Broker(config) as broker:
        broker.services.partitions.create_topic("orders", 2)
        async with await connect(broker) as client:
            answer = await client.request(ApiKey.OFFSET_COMMIT, 0, _commit("old", {("orders", 0): 5}))
            assert [p.error_code for t in answer.topics for p in t.partitions] == [ErrorCode.NONE]
    async with Broker(config) as broker:
        async with await connect(broker) as client:
            answer = await client.request(ApiKey.OFFSET_FETCH, 0, fetch)
    assert {p.partition_index: (p.error_code, p.committed_offset, p.metadata) for t in answer.topics for p in t.partitions} == {
        0: (ErrorCode.NONE, 5, ""), 1: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, "")}


def test_offset_commit_batches_carry_base_sequence_0_as_kafka_writes_them() -> None:
    from kafka_shim.protocol.records import decode_batches

    offsets_log, log = _offsets_log_in_memory()
    offsets_log.append_offsets("g", {("t", 0): OffsetAndMetadata(3), ("t", 1): OffsetAndMetadata(4)})
    offsets_log.append_transactional_offsets("g", 1000, 0, {("t", 0): OffsetAndMetadata(5), ("t", 1): OffsetAndMetadata(6)})
    offsets_log.append_group("g", GroupRecord("consumer", 1, "range", "m", 0, []))
    batches = decode_batches(log.read(0, 1 << 20).records)
    # GroupMetadataManager.storeOffsets builds offset commits with base sequence 0 (kafka-dump-log: baseSequence: 0
    # lastSequence: 1); group metadata has none.
    assert [(b.producer_id, b.base_sequence, b.is_transactional) for b in batches] == [(-1, 0, False), (1000, 0, True), (-1, -1, False)]


async def test_commits_after_a_restart_carry_the_partitions_new_leader_epoch(tmp_path: Path) -> None:
    """As any leader's append, the coordinator's batches are stamped with the partition's current leader epoch (two
    up after a restart); kafka-shim wrote 0 (found by the compaction probe, in kafka-dump-log's output)."""
    for _ in range(2):
        async with Broker(_config(tmp_path)) as broker:
            if "orders" not in broker.services.cluster.topics:
                broker.services.partitions.create_topic("orders", 1)
                broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
            async with await connect(broker) as client:
                await client.request(ApiKey.OFFSET_COMMIT, 8, _commit("app", {("orders", 0): 5}))
            state = broker.services.partitions.get("__consumer_offsets", partition_for("app", 50))
            epoch = broker.services.cluster.topics["__consumer_offsets"].partitions[state.index].leader_epoch
            last = list(decoded_batches(state.log))[-1]
    assert epoch == 2 and last.partition_leader_epoch == 2

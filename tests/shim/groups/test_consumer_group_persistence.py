"""KIP-848 consumer groups survive a restart with log.dirs: their records (ConsumerGroupMetadata, PartitionMetadata,
MemberMetadata, TargetAssignment*, CurrentMemberAssignment) go to __consumer_offsets in Kafka 3.9's formats and are
replayed at start; members come back and must heartbeat within their session timeout; Kafka's own
kafka-dump-log --offsets-decoder reads the records."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.groups import consumer_records as cr
from kafka_shim.shim.groups.consumer import ClassicMetadata, ConsumerMember, Heartbeat, MemberState, TopicShape
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.groups.offsets_log import partition_for
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.partition_log import PartitionLog, wall_clock_ms
from kafka_shim.shim.log.storage import MemoryDirectory
from tests.support.acl_helpers import connect

ROOT = Path(__file__).resolve().parents[3]
A = uuid.UUID(int=0xA)
B = uuid.UUID(int=0xB)
TOPICS = {"a": TopicShape(A, 4), "b": TopicShape(B, 2)}
_TP = ConsumerGroupHeartbeatRequest.TopicPartitions


# -- formats ----------------------------------------------------------------------------------------------------------


def test_keys_and_values_are_kafkas_bytes() -> None:
    assert cr.key(cr.GROUP_EPOCH, "g") == b"\x00\x03\x00\x01g"  # ConsumerGroupMetadataKey, record type 3
    assert cr.key(cr.CURRENT_ASSIGNMENT, "g", "m") == b"\x00\x08\x00\x01g\x00\x01m"
    assert cr.epoch_value(7) == b"\x00\x00\x00\x00\x00\x07\x00"  # value version 0, Epoch, no tagged fields
    assert cr.read_epoch(cr.epoch_value(7)) == 7
    member = ConsumerMember("m", member_epoch=3, previous_member_epoch=2, state=MemberState.UNREVOKED_PARTITIONS,
                            assigned={A: frozenset({0, 1})}, pending_revocation={B: frozenset({1})})
    # MemberEpoch, PreviousMemberEpoch, State (UNREVOKED_PARTITIONS = 1), then compact arrays of (uuid, [int32]).
    assert cr.current_assignment_value(member) == (
        b"\x00\x00" + b"\x00\x00\x00\x03" + b"\x00\x00\x00\x02" + b"\x01"
        + b"\x02" + A.bytes + b"\x03\x00\x00\x00\x00\x00\x00\x00\x01\x00"
        + b"\x02" + B.bytes + b"\x02\x00\x00\x00\x01\x00" + b"\x00")


def test_members_and_partition_metadata_round_trip() -> None:
    member = ConsumerMember("m", instance_id="i", rack_id=None, rebalance_timeout_ms=30000, client_id="c", client_host="/1.2.3.4",
                            subscribed_topic_names=frozenset({"a", "b"}), server_assignor="range",
                            classic=ClassicMetadata(45000, (("range", b"\x00\x01"), ("cooperative-sticky", b""))))
    assert cr.read_member("m", cr.member_value(member)) == member
    plain = ConsumerMember("n", client_id="c", subscribed_topic_names=frozenset({"a"}), rebalance_timeout_ms=5)
    assert cr.member_value(plain).endswith(b"\x00")  # no ClassicMemberMetadata tag
    assert cr.read_member("n", cr.member_value(plain)) == plain
    assert cr.read_partition_metadata(cr.partition_metadata_value(TOPICS)) == TOPICS
    assert cr.read_target_member(cr.target_member_value({A: frozenset({2})})) == {A: frozenset({2})}


class _Topic:
    """A one-partition __consumer_offsets in memory."""

    def __init__(self) -> None:
        self.partition_log = PartitionLog.open(MemoryDirectory("__consumer_offsets-0", wall_clock_ms), LogConfig())

    def partition_count(self) -> int:
        return 1

    def log(self, partition: int) -> PartitionLog:
        return self.partition_log

    def leader_epoch(self, partition: int) -> int:
        return 0

    def producers(self, partition: int) -> None:
        return None  # no producer state kept here

    def appended(self, partition: int) -> None:
        pass


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _coordinator(topic: _Topic, clock: _Clock) -> GroupCoordinator:
    coordinator = GroupCoordinator(GroupSettings.from_properties({"group.coordinator.rebalance.protocols": "classic,consumer"}), clock)
    coordinator.attach_offsets_topic(topic, persist=True)
    coordinator.load_offsets()
    return coordinator


def _beat(coordinator: GroupCoordinator, member_id: str = "", epoch: int = 0, *, topics: list[str] | None = None,
          owned: dict | None = None):
    hb = Heartbeat(group_id="g", member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=30000 if epoch == 0 else -1,
                   subscribed_topic_names=topics, owned=[(t, sorted(ps)) for t, ps in (owned or {}).items()])
    return coordinator.consumer.heartbeat(hb, TOPICS, "client", "/127.0.0.1")


def _state(coordinator: GroupCoordinator) -> tuple:
    group = coordinator.consumer.groups["g"]
    return (group.group_epoch, group.assignment_epoch, dict(group.members), group.target, group.subscription_metadata,
            group.owners)


def test_a_group_mid_rebalance_is_replayed_as_it_was() -> None:
    topic, clock = _Topic(), _Clock()
    before = _coordinator(topic, clock)
    first = _beat(before, topics=["a", "b"])
    second = _beat(before, topics=["a"])  # the first member must now revoke partitions of "a"
    before_state = _state(before)
    assert before.consumer.groups["g"].members[first.member_id].member_epoch == 1 and second.member_epoch == 2
    after = _coordinator(topic, clock)
    assert _state(after) == before_state
    # The first member goes on where it was: revoking, then stable at epoch 2 with partitions of "b" and half of "a".
    answer = _beat(after, first.member_id, 1, owned={A: {0, 1, 2, 3}, B: {0, 1}})
    assert answer.member_epoch == 1
    keep = {t: set(ps) for t, ps in after.consumer.groups["g"].target[first.member_id].items()}
    answer = _beat(after, first.member_id, 1, owned=keep)
    assert answer.member_epoch == 2


def test_leaving_members_and_a_deleted_group_are_tombstoned() -> None:
    topic, clock = _Topic(), _Clock()
    before = _coordinator(topic, clock)
    first = _beat(before, topics=["a"])
    second = _beat(before, topics=["a"])
    _beat(before, second.member_id, -1)
    after = _coordinator(topic, clock)
    assert list(after.consumer.groups["g"].members) == [first.member_id] and after.consumer.groups["g"].group_epoch == 3
    _beat(after, first.member_id, -1)
    assert after.delete_groups(["g"]) == {"g": ErrorCode.NONE}
    assert "g" not in _coordinator(topic, clock).groups


def test_a_static_member_away_across_a_restart_gets_its_partitions_back() -> None:
    topic, clock = _Topic(), _Clock()
    before = _coordinator(topic, clock)
    hb = Heartbeat(group_id="g", member_id="", member_epoch=0, instance_id="i-1", rebalance_timeout_ms=30000,
                   subscribed_topic_names=["a"], owned=[])
    joined = before.consumer.heartbeat(hb, TOPICS, "client", "/127.0.0.1")
    before.consumer.heartbeat(Heartbeat(group_id="g", member_id=joined.member_id, member_epoch=-2, instance_id="i-1"),
                              TOPICS, "client", "/127.0.0.1")
    after = _coordinator(topic, clock)
    assert after.consumer.groups["g"].members[joined.member_id].member_epoch == -2
    back = after.consumer.heartbeat(hb, TOPICS, "client", "/127.0.0.1")  # a new member id, the same instance
    assert back.member_id != joined.member_id and back.member_epoch == 1 and back.assignment == {A: frozenset(range(4))}


def test_an_empty_group_without_offsets_is_cleaned_up_with_its_tombstones() -> None:
    topic, clock = _Topic(), _Clock()
    before = _coordinator(topic, clock)
    first = _beat(before, topics=["a"])
    _beat(before, first.member_id, -1)
    assert before.consumer.groups["g"].state == "Empty"
    before.expire_offsets()  # cleanupGroupMetadata: an Empty group with no offsets is deleted
    assert "g" not in before.groups
    assert "g" not in _coordinator(topic, clock).groups


def test_a_member_that_does_not_come_back_is_fenced_after_its_session() -> None:
    topic, clock = _Topic(), _Clock()
    before = _coordinator(topic, clock)
    first = _beat(before, topics=["a"])
    clock.now += 60  # the log is read back later: sessions start again at load
    after = _coordinator(topic, clock)
    assert first.member_id in after.consumer_group("g").members
    clock.now += 44.9
    assert first.member_id in after.consumer_group("g").members
    clock.now += 0.2
    assert after.consumer_group("g").members == {}
    assert _coordinator(topic, clock).consumer.groups["g"].members == {}  # the fencing was written too


# -- through the broker -----------------------------------------------------------------------------------------------


def _config(data: Path, **extra: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.dirs": str(data),
                                         "group.coordinator.rebalance.protocols": "classic,consumer", **extra})


def _heartbeat(member_id: str = "", epoch: int = 0, owned: dict[uuid.UUID, list[int]] | None = None, *,
               full: bool = True) -> ConsumerGroupHeartbeatRequest:
    tps = [_TP(topic_id=t, partitions=ps) for t, ps in (owned or {}).items()]
    return ConsumerGroupHeartbeatRequest(group_id="app", member_id=member_id, member_epoch=epoch, instance_id=None,
                                         rebalance_timeout_ms=30000 if full else -1,
                                         subscribed_topic_names=["orders"] if full else None,
                                         server_assignor=None, topic_partitions=tps if full else None)


def _assignment(answer) -> dict[uuid.UUID, list[int]]:
    return {tp.topic_id: sorted(tp.partitions) for tp in answer.assignment.topic_partitions}


async def _describe(client):
    answer = await client.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0,
                                  ConsumerGroupDescribeRequest(group_ids=["app"], include_authorized_operations=False))
    (group,) = answer.groups
    return group


async def test_a_member_comes_back_after_a_restart_with_its_assignment(tmp_path: Path) -> None:
    async with Broker(_config(tmp_path)) as broker:
        broker.services.partitions.create_topic("orders", 3)
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
        async with await connect(broker) as client:
            joined = await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, _heartbeat())
            assert joined.error_code == ErrorCode.NONE and joined.member_epoch == 1
            assigned = _assignment(joined)
            assert sum(map(len, assigned.values())) == 3
    async with Broker(_config(tmp_path)) as broker:
        async with await connect(broker) as client:
            described = await _describe(client)
            assert (described.error_code, described.group_state, described.group_epoch, described.assignment_epoch) == (
                ErrorCode.NONE, "Stable", 1, 1)
            assert [m.member_id for m in described.members] == [joined.member_id]
            (member,) = described.members
            assert member.member_epoch == 1 and member.subscribed_topic_names == ["orders"]
            assert {tp.topic_id: sorted(tp.partitions) for tp in member.assignment.topic_partitions} == assigned
            again = await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, _heartbeat(joined.member_id, 1, assigned))
            assert (again.error_code, again.member_id, again.member_epoch) == (ErrorCode.NONE, joined.member_id, 1)
            assert _assignment(again) == assigned
            # A heartbeat with an epoch the group never gave is still fenced: the epochs came back, not a fresh group.
            stale = await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, _heartbeat(joined.member_id, 5, assigned))
            assert stale.error_code == ErrorCode.FENCED_MEMBER_EPOCH


async def test_a_member_that_does_not_come_back_is_fenced(tmp_path: Path) -> None:
    timeouts = {"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "3000",
                "group.consumer.heartbeat.interval.ms": "500"}
    async with Broker(_config(tmp_path, **timeouts)) as broker:
        broker.services.partitions.create_topic("orders", 2)
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
        async with await connect(broker) as client:
            first = await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, _heartbeat())
            second = await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, _heartbeat())
            assert first.error_code == second.error_code == ErrorCode.NONE
            epoch = second.member_epoch
    async with Broker(_config(tmp_path, **timeouts)) as broker:
        async with await connect(broker) as client:
            assert {m.member_id for m in (await _describe(client)).members} == {first.member_id, second.member_id}
            # Only the first member heartbeats; the second is fenced when its restarted session ends.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 120
            member_epoch = 1
            while True:
                beat = await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0,
                                            _heartbeat(first.member_id, member_epoch, full=False))
                assert beat.error_code == ErrorCode.NONE, beat.error_message
                member_epoch = beat.member_epoch
                described = await _describe(client)
                if [m.member_id for m in described.members] == [first.member_id]:
                    break
                assert loop.time() < deadline, "the member that did not come back was never fenced"
                await asyncio.sleep(0.2)
            assert described.group_epoch == epoch + 1


@pytest.mark.skipif(not (ROOT / "scripts" / "real-kafka").exists(), reason="needs scripts/real-kafka")
async def test_kafka_dump_log_decodes_the_consumer_group_records(tmp_path: Path) -> None:
    async with Broker(_config(tmp_path)) as broker:
        broker.services.partitions.create_topic("orders", 1)
        broker.services.partitions.create_topic("__consumer_offsets", 50, {"cleanup.policy": "compact"})
        async with await connect(broker) as client:
            joined = await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, _heartbeat())
            await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, _heartbeat(joined.member_id, -1, full=False))
    segment = tmp_path / f"__consumer_offsets-{partition_for('app', 50)}" / "00000000000000000000.log"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "real-kafka"), "run", "kafka.tools.DumpLogSegments",
                          "--files", str(segment), "--offsets-decoder", "--print-data-log"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    for record_type in range(3, 9):  # ConsumerGroupMetadata (3) .. ConsumerGroupCurrentMemberAssignment (8), each decoded
        assert f'key: {{"type":"{record_type}","data":{{"groupId":"app"' in out, out
    assert '"subscribedTopicNames":["orders"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":30000' in out, out
    assert f'"memberId":"{joined.member_id}"' in out, out
    assert '"memberEpoch":1,"previousMemberEpoch":0,"state":0,"assignedPartitions":[{"topicId":' in out, out
    assert '{"version":"0","data":{"epoch":2}}' in out, out  # the leave: epoch bumped after the member's tombstones
    assert out.count("payload: <DELETE>") == 3, out

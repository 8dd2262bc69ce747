"""The topic APIs over TCP where no Kafka differential covers them: delete.topic.enable=false, DeleteTopics' shuffled
answers, Metadata's automatic creation under ACLs, DescribeTopicPartitions' all-topics form under ACLs."""

from __future__ import annotations

import pytest

from kafka_shim.protocol.messages import DeleteTopicsRequest, DescribeTopicPartitionsRequest, MetadataRequest
from tests.support.acl_helpers import ANONYMOUS, CLUSTER, DESCRIBE, PREFIXED, TOPIC, binding, config, connect, grant, running

DELETE_TOPICS, DESCRIBE_TOPIC_PARTITIONS, METADATA = 20, 75, 3
CREATE = 5
T = MetadataRequest.MetadataRequestTopic


@pytest.mark.parametrize(("version", "code"), [(0, 42), (2, 42), (3, 73), (5, 73), (6, 73)])
async def test_delete_disabled(version, code) -> None:
    async with running(config(authorizer=False, delete_topic_enable="false")) as broker:
        broker.services.partitions.create_topic("kept", 1)
        client = await connect(broker)
        try:
            request = DeleteTopicsRequest(topic_names=["kept", "nope"]) if version < 6 else DeleteTopicsRequest(topics=[
                DeleteTopicsRequest.DeleteTopicState(name="kept"), DeleteTopicsRequest.DeleteTopicState(name="nope")])
            answer = await client.request(DELETE_TOPICS, version, request)
        finally:
            await client.close()
        assert [(r.name, r.error_code) for r in answer.responses] == [("kept", code), ("nope", code)]
        assert all(not r.error_message for r in answer.responses)
        assert "kept" in broker.state.topics


async def test_delete_topics_answers_come_shuffled_as_kafkas() -> None:
    # ControllerApis.deleteTopics shuffles its results, so that an absent topic and one the principal may not see do
    # not tell themselves apart by position: the same request gets its entries in changing orders.
    async with running(config(authorizer=False)) as broker:
        client = await connect(broker)
        orders = set()
        try:
            for _ in range(10):
                names = [f"gone-{i}" for i in range(6)]  # unknown topics: each request answers all six with 3
                answer = await client.request(DELETE_TOPICS, 6, DeleteTopicsRequest(topics=[
                    DeleteTopicsRequest.DeleteTopicState(name=n) for n in names], timeout_ms=30000))
                assert sorted((r.name, r.error_code) for r in answer.responses) == [(n, 3) for n in names]
                orders.add(tuple(r.name for r in answer.responses))
        finally:
            await client.close()
        assert len(orders) > 1  # ten requests in one order would happen by chance once in 720**9


async def _metadata(broker, *names: str, version: int = 12, allow: bool = True):
    client = await connect(broker)
    try:
        return await client.request(METADATA, version, MetadataRequest(topics=[T(name=n) for n in names], allow_auto_topic_creation=allow))
    finally:
        await client.close()


async def test_auto_creation_follows_create_rights() -> None:
    async with running(config(auto_create_topics_enable="true", num_partitions="2")) as broker:
        grant(broker, binding(TOPIC, "team", PREFIXED, operation=DESCRIBE), binding(TOPIC, "team-ok", operation=CREATE))
        answer = await _metadata(broker, "team-ok", "team-no", "hidden")
        assert [(t.name, t.error_code) for t in answer.topics] == [("team-ok", 3), ("team-no", 29), ("hidden", 29)]
        assert len(broker.state.topics["team-ok"].partitions) == 2
        assert "team-no" not in broker.state.topics and "hidden" not in broker.state.topics
        again = await _metadata(broker, "team-ok")
        assert [(t.error_code, len(t.partitions)) for t in again.topics] == [(0, 2)]

        grant(broker, binding(CLUSTER, "kafka-cluster", operation=CREATE))
        assert [t.error_code for t in (await _metadata(broker, "team-no")).topics] == [3]
        assert "team-no" in broker.state.topics
        not_asked = await _metadata(broker, "team-later", allow=False)
        assert [t.error_code for t in not_asked.topics] == [3] and "team-later" not in broker.state.topics


async def test_auto_creation_refuses_what_one_broker_cannot_hold() -> None:
    # __consumer_offsets asks for offsets.topic.replication.factor (3 by default): one broker refuses it, as Kafka's.
    async with running(config(authorizer=False, auto_create_topics_enable="true")) as broker:
        answer = await _metadata(broker, "made", "__consumer_offsets", "bad/name", version=4)
        assert {t.name: t.error_code for t in answer.topics} == {"made": 3, "__consumer_offsets": 3, "bad/name": 17}
        assert sorted(broker.state.topics) == ["made"]
    async with running(config(authorizer=False, auto_create_topics_enable="true", default_replication_factor="3")) as broker:
        assert [t.error_code for t in (await _metadata(broker, "never")).topics] == [3]
        assert broker.state.topics == {}  # the controller refuses replication factor 3 on one broker


async def test_describe_all_topic_partitions_leaves_out_undescribable_topics() -> None:
    async with running(config()) as broker:
        for name in ("b-seen", "a-seen", "hidden"):
            broker.services.partitions.create_topic(name, 2)
        grant(broker, binding(TOPIC, "a-", PREFIXED, operation=DESCRIBE, principal=ANONYMOUS),
              binding(TOPIC, "b-seen", operation=DESCRIBE, principal=ANONYMOUS))
        client = await connect(broker)
        try:
            first = await client.request(DESCRIBE_TOPIC_PARTITIONS, 0, DescribeTopicPartitionsRequest(topics=[], response_partition_limit=3))
            cursor = DescribeTopicPartitionsRequest.Cursor(topic_name=first.next_cursor.topic_name, partition_index=first.next_cursor.partition_index)
            second = await client.request(DESCRIBE_TOPIC_PARTITIONS, 0, DescribeTopicPartitionsRequest(topics=[], response_partition_limit=3,
                                                                                                       cursor=cursor))
        finally:
            await client.close()
        assert [(t.name, [p.partition_index for p in t.partitions], t.topic_authorized_operations) for t in first.topics] == [
            ("a-seen", [0, 1], 256), ("b-seen", [0], 256)]
        assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("b-seen", 1)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in second.topics] == [("b-seen", [1])]
        assert second.next_cursor is None


async def test_auto_created_internal_topics_follow_their_coordinators_keys() -> None:
    async with running(config(authorizer=False, auto_create_topics_enable="true", offsets_topic_replication_factor="1",
                              offsets_topic_num_partitions="4")) as broker:
        await _metadata(broker, "__consumer_offsets")
        topic = broker.state.topics["__consumer_offsets"]
        assert len(topic.partitions) == 4
        assert topic.configs == {"cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "producer"}

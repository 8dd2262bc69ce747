"""DescribeProducers lists a partition's producers as Kafka's ProducerStateManager holds them: a java.util.HashMap by
producer id. Producers 158, 157, 161 and 165, writing in that order, were answered 161, 165, 157, 158 by Kafka 3.9."""

from __future__ import annotations

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DescribeProducersRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from tests.support.produce import create_topic
from tests.support.wire import Wire

NOW = 1_700_000_000_000


def test_producers_come_in_kafkas_hash_map_order(broker) -> None:
    create_topic(broker, "t")
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with Wire((host, int(port))) as wire:
        for producer_id in (158, 157, 161, 165):
            batch = encode_batch(build_batch([(b"k", b"v", [], NOW)], producer_id=producer_id, producer_epoch=0, base_sequence=0))
            answer = wire.request(ApiKey.PRODUCE, 9, ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
                ProduceRequest.TopicProduceData(name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])]))
            assert answer.body.responses[0].partition_responses[0].error_code == ErrorCode.NONE, answer
        described = wire.request(ApiKey.DESCRIBE_PRODUCERS, 0, DescribeProducersRequest(topics=[
            DescribeProducersRequest.TopicRequest(name="t", partition_indexes=[0])]))
    producers = described.body.topics[0].partitions[0].active_producers
    assert [p.producer_id for p in producers] == [161, 165, 157, 158]

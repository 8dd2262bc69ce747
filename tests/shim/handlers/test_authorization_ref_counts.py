"""How many times a request asks about a resource, and with which ref count, as Kafka 3.9's authorizer log shows
it: DescribeProducers asks once per topic entry (a repeated topic is asked again, each with ref count 1), and
AddPartitionsToTxn v0-3 counts every partition it names, repeats included, in one WRITE check per topic."""

from __future__ import annotations

import re

import structlog

from kafka_shim.protocol.messages import AddPartitionsToTxnRequest, DescribeProducersRequest
from tests.support.acl_helpers import TRANSACTIONAL_ID, binding, grant

DESCRIBE_PRODUCERS, ADD_PARTITIONS_TO_TXN = 61, 24
WRITE = 4
_REF_COUNT = re.compile(r"on resource = (\S+) for request = \w+ with resourceRefCount = (\d+)")


def _denials(logs: list[dict]) -> list[tuple[str, int]]:
    return [(m.group(1), int(m.group(2))) for e in logs if "is Denied" in e.get("event", "")
            if (m := _REF_COUNT.search(e["event"])) is not None]


async def test_describe_producers_asks_once_per_topic_entry(secured_broker, client_of) -> None:
    secured_broker.state.add_topic("orders", 2)
    client = await client_of(secured_broker)
    topic = DescribeProducersRequest.TopicRequest
    with structlog.testing.capture_logs() as logs:
        secured_broker.authorizer.audit.refresh()
        answer = await client.request(DESCRIBE_PRODUCERS, 0, DescribeProducersRequest(topics=[
            topic(name="orders", partition_indexes=[0]), topic(name="orders", partition_indexes=[1])]))
    assert [p.error_code for t in answer.topics for p in t.partitions] == [29, 29]
    assert _denials(logs) == [("Topic:LITERAL:orders", 1), ("Topic:LITERAL:orders", 1)]


async def test_add_partitions_to_txn_v3_counts_repeated_partitions(secured_broker, client_of) -> None:
    secured_broker.state.add_topic("orders", 2)
    grant(secured_broker, binding(rtype=TRANSACTIONAL_ID, name="txn", operation=WRITE))
    client = await client_of(secured_broker)
    with structlog.testing.capture_logs() as logs:
        secured_broker.authorizer.audit.refresh()
        answer = await client.request(ADD_PARTITIONS_TO_TXN, 3, AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="txn", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="orders", partitions=[0, 0, 1])]))
    assert {p.partition_error_code for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition} == {29}
    assert _denials(logs) == [("Topic:LITERAL:orders", 3)]

"""Malformed record batches in a Produce request (tests/support/malformed.py): Kafka 3.9 and kafka-shim give the
same answer, field by field, and keep the connection open for the next request.
"""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_shim.protocol.messages import CreateTopicsRequest, MetadataRequest, ProduceRequest
from tests.support.appending import batch, values
from tests.support.compare import assert_same
from tests.support.malformed import malformed_batches
from tests.support.wire import Answer, Wire

PRODUCE, METADATA, CREATE_TOPICS = 0, 3, 19
CASES = malformed_batches()
# Known differences, in the Produce validation (shim/partitions/validator.py), kept failing-on-fix (strict).
_MESSAGE = "Kafka 3.9 answers this CORRUPT_MESSAGE with the exception's text in error_message; kafka-shim with null"
KNOWN = {
    "garbage": _MESSAGE + " ('Invalid magic found in record: 55')",
    "wrong-magic": _MESSAGE + " ('Invalid magic found in record: 7')",
    "tiny-batch-length": _MESSAGE + " ('Record size 5 is less than the minimum record overhead (14)')",
    "absurd-batch-length": "Kafka 3.9 answers UNKNOWN_SERVER_ERROR (-1): a batch length above 2^31-13 overflows its int "
                           "arithmetic (ByteBufferLogInputStream); kafka-shim answers INVALID_RECORD (87)",
}


def _topic(address: tuple[str, int], name: str) -> None:
    with Wire(address, timeout=60) as wire:
        created = wire.request(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)]))
        assert created.body.topics[0].error_code == 0, created
        deadline = time.monotonic() + 60
        while True:
            md = wire.request(METADATA, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]))
            t = md.body.topics[0]
            if t.error_code == 0 and t.partitions and t.partitions[0].leader_id >= 0:
                return
            assert time.monotonic() < deadline, f"{address} never served {name}: {md}"
            time.sleep(0.05)


def _produce(topic: str, records: bytes) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])


def _send(address: tuple[str, int], topic: str, records: bytes) -> tuple[Answer, Answer]:
    """The malformed request's answer, then a valid one's on the same connection (it must still serve)."""
    with Wire(address, timeout=60) as wire:
        first = wire.request(PRODUCE, 9, _produce(topic, records))
        second = wire.request(PRODUCE, 9, _produce(topic, batch(values("after", 1))))
    return first, second


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN[c], strict=True)) if c in KNOWN else c
                                  for c in sorted(CASES)])
def test_malformed_batch(oracle_open, shim_address, case: str) -> None:
    name = f"malformed-{uuid.uuid4().hex[:8]}"
    answers = []
    for address in (oracle_open.plaintext, shim_address):
        _topic(address, name)
        answers.append(_send(address, name, CASES[case]))
    (kafka, kafka_next), (shim, shim_next) = answers
    assert not kafka.closed and not shim.closed
    assert kafka.body.responses[0].partition_responses[0].error_code != 0, kafka
    assert_same(kafka, shim, what=case)
    # Nothing of the malformed batch was written: the valid one lands at offset 0 on both.
    assert_same(kafka_next, shim_next, what=f"{case}, then a valid batch")
    assert shim_next.body.responses[0].partition_responses[0].base_offset == 0

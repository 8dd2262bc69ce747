"""kafka-transactions.sh (Kafka 3.9's TransactionsCommand) against kafka-shim with a real transaction open:
list, describe, describe-producers, find-hanging, and abort, which writes an abort marker through WriteTxnMarkers."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kafka_shim.shim.testing.handle import KafkaShim
from tests.support.peers import REAL_KAFKA

TIMEOUT = 60


def _tool(shim: KafkaShim, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REAL_KAFKA), "run", "org.apache.kafka.tools.TransactionsCommand",
                           "--bootstrap-server", shim.bootstrap_servers, *args], capture_output=True, text=True, timeout=300)


def _rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


@pytest.fixture
def open_transaction():
    """A broker with one transaction left open on orders-0 (one record written, neither committed nor aborted)."""
    from confluent_kafka import Producer

    with KafkaShim() as shim:
        shim.create_topic("orders", partitions=2)
        producer = Producer(shim.confluent_config(**{"transactional.id": "stuck", "transaction.timeout.ms": 900000}))
        producer.init_transactions(TIMEOUT)
        producer.begin_transaction()
        producer.produce("orders", value=b"in-doubt", partition=0)
        assert producer.flush(TIMEOUT) == 0
        yield shim, producer


def test_list_and_describe_an_open_transaction(open_transaction) -> None:
    shim, _ = open_transaction
    listed = _tool(shim, "list")
    assert listed.returncode == 0, listed.stderr
    rows = _rows(listed.stdout)
    assert rows[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert [(r[0], r[1], r[3]) for r in rows[1:]] == [("stuck", "1", "Ongoing")]
    described = _tool(shim, "describe", "--transactional-id", "stuck")
    assert described.returncode == 0, described.stderr
    header, row = _rows(described.stdout)
    fields = dict(zip(header, row, strict=True))
    assert (fields["CoordinatorId"], fields["TransactionState"], fields["TransactionTimeoutMs"], fields["TopicPartitions"]) == (
        "1", "Ongoing", "900000", "orders-0")
    assert fields["ProducerId"] == rows[1][2] and int(fields["TransactionDurationMs"]) >= 0
    producers = _tool(shim, "describe-producers", "--topic", "orders", "--partition", "0")
    assert producers.returncode == 0, producers.stderr
    header, row = _rows(producers.stdout)[:2]
    described_producer = dict(zip(header, row, strict=True))
    assert (described_producer["ProducerId"], described_producer["CurrentTransactionStartOffset"]) == (fields["ProducerId"], "0")


def test_find_hanging_and_abort(open_transaction) -> None:
    from confluent_kafka import Consumer, TopicPartition

    shim, _ = open_transaction
    hanging = _tool(shim, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0")
    assert hanging.returncode == 0, hanging.stderr
    rows = _rows(hanging.stdout)
    # The coordinator still knows this transaction, so it is open, not hanging: only the header (Kafka's answer too).
    assert rows[0][:3] == ["Topic", "Partition", "ProducerId"] and len(rows) == 1, hanging.stdout
    aborted = _tool(shim, "abort", "--topic", "orders", "--partition", "0", "--start-offset", "0")
    assert aborted.returncode == 0, aborted.stderr
    consumer = Consumer(shim.confluent_config(**{"group.id": "check", "isolation.level": "read_committed"}))
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            low, high = consumer.get_watermark_offsets(TopicPartition("orders", 0), TIMEOUT)
            if high == 2:  # the record and the abort marker
                break
            time.sleep(0.1)
        assert (low, high) == (0, 2)
        consumer.assign([TopicPartition("orders", 0, 0)])
        msg = consumer.poll(3)
        assert msg is None or msg.error() is not None, "a read_committed consumer read an aborted record"
    finally:
        consumer.close()
    producers = _tool(shim, "describe-producers", "--topic", "orders", "--partition", "0")
    header, row = _rows(producers.stdout)[:2]
    assert dict(zip(header, row, strict=True))["CurrentTransactionStartOffset"] == "None"

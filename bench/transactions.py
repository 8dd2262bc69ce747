"""Transactions benchmark: confluent-kafka (librdkafka) transactional producers against kafka-shim and Apache Kafka
3.9 in the same run.

Shapes (each a number of transactions, one after another, by one producer, as an exactly-once job commits):

- ``single``: one 100-byte record per transaction, one partition (the commit round trip dominates);
- ``batch``: 200 records of 1 KiB per transaction spread over 4 partitions (markers to four partitions);
- ``consume-transform-produce``: 20 records per transaction and ``send_offsets_to_transaction`` for a consumer
  group, as a stream processor does (AddOffsetsToTxn, TxnOffsetCommit, a marker in ``__consumer_offsets``).

Reported per broker and shape: transactions/s, the ``commit_transaction`` call's p50 / p99 in ms, and whether a
``read_committed`` consumer then reads exactly the committed records (a correctness check, not timed). Kafka
answers EndTxn before it writes the markers and refuses the next transaction's partitions with
CONCURRENT_TRANSACTIONS until they are written (librdkafka retries), so its begin-to-commit time includes that wait;
kafka-shim answers EndTxn once the markers are written.

    .venv/bin/python bench/transactions.py [--transactions 300] [--without-kafka]
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from real_kafka import STOCK_JVM_OPTS, start_real_kafka  # noqa: E402

SHAPES = {  # name: (records per transaction, record size, partitions, offsets in the transaction)
    "single": (1, 100, 1, False),
    "batch": (200, 1024, 4, False),
    "consume-transform-produce": (20, 100, 1, True),
}
TIMEOUT_S = 120


@dataclass
class Figures:
    server: str
    shape: str
    transactions_per_s: float
    commit_p50_ms: float
    commit_p99_ms: float
    records_read: int
    records_expected: int


def start_shim() -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--log-level", "warning"]
    # A single broker, as scripts/real-kafka configures Kafka (the defaults of 3 leave the internal topics uncreated).
    for override in ("listeners=PLAINTEXT://127.0.0.1:0", "offsets.topic.replication.factor=1",
                     "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1"):
        args += ["--override", override]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip().split("://", 1)[1]


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=TIMEOUT_S)


def _read_committed(bootstrap: str, topic: str, partitions: int, expected: int) -> int:
    """How many records a read_committed consumer reads from the start (waiting, generously, for ``expected``)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    read, deadline = 0, time.monotonic() + TIMEOUT_S
    try:
        while read < expected and time.monotonic() < deadline:
            read += len([m for m in consumer.consume(1000, 0.5) if m.error() is None])
    finally:
        consumer.close()
    return read


def run_shape(server: str, bootstrap: str, shape: str, transactions: int) -> Figures:
    from confluent_kafka import Producer, TopicPartition

    per_txn, size, partitions, with_offsets = SHAPES[shape]
    topic = f"bench-txn-{shape}-{uuid.uuid4().hex[:6]}"
    _create_topic(bootstrap, topic, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "linger.ms": 0})
    producer.init_transactions(TIMEOUT_S)
    group_metadata = None
    if with_offsets:
        from confluent_kafka import Consumer

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-ctp-{uuid.uuid4().hex[:6]}"})
        group_metadata = consumer.consumer_group_metadata()
    value = b"v" * size
    commits: list[float] = []

    def one(i: int) -> None:
        producer.begin_transaction()
        for n in range(per_txn):
            producer.produce(topic, value=value, partition=n % partitions)
        if group_metadata is not None:
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, i + 1)], group_metadata, TIMEOUT_S)
        started = time.perf_counter()
        producer.commit_transaction(TIMEOUT_S)
        commits.append(time.perf_counter() - started)

    for i in range(min(20, transactions)):  # warm-up, not timed: connections, Kafka's JIT
        one(i)
    commits.clear()
    started = time.perf_counter()
    for i in range(transactions):
        one(i)
    elapsed = time.perf_counter() - started
    expected = (transactions + min(20, transactions)) * per_txn
    read = _read_committed(bootstrap, topic, partitions, expected)
    ordered = sorted(commits)
    figures = Figures(server, shape, transactions / elapsed, statistics.median(ordered) * 1000,
                      ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, read, expected)
    print(f"  {server} {shape}: {figures.transactions_per_s:,.0f} transactions/s, commit p50 {figures.commit_p50_ms:.2f} ms "
          f"p99 {figures.commit_p99_ms:.2f} ms; read_committed read {read}/{expected}", flush=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=300, help="timed transactions per shape")
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    parser.add_argument("--without-kafka", action="store_true", help="leave out the real Apache Kafka broker")
    args = parser.parse_args()
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    results: list[Figures] = []
    proc, address = start_shim()
    try:
        results += [run_shape("kafka-shim", address, shape, args.transactions) for shape in args.shapes]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    if not args.without_kafka:
        kafka = start_real_kafka("authorizer.class.name=", jvm_opts=STOCK_JVM_OPTS)
        try:
            results += [run_shape("apache-kafka", kafka.plaintext, shape, args.transactions) for shape in args.shapes]
        finally:
            kafka.stop()
    print(f"\n{'shape':<28} {'server':<14} {'txn/s':>8} {'commit p50 ms':>14} {'p99 ms':>8} {'vs Kafka':>9}")
    kafka_rate = {r.shape: r.transactions_per_s for r in results if r.server == "apache-kafka"}
    for r in sorted(results, key=lambda r: (list(SHAPES).index(r.shape), r.server != "kafka-shim")):
        ratio = f"{r.transactions_per_s / kafka_rate[r.shape]:.1f}x" if r.shape in kafka_rate and r.server == "kafka-shim" else ""
        print(f"{r.shape:<28} {r.server:<14} {r.transactions_per_s:>8,.0f} {r.commit_p50_ms:>14.2f} {r.commit_p99_ms:>8.2f} {ratio:>9}")
    wrong = [r for r in results if r.records_read != r.records_expected]
    for r in wrong:
        print(f"{r.server} {r.shape}: a read_committed consumer read {r.records_read} records, expected {r.records_expected}")
    print(f"(load average at the end {os.getloadavg()[0]:.1f})")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

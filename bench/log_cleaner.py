"""Log cleaner benchmark: how fast kafka-shim compacts a partition, against reading the same log (decoding every
batch, what any full pass over it costs at least) and against Apache Kafka 3.9's log cleaner on the same batches,
and how long the cleaning holds up the event loop.

Shapes (one in-memory partition each, ``segment.bytes`` 1 MiB, the whole log but the active segment cleaned once):

- ``unique-100B``: 200k records of 100 B, every key distinct, batches of 100 (little to drop: mostly copied whole);
- ``dedupe-100B``: the same over 1,000 keys (most records dropped, every batch rebuilt);
- ``gzip-1KiB``: 20k records of 1 KiB over 1,000 keys, gzip batches of 50 (decompress, rebuild, recompress);
- ``single-record``: 50k one-record batches over 100 keys, as a producer with ``linger.ms=0`` writes them;
- ``tombstones``: 100k records over 10k keys, the last write of every other key a tombstone (batches get a delete
  horizon).

Reported per shape: records/s and MiB/s of the cleaning (records and bytes read), the plain read's records/s, their
ratio, and, run on an event loop as the broker runs it, the longest pause a 1 ms ticker saw during the cleaning.
Kafka (``scripts/real-kafka``, stock JVM, ``log.cleaner.backoff.ms=100``) gets the same batches by Produce into a
topic with ``cleanup.policy=delete``, which is then turned to ``compact``; its own cleaner statistics (the
"MB of log processed ... MB/sec" line it logs after each cleaning) give its rate. Its first cleaning is also its
JIT's first run of that code: each shape is cleaned ``--repeat`` times on fresh topics and the median is kept.

    .venv/bin/python bench/log_cleaner.py [--shape NAME] [--repeat 3] [--without-kafka]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shim.protocol.messages import (  # noqa: E402
    CreateTopicsRequest,
    IncrementalAlterConfigsRequest,
    ProduceRequest,
)
from kafka_shim.protocol.records import Compression, build_batch, encode_batch  # noqa: E402
from kafka_shim.shim.client.auth import connect, request  # noqa: E402
from kafka_shim.shim.client.config import client_security  # noqa: E402
from kafka_shim.shim.cluster.state import ClusterState  # noqa: E402
from kafka_shim.shim.log.log_manager import LogManager  # noqa: E402
from kafka_shim.shim.log.partition_log import decoded_batches  # noqa: E402
from kafka_shim.shim.partitions.log_cleaner import LogCleaner, _clean_filthiest  # noqa: E402
from kafka_shim.shim.partitions.manager import Partitions  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from real_kafka import STOCK_JVM_OPTS, RealKafka, start_real_kafka  # noqa: E402

T0 = 1_700_000_000_000
_KAFKA_STATS = re.compile(r"cleaned log (\S+)-0 \(dirty section.*?([\d,.]+) MB of log processed in [\d,.]+ seconds "
                          r"\(([\d,.]+) MB/sec\).*?Start size: [\d,.]+ MB \(([\d,]+) messages\)", re.S)
Record = tuple[bytes, bytes | None]


def _shape_records(name: str) -> tuple[list[list[Record]], Compression]:
    if name == "unique-100B":
        return _batches([(b"key-%09d" % i, b"v" * 100) for i in range(200_000)], 100), Compression.NONE
    if name == "dedupe-100B":
        return _batches([(b"key-%05d" % (i % 1000), b"v" * 100) for i in range(200_000)], 100), Compression.NONE
    if name == "gzip-1KiB":
        return _batches([(b"key-%05d" % (i % 1000), os.urandom(512).hex().encode()) for i in range(20_000)], 50), Compression.GZIP
    if name == "single-record":
        return _batches([(b"key-%03d" % (i % 100), b"v" * 100) for i in range(50_000)], 1), Compression.NONE
    if name == "tombstones":
        records: list[Record] = [(b"key-%05d" % (i % 10_000), b"v" * 100) for i in range(90_000)]
        records += [(b"key-%05d" % k, None if k % 2 else b"w" * 100) for k in range(10_000)]
        return _batches(records, 100), Compression.NONE
    raise SystemExit(f"unknown shape {name}")


SHAPES = ["unique-100B", "dedupe-100B", "gzip-1KiB", "single-record", "tombstones"]


def _batches(records: list[Record], per_batch: int) -> list[list[Record]]:
    return [records[i : i + per_batch] for i in range(0, len(records), per_batch)]


def _encoded(batches: list[list[Record]], compression: Compression) -> list[bytes]:
    encoded, at = [], 0
    for batch in batches:
        encoded.append(encode_batch(build_batch([(k, v, [], T0 + at + i) for i, (k, v) in enumerate(batch)],
                                                compression=compression)))
        at += len(batch)
    return encoded


async def _kafka_clean(kafka: RealKafka, topic: str, encoded: list[bytes]) -> tuple[float, int]:
    """Kafka's cleaning of ``encoded`` (then one more batch, the active segment): MB/s and records read, as its
    cleaner logs them."""
    props = dict(line.split("=", 1) for line in (kafka.directory / "admin.properties").read_text().splitlines()
                 if "=" in line and not line.startswith("#"))
    session = await connect(kafka.sasl, client_security(props))
    try:
        configs = {"cleanup.policy": "delete", "segment.bytes": str(1 << 20), "min.cleanable.dirty.ratio": "0.01"}
        await request(session, 19, 7, CreateTopicsRequest(timeout_ms=30_000, topics=[CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=1, replication_factor=1, configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])]), 60, "CreateTopics")
        for data in [*encoded, encode_batch(build_batch([(b"last", b"x", [], T0)]))]:
            while True:  # the new partition's leader may take a moment (NOT_LEADER_OR_FOLLOWER)
                answer = await request(session, 0, 9, ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30_000,
                    topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[
                        ProduceRequest.PartitionProduceData(index=0, records=data)])]), 60, "Produce")
                code = answer.responses[0].partition_responses[0].error_code
                if code != 6:
                    break
                await asyncio.sleep(0.05)
            assert code == 0, f"Kafka refused a batch: {code}"
        await request(session, 44, 1, IncrementalAlterConfigsRequest(validate_only=False, resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=2, resource_name=topic, configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name="cleanup.policy", config_operation=0, value="compact")])]),
            60, "IncrementalAlterConfigs")
    finally:
        await session.close()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        for match in _KAFKA_STATS.finditer((kafka.directory / "logs" / "server.log").read_text(errors="replace")):
            if match[1] == topic:
                return float(match[3].replace(",", "")), int(match[4].replace(",", ""))
        await asyncio.sleep(0.2)
    raise SystemExit(f"Kafka never cleaned {topic}")


def _partitions(batches: list[list[Record]], compression: Compression) -> Partitions:
    partitions = Partitions(ClusterState("bench", 1), LogManager(), {})
    partitions.create_topic("t", 1, {"cleanup.policy": "compact", "segment.bytes": str(1 << 20),
                                     "min.cleanable.dirty.ratio": "0.01"})
    partition_log = partitions.get("t", 0).log
    at = 0
    for batch in batches:
        partition_log.append(encode_batch(build_batch([(k, v, [], T0 + at + i) for i, (k, v) in enumerate(batch)],
                                                      compression=compression)))
        at += len(batch)
    partition_log.roll()
    partition_log.append(encode_batch(build_batch([(b"last", b"x", [], T0 + at)])))
    return partitions


def _time(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _read_all(partitions: Partitions) -> int:
    return sum(len(batch.records) for batch in decoded_batches(partitions.get("t", 0).log))


def _clean_sync(partitions: Partitions) -> tuple[int, int]:
    cleaner = LogCleaner(partitions)
    chosen = cleaner.filthiest(partitions.logs.clock())
    assert chosen is not None, "nothing to clean"
    stats_before = partitions.get("t", 0).log.size
    for _ in cleaner.clean_steps(*chosen):
        pass
    return stats_before, partitions.get("t", 0).log.size


async def _clean_on_loop(partitions: Partitions) -> float:
    """The longest gap a 1 ms ticker sees while the broker's cleaner pass runs on the same loop."""
    longest = 0.0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    assert await _clean_filthiest(LogCleaner(partitions))
    done.set()
    await tick
    return longest


def run_shape(name: str, repeat: int, kafka: RealKafka | None) -> dict[str, float]:
    batches, compression = _shape_records(name)
    records = sum(len(b) for b in batches)
    reads, cleans, pauses, sizes, kafka_rates = [], [], [], [], []
    encoded = _encoded(batches, compression) if kafka is not None else []
    for round_ in range(repeat):
        if kafka is not None:
            mb_per_s, read = asyncio.run(_kafka_clean(kafka, f"bench-{name}-{round_}-{os.getpid()}", encoded))
            kafka_rates.append((mb_per_s, read))
        partitions = _partitions(batches, compression)
        reads.append(_time(lambda p=partitions: _read_all(p)))
        start = time.perf_counter()
        sizes.append(_clean_sync(partitions))
        cleans.append(time.perf_counter() - start)
        pauses.append(asyncio.run(_clean_on_loop(_partitions(batches, compression))))
    read, clean = statistics.median(reads), statistics.median(cleans)
    before, after = sizes[0]
    result = {"records": records, "bytes": before, "kept_bytes": after, "read_s": read, "clean_s": clean,
              "pause_ms": max(pauses) * 1000}
    if kafka_rates:
        mb_per_s, read_records = sorted(kafka_rates)[len(kafka_rates) // 2]
        result["kafka_mb_per_s"] = mb_per_s
        result["kafka_records_per_s"] = read_records / (before / 2**20 / mb_per_s)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=SHAPES, action="append")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--without-kafka", action="store_true", help="leave Apache Kafka's cleaner out")
    args = parser.parse_args()
    kafka = None if args.without_kafka else start_real_kafka("log.cleaner.backoff.ms=100", jvm_opts=STOCK_JVM_OPTS)
    try:
        _report(args, kafka)
    finally:
        if kafka is not None:
            kafka.stop()


def _report(args: argparse.Namespace, kafka: RealKafka | None) -> None:
    print(f"$ {' '.join([os.path.relpath(sys.executable), *sys.argv])}")
    print(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}, median of {args.repeat}")
    print(f"{'shape':<15}{'records':>9}{'log MiB':>9}{'kept':>7}{'clean rec/s':>13}{'MiB/s':>8}{'read rec/s':>12}"
          f"{'clean/read':>12}{'longest pause':>15}{'Kafka rec/s':>13}{'MiB/s':>8}{'vs Kafka':>10}")
    for name in args.shape or SHAPES:
        r = run_shape(name, args.repeat, kafka)
        line = (f"{name:<15}{r['records']:>9,}{r['bytes'] / 2**20:>9.1f}{r['kept_bytes'] / r['bytes']:>7.0%}"
                f"{r['records'] / r['clean_s']:>13,.0f}{r['bytes'] / r['clean_s'] / 2**20:>8.1f}"
                f"{r['records'] / r['read_s']:>12,.0f}{r['clean_s'] / r['read_s']:>11.2f}x{r['pause_ms']:>12.1f} ms")
        if "kafka_mb_per_s" in r:
            shim_mb_per_s = r["bytes"] / r["clean_s"] / 2**20
            line += f"{r['kafka_records_per_s']:>13,.0f}{r['kafka_mb_per_s']:>8.1f}{shim_mb_per_s / r['kafka_mb_per_s']:>9.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()

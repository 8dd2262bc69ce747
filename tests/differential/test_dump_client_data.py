"""Kafka 3.9's kafka-dump-log.sh (kafka.tools.DumpLogSegments) reads a data directory that real clients wrote
through kafka-shim: idempotent confluent-kafka producers, one topic per codec, a clean restart in between (so each
partition has a producer-state snapshot), then a second producer (lz4 from kafka-python). The tool must print every record the clients
wrote, batch by batch with their producer ids, epochs, sequences and codecs, and read the ``.snapshot`` files as
the producers' last batches. Needs the JVM (``scripts/real-kafka run``).
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import create_topic
from tests.support.peers import REAL_KAFKA

pytestmark = [pytest.mark.oracle, pytest.mark.clients]

DUMP = "kafka.tools.DumpLogSegments"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_ROUND = 40
BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) baseSequence: (-?\d+) lastSequence: (-?\d+) "
                   r"producerId: (-?\d+) producerEpoch: (-?\d+) .*? compresscodec: (\w+) .*?isvalid: (\w+)")
RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (\d+) keySize: (-?\d+) valueSize: (-?\d+) sequence: (-?\d+) "
                    r"headerKeys: \[(.*?)\] key: (\S+) payload: (\S+)$")
SNAPSHOT = re.compile(r"^producerId: (\d+) producerEpoch: (\d+) .*?firstSequence: (\d+) lastSequence: (\d+) "
                      r"lastOffset: (\d+) offsetDelta: (\d+) timestamp: (\d+)")


def _produce(broker: EmbeddedBroker, codec: str, round_: int) -> list[tuple[bytes, bytes]]:
    written = [(f"k{round_}-{i}".encode(), f"{codec}-round{round_}-value-{i}-".encode() + b"x" * (200 + i % 9))
               for i in range(PER_ROUND)]
    if codec == "lz4":
        # librdkafka compresses with lz4 only when the broker serves FindCoordinator (its "LZ4" feature test), which
        # kafka-shim does not yet; kafka-python's idempotent producer writes lz4 batches.
        return _produce_kafka_python(broker, codec, written, round_)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                         "compression.type": codec, "linger.ms": 5, "batch.num.messages": 7})
    errors: list = []
    for key, value in written:
        producer.produce(f"dump-{codec}", value, key=key, headers=[("h", b"1")], timestamp=1_700_000_000_000 + round_ * 1000,
                         on_delivery=lambda err, _m: err is not None and errors.append(err))
    assert producer.flush(60) == 0 and errors == []
    return written


def _produce_kafka_python(broker: EmbeddedBroker, codec: str, written: list[tuple[bytes, bytes]], round_: int) -> list[tuple[bytes, bytes]]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True, acks="all",
                             compression_type=codec, linger_ms=5, batch_size=2000)
    futures = [producer.send(f"dump-{codec}", value, key=key, headers=[("h", b"1")],
                             timestamp_ms=1_700_000_000_000 + round_ * 1000) for key, value in written]
    producer.flush(60)
    for future in futures:
        future.get(timeout=60)
    producer.close(timeout=30)
    return written


def _dump(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", DUMP, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Exception" not in proc.stderr, proc.stderr[-3000:]
    return proc.stdout


def test_kafka_dump_log_reads_what_real_clients_wrote(tmp_path: Path) -> None:
    properties = {"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.dirs": str(tmp_path)}
    written: dict[str, list[tuple[bytes, bytes]]] = {codec: [] for codec in CODECS}
    with EmbeddedBroker(BrokerConfig.from_properties(properties)) as broker:
        for codec in CODECS:
            create_topic(broker, f"dump-{codec}", 1)
            written[codec] += _produce(broker, codec, 0)
    # A clean stop wrote each partition's producer snapshot; a second producer writes after the restart.
    with EmbeddedBroker(BrokerConfig.from_properties(properties)) as broker:
        for codec in CODECS:
            written[codec] += _produce(broker, codec, 1)

    for codec in CODECS:
        folder = tmp_path / f"dump-{codec}-0"
        logs = sorted(str(p) for p in folder.glob("*.log"))
        out = _dump("--files", ",".join(logs), "--print-data-log", "--deep-iteration")
        batches = [m for m in map(BATCH.match, out.splitlines()) if m]
        records = [m for m in map(RECORD.match, out.splitlines()) if m]
        assert [(m[7].encode(), m[8].encode()) for m in records] == written[codec], f"{codec}: {out[-2000:]}"
        assert [int(m[1]) for m in records] == list(range(2 * PER_ROUND))
        assert all(m[6] == "h" for m in records)
        assert batches and all(m[9] == "true" for m in batches)
        assert {m[8] for m in batches} == {codec}, {m[8] for m in batches}
        producers = sorted({int(m[6]) for m in batches})
        assert len(producers) == 2 and all(p >= 0 for p in producers), producers  # one idempotent producer per round
        for producer in producers:  # each producer's sequences run from 0 without a gap, a batch's records in order
            own = [m for m in batches if int(m[6]) == producer]
            assert int(own[0][4]) == 0 and int(own[-1][5]) == PER_ROUND - 1
            assert all(int(b[4]) == int(a[5]) + 1 for a, b in itertools.pairwise(own))
            assert all(int(m[5]) - int(m[4]) == int(m[2]) - int(m[1]) for m in own)

        # The snapshot written at the clean stop after round 0 names round 0's producer and its last batch.
        snapshots = sorted(folder.glob("*.snapshot"))
        assert snapshots, f"no producer snapshot in {folder}"
        first = [m for m in map(SNAPSHOT.match, _dump("--files", str(snapshots[0])).splitlines()) if m]
        last_of_first = [m for m in batches if int(m[6]) == producers[0]][-1]
        assert [(int(m[1]), int(m[2]), int(m[4]), int(m[5])) for m in first] == [
            (producers[0], 0, int(last_of_first[5]), int(last_of_first[2]))], first
        assert int(snapshots[0].stem) == PER_ROUND  # named after the log end offset it covers
        # The one written at the last stop holds both producers, each with its last batch.
        last = [m for m in map(SNAPSHOT.match, _dump("--files", str(snapshots[-1])).splitlines()) if m]
        assert int(snapshots[-1].stem) == 2 * PER_ROUND
        assert sorted((int(m[1]), int(m[5])) for m in last) == sorted(
            (p, int([m for m in batches if int(m[6]) == p][-1][2])) for p in producers), last

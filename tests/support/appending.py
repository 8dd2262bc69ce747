"""Topics and records put straight into a running kafka-shim (no Produce): for the read-side tests.

``append`` does what the Produce path does after validation: ``PartitionLog.append`` of a producer's batch bytes,
then ``Partitions.appended`` (which wakes waiting fetches), on the broker's loop thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from kafka_shim.protocol.records import Compression, build_batch, encode_batch
from kafka_shim.shim.testing.embedded import EmbeddedBroker

Record = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int]  # key, value, headers, timestamp
# Record timestamps an hour before the run, on a whole second: well inside retention.ms (7 days by default), so
# neither broker's retention deletes the records while the tests read them.
T0 = (time.time_ns() // 1_000_000_000 - 3600) * 1000


def create_topic(broker: EmbeddedBroker, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    broker.call(lambda: broker.broker.services.partitions.create_topic(name, partitions, configs))


def batch(records: Sequence[Record], compression: Compression = Compression.NONE) -> bytes:
    return encode_batch(build_batch(list(records), compression=compression))


def values(prefix: str, count: int, *, key: bytes | None = b"k", t0: int = T0) -> list[Record]:
    return [(key, f"{prefix}-{i}".encode(), [], t0 + i) for i in range(count)]


def append(broker: EmbeddedBroker, topic: str, partition: int, data: bytes) -> tuple[int, int]:
    """Append batch bytes to a partition; (base offset, last offset)."""

    def run() -> tuple[int, int]:
        partitions = broker.broker.services.partitions
        info = partitions.get(topic, partition).log.append(data)
        partitions.appended(topic, partition)
        return info.base_offset, info.last_offset

    return broker.call(run)


def append_records(broker: EmbeddedBroker, topic: str, partition: int, records: Sequence[Record],
                   compression: Compression = Compression.NONE) -> tuple[int, int]:
    return append(broker, topic, partition, batch(records, compression))

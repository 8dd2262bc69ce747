"""Where one typical client test spends its time on kafka-shim: the phases of bench/fixture.py's test body.

    .venv/bin/python bench/client_test_phases.py [--runs 8] [--timeline]

Create a topic (AdminClient), produce 10 records, consume them with a new consumer group, close: the median of each
phase over ``--runs`` tests, with librdkafka's defaults and with the reconnect and retry backoffs set to 1 ms (to
show which waits a client setting moves and which it does not). ``--timeline`` prints the consumer's librdkafka
debug log for one more test with its gaps over 20 ms: the fixed 100 ms that ``rd_kafka_offset_reset`` waits before
asking for the log start of a partition whose group has no committed offset shows there.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions

SETTINGS = {"librdkafka defaults": {}, "backoffs 1 ms": {"reconnect.backoff.ms": 1, "retry.backoff.ms": 1}}
PHASES = ("create topic", "produce", "consume", "close", "whole test")


def one_test(bootstrap: str, topic: str, extra: dict[str, Any], logger: logging.Logger | None = None) -> list[float]:
    started = time.perf_counter()
    admin = AdminClient({"bootstrap.servers": bootstrap, **extra})  # kept: a collected client cancels its futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    created = time.perf_counter()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, **extra})
    for i in range(10):
        producer.produce(topic, str(i).encode())
    if producer.flush(30):
        raise SystemExit("the producer did not deliver within 30 s")
    produced = time.perf_counter()
    debug = {"debug": "cgrp,broker,fetch,topic,protocol"} if logger else {}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest", **extra, **debug},
                        **({"logger": logger} if logger else {}))
    consumer.subscribe([topic])
    values: list[bytes] = []
    while len(values) < 10:
        message = consumer.poll(30)
        if message is None:
            raise SystemExit("no record within 30 s")
        if message.error() is None:
            values.append(message.value())
    consumed = time.perf_counter()
    consumer.close()
    closed = time.perf_counter()
    return [created - started, produced - created, consumed - produced, closed - consumed, closed - started]


class Timeline(logging.Handler):
    """librdkafka's debug lines with the time since the consumer was created; gaps over 20 ms are marked."""

    def __init__(self) -> None:
        super().__init__()
        self.start = time.perf_counter()
        self.last = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        now = (time.perf_counter() - self.start) * 1000
        gap = now - self.last
        self.last = now
        mark = f"  <-- {gap:.0f} ms after the line before" if gap > 20 else ""
        print(f"{now:8.1f} ms  {record.getMessage()[:160]}{mark}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--timeline", action="store_true")
    a = ap.parse_args(argv)
    print(f"command: python bench/client_test_phases.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; ms, median of {a.runs} tests\n")
    shim = KafkaShim(ShimOptions.from_marker({}))
    shim.start()
    try:
        print(f"{'client settings':22s}" + "".join(f"{p:>14s}" for p in PHASES))
        n = 0
        for label, extra in SETTINGS.items():
            runs = []
            for _ in range(a.runs):
                n += 1
                runs.append(one_test(shim.bootstrap_servers, f"phases-{n}", extra))
            print(f"{label:22s}" + "".join(f"{statistics.median(r[i] for r in runs) * 1000:14.0f}" for i in range(len(PHASES))))
        if a.timeline:
            logger = logging.getLogger("librdkafka-timeline")
            logger.setLevel(logging.DEBUG)
            handler = Timeline()
            logger.addHandler(handler)
            print("\nthe consumer's librdkafka debug log, one more test with the backoffs at 1 ms:")
            handler.start = time.perf_counter()
            one_test(shim.bootstrap_servers, "phases-timeline", SETTINGS["backoffs 1 ms"], logger)
    finally:
        shim.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

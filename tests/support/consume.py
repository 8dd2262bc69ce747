"""Reading records back with confluent-kafka in a consumer group, waiting on their arrival with a generous bound."""

from __future__ import annotations

import time

from confluent_kafka import Consumer


def consume_values(config: dict, topic: str, count: int, group: str, timeout: float = 60) -> list[bytes]:
    """Up to ``count`` record values of ``topic`` from the earliest offset, or fewer when ``timeout`` passed first."""
    consumer = Consumer(config | {"group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values, deadline = [], time.monotonic() + timeout
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values

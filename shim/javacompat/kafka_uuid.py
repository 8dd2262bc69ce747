"""Kafka's ``Uuid.randomUuid``: topic ids, cluster ids and delegation token ids as a Kafka 3.9 controller makes them."""

from __future__ import annotations

import base64
import uuid

# Uuid.RESERVED: the zero id and the metadata topic's id.
_RESERVED = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})


def kafka_uuid_string(value: uuid.UUID) -> str:
    """``Uuid.toString``: the 16 bytes as URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def random_uuid() -> uuid.UUID:
    """A random (version 4) id that is not reserved and whose string form does not start with '-', which Kafka
    redraws because command-line tools would read such an id as an option."""
    while True:
        value = uuid.uuid4()
        if value not in _RESERVED and not kafka_uuid_string(value).startswith("-"):
            return value

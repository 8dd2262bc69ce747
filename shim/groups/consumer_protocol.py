"""The classic consumer's embedded protocol (Kafka's ConsumerProtocol): subscriptions in, assignments out.

Kafka's ``ConsumerProtocolSubscription`` (v0: topics, user data; v1+: owned partitions; v2+: generation id; v3+:
rack id) and ``ConsumerProtocolAssignment`` (partitions by topic, user data), big-endian and not flexible. A
classic-protocol member of a KIP-848 consumer group sends its subscription in JoinGroup and gets its assignment in
SyncGroup in these forms (GroupMetadataManager.deserializeSubscription / prepareAssignment). The assignment is
written at the member's subscription version (capped at 3, the latest 3.9 knows).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

LATEST_ASSIGNMENT_VERSION = 3


class MalformedProtocol(ValueError):
    pass


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: list[str]
    owned: list[tuple[str, list[int]]] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.data, self.at)
        except struct.error as e:
            raise MalformedProtocol(str(e)) from None
        self.at += struct.calcsize(fmt)
        return value

    def string(self, nullable: bool = False) -> str | None:
        length = self.take(">h")
        if length < 0:
            if nullable:
                return None
            raise MalformedProtocol("null string")
        if self.at + length > len(self.data):
            raise MalformedProtocol("string past the end")
        text = self.data[self.at:self.at + length].decode("utf-8", "replace")
        self.at += length
        return text

    def count(self) -> int:
        n = self.take(">i")
        if n < 0 or n > len(self.data):
            raise MalformedProtocol("bad array length")
        return n

    def skip_bytes(self) -> None:
        length = self.take(">i")
        if length > 0:
            self.at += length


def version_of(metadata: bytes) -> int:
    """ConsumerProtocol.deserializeVersion."""
    if len(metadata) < 2:
        raise MalformedProtocol("no version")
    return struct.unpack_from(">h", metadata, 0)[0]


def decode_subscription(metadata: bytes) -> Subscription:
    reader = _Reader(metadata)
    version = reader.take(">h")
    if version < 0:
        raise MalformedProtocol(f"version {version}")
    topics = [reader.string() for _ in range(reader.count())]
    reader.skip_bytes()  # user data
    owned: list[tuple[str, list[int]]] = []
    generation, rack = -1, None
    if version >= 1:
        for _ in range(reader.count()):
            topic = reader.string()
            owned.append((topic, [reader.take(">i") for _ in range(reader.count())]))
    if version >= 2:
        generation = reader.take(">i")
    if version >= 3:
        rack = reader.string(nullable=True)
    return Subscription(version, [t for t in topics if t is not None], owned, generation, rack)


def encode_assignment(version: int, partitions: list[tuple[str, list[int]]]) -> bytes:
    """A ConsumerProtocolAssignment with no user data."""
    version = min(max(version, 0), LATEST_ASSIGNMENT_VERSION)
    out = [struct.pack(">hi", version, len(partitions))]
    for topic, numbers in partitions:
        name = topic.encode()
        out.append(struct.pack(">h", len(name)) + name + struct.pack(">i", len(numbers)))
        out.append(b"".join(struct.pack(">i", p) for p in numbers))
    out.append(struct.pack(">i", -1))
    return b"".join(out)

"""``partition.metadata``: the topic id a partition directory belongs to.

Kafka's counterpart: ``PartitionMetadataFile`` with ``PartitionMetadataFileFormatter`` and
``PartitionMetadataReadBuffer``. The file is two lines, ``version: 0`` and ``topic_id: <id>``, with no newline at the
end; the id is Kafka's ``Uuid.toString()``, URL-safe base64 of the 16 bytes without padding. Written beside and
renamed over, so it is whole or absent.
"""

from __future__ import annotations

import base64
import uuid

from kafka_shim.shim.javacompat.kafka_uuid import kafka_uuid_string
from kafka_shim.shim.log.storage import Directory

FILE = "partition.metadata"
VERSION = 0


def parse_kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def write(directory: Directory, topic_id: uuid.UUID) -> None:
    directory.replace(FILE, f"version: {VERSION}\ntopic_id: {kafka_uuid_string(topic_id)}".encode())


def read(directory: Directory) -> uuid.UUID | None:
    """The topic id recorded in the directory, or None when there is no (readable) file."""
    if not directory.exists(FILE):
        return None
    text = directory.read(FILE, 0, directory.size(FILE)).decode("utf-8", "replace")
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    if fields.get("version") != str(VERSION) or "topic_id" not in fields:
        return None
    try:
        return parse_kafka_uuid(fields["topic_id"].strip())
    except ValueError:
        return None

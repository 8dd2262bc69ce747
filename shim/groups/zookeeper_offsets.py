"""The offsets a ZooKeeper-mode Kafka (before 3.3) kept in ZooKeeper: what OffsetCommit v0 writes and OffsetFetch v0
reads (``/consumers/<group>/offsets/<topic>/<partition>``, the old Scala consumer's store).

They live apart from ``__consumer_offsets``: a v0 commit needs no group coordinator, carries no metadata, and a v1+
fetch never sees it (nor a v0 fetch a v1+ commit). ZooKeeper kept the nodes when the topic or group went away, and so
does this store. With a data directory they are kept across restarts in ``kafka-shim-zookeeper-offsets.json``, as
ZooKeeper kept them across broker restarts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from kafka_shim.shim.groups.offsets import TopicPartition

FILE_NAME = "kafka-shim-zookeeper-offsets.json"


class ZooKeeperOffsets:
    def __init__(self, data_dir: Path | None = None) -> None:
        self._file = data_dir / FILE_NAME if data_dir is not None else None
        self._offsets: dict[str, dict[TopicPartition, int]] = {}
        if self._file is not None and self._file.exists():
            for group_id, entries in json.loads(self._file.read_text(encoding="utf-8")).items():
                self._offsets[group_id] = {(topic, int(partition)): int(offset) for topic, partition, offset in entries}

    def commit(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Store the offsets (ZkClient.setOrCreateConsumerOffset each), durably when there is a data directory."""
        if not offsets:
            return
        self._offsets.setdefault(group_id, {}).update(offsets)
        self._save()

    def get(self, group_id: str, partition: TopicPartition) -> int | None:
        """The stored offset (ZkClient.getConsumerOffset), None when the node does not exist."""
        return self._offsets.get(group_id, {}).get(partition)

    def _save(self) -> None:
        if self._file is None:
            return
        document = {group_id: [[topic, partition, offset] for (topic, partition), offset in entries.items()]
                    for group_id, entries in self._offsets.items()}
        tmp = self._file.with_suffix(".tmp")
        tmp.write_text(json.dumps(document), encoding="utf-8")
        os.replace(tmp, self._file)

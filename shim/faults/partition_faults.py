"""Partition faults: a partition without a leader for a time, a fetch that stalls on a partition for a time.

Leaderless (librdkafka mock's ``partition_set_leader(-1)``): the partition's leader becomes -1 and its leader epoch
goes up, as KRaft records a partition losing its leader. The broker then answers as a Kafka broker that no longer
leads it: Metadata and DescribeTopicPartitions show leader -1 with LEADER_NOT_AVAILABLE; Produce, Fetch,
ListOffsets, OffsetForLeaderEpoch and DeleteRecords answer NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH to a
client that sends the old epoch). When the fault ends (its time is up, or it is removed) the broker leads again,
with the epoch up once more, so clients that cached the old leader refresh their metadata.

Stalled fetch: Fetch requests read no records of the partition while the stall lasts (they wait their
``max_wait_ms`` as for an idle partition, then answer its offsets with no records); other partitions are served.

Plain Python on the broker's event loop; a timed fault ends by a timer on that loop.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from kafka_shim.shim.cluster.topics import INTERNAL_TOPICS
from kafka_shim.shim.faults.errors import FaultError
from kafka_shim.shim.partitions.leadership import change_leader
from kafka_shim.shim.partitions.manager import Partitions

KINDS = ("leaderless", "stall_fetch")


@dataclass
class PartitionFault:
    kind: str
    topic: str
    topic_id: uuid.UUID
    partitions: tuple[int, ...]
    until: float | None  # time.monotonic() when it ends; None: until removed
    fault_id: int = 0
    timer: asyncio.TimerHandle | None = None
    leaders: dict[int, int] = field(default_factory=dict)  # partition -> the leader it had, given back at the end

    def describe(self) -> dict[str, Any]:
        left = None if self.until is None else max(0, round((self.until - time.monotonic()) * 1000))
        return {"id": self.fault_id, "kind": self.kind, "topic": self.topic, "partitions": list(self.partitions),
                "remaining_ms": left}


@dataclass
class PartitionFaults:
    partitions: Partitions | None = None  # set by the broker when it builds its services
    faults: list[PartitionFault] = field(default_factory=list)
    # (topic, partition) -> the faults stalling it; read by every Fetch while non-empty.
    stalled: dict[tuple[str, int], int] = field(default_factory=dict)

    def add(self, kind: str, topic: str, partition: int | None, duration_ms: int | None, fault_id: int) -> PartitionFault:
        if kind not in KINDS:
            raise FaultError(f"kind={kind!r}: use one of {', '.join(KINDS)}")
        if duration_ms is not None and duration_ms <= 0:
            raise FaultError(f"duration_ms={duration_ms}: more than 0, or None until removed")
        found = self.partitions.cluster.topics.get(topic) if self.partitions is not None else None
        if found is None:
            raise FaultError(f"there is no topic {topic!r}; create it before making its partitions fail")
        if kind == "leaderless" and topic in INTERNAL_TOPICS:
            raise FaultError(f"{topic} is internal: to move a coordinator away, inject NOT_COORDINATOR errors instead")
        count = len(found.partitions)
        if partition is not None and not 0 <= partition < count:
            raise FaultError(f"{topic} has partitions 0 to {count - 1}; partition {partition} does not exist")
        chosen = tuple(range(count)) if partition is None else (partition,)
        until = None if duration_ms is None else time.monotonic() + duration_ms / 1000
        fault = PartitionFault(kind, topic, found.topic_id, chosen, until, fault_id)
        if kind == "leaderless":
            self._set_leader(fault, leaderless=True)
        else:
            for p in chosen:
                self.stalled[(topic, p)] = self.stalled.get((topic, p), 0) + 1
        if duration_ms is not None:
            fault.timer = asyncio.get_running_loop().call_later(duration_ms / 1000, self._end, fault)
        self.faults.append(fault)
        return fault

    def remove(self, fault_id: int) -> bool:
        for fault in self.faults:
            if fault.fault_id == fault_id:
                self._end(fault)
                return True
        return False

    def clear(self) -> None:
        for fault in list(self.faults):
            self._end(fault)

    def describe(self) -> list[dict[str, Any]]:
        return [fault.describe() for fault in self.faults]

    def _end(self, fault: PartitionFault) -> None:
        if fault not in self.faults:
            return
        self.faults.remove(fault)
        if fault.timer is not None:
            fault.timer.cancel()
        if fault.kind == "leaderless":
            self._set_leader(fault, leaderless=False)
            return
        for p in fault.partitions:
            key = (fault.topic, p)
            left = self.stalled.get(key, 0) - 1
            if left > 0:
                self.stalled[key] = left
            else:
                self.stalled.pop(key, None)

    def _set_leader(self, fault: PartitionFault, *, leaderless: bool) -> None:
        """Take the partitions' leadership away, or give it back (to the leader they had, or the first live
        in-sync replica). A partition another leaderless fault still holds stays leaderless."""
        assert self.partitions is not None
        cluster = self.partitions.cluster
        topic = cluster.topics.get(fault.topic)
        if topic is None or topic.topic_id != fault.topic_id:
            return  # deleted (or deleted and made again) meanwhile: nothing of it is left to restore
        held = {p for other in self.faults if other is not fault and other.kind == "leaderless"
                and other.topic_id == fault.topic_id for p in other.partitions}
        for index in fault.partitions:
            if index >= len(topic.partitions) or index in held:
                continue
            partition = topic.partitions[index]
            if leaderless:
                if partition.leader_id >= 0:
                    fault.leaders[index] = partition.leader_id
                change_leader(self.partitions, fault.topic, index, -1)
                continue
            live = [r for r in partition.isr if r not in cluster.down]
            before = fault.leaders.get(index)
            if partition.leader_id < 0 and live:
                change_leader(self.partitions, fault.topic, index, before if before in live else live[0])

"""Ids that legitimately change between runs, re-mapped so a replay's later requests still make sense.

The broker hands out some ids in its answers and the client sends them back later. A replay gets new ones, so the
replayer learns "recorded value -> replayed value" from each pair of answers (recorded and replayed, walked in
parallel by ``diff.py``) and rewrites later requests before sending them. Generic, by field name over the decoded
messages (any API, any nesting):

| kind | learnt from answers' fields | rewritten in requests' fields |
| --- | --- | --- |
| producer | ``producer_id`` with ``producer_epoch`` beside it (InitProducerId) | the same pair wherever both sit in one struct (InitProducerId v3+, AddPartitionsToTxn), ``producer_id`` alone elsewhere, and the producer id and epoch inside Produce's record batches (CRC-32C recomputed) |
| member | ``member_id``, JoinGroup's ``leader`` (JoinGroup, ConsumerGroupHeartbeat) | ``member_id`` (SyncGroup and its assignments, Heartbeat, OffsetCommit, LeaveGroup and its members, ConsumerGroupHeartbeat, JoinGroup rejoins) |
| generation | ``generation_id`` / ``member_epoch`` are not rewritten: a fresh replay of the same workload reaches the same generations and epochs, and rewriting small integers by value would hit unrelated fields |
| topic | ``topic_id`` (Metadata, CreateTopics, DescribeTopicPartitions) | ``topic_id`` (Fetch v13+, DeleteTopics v6, Metadata v10+ by id, ...) |
| fetch session | ``session_id`` (Fetch) | ``session_id`` (Fetch) |

Not re-mapped: transactional producer state beyond the ids (kafka-shim has no transactions yet), SyncGroup's
``assignment`` bytes and JoinGroup's ``metadata`` bytes (opaque to the broker; the consumer protocol carries no
member ids), client-chosen ids (``group_instance_id``, transactional ids), and ids inside ``request_json``-only rows
(not re-sent, see plan.py). A null value (-1, "", a zero UUID, 0 for session ids) is never mapped: a recorded id
answered as null in the replay is a difference, not a mapping.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kafka_shim.protocol.records.crc import crc32c

# Answer field name -> the mapping it feeds.
LEARNT = {"producer_id": "producer", "member_id": "member", "leader": "member", "topic_id": "topic", "session_id": "session"}
# Request field name -> the mapping applied to it.
APPLIED = {"producer_id": "producer", "member_id": "member", "topic_id": "topic", "session_id": "session"}

_NULL_UUID = uuid.UUID(int=0)


def is_null(kind: str, value: Any) -> bool:
    if value is None or value == "" or value == _NULL_UUID:
        return True
    if kind == "producer":
        return value == -1
    if kind == "session":
        return value == 0
    return False


class IdMap:
    """Recorded -> replayed ids by kind; producers map (id, epoch) pairs, with the id alone as a fallback."""

    def __init__(self) -> None:
        self.values: dict[str, dict[Any, Any]] = {"producer": {}, "member": {}, "topic": {}, "session": {}}
        self.producer_pairs: dict[tuple[int, int], tuple[int, int]] = {}

    def known(self, kind: str, recorded: Any) -> Any | None:
        return self.values[kind].get(recorded)

    def learn(self, kind: str, recorded: Any, replayed: Any) -> None:
        if not (is_null(kind, recorded) or is_null(kind, replayed)):
            self.values[kind][recorded] = replayed

    def learn_producer(self, recorded: tuple[int, int], replayed: tuple[int, int]) -> None:
        if recorded[0] >= 0 and replayed[0] >= 0:
            self.producer_pairs[recorded] = replayed
            self.values["producer"][recorded[0]] = replayed[0]

    def producer(self, pid: int, epoch: int) -> tuple[int, int]:
        pair = self.producer_pairs.get((pid, epoch))
        if pair is not None:
            return pair
        return self.values["producer"].get(pid, pid), epoch

    # -- requests ------------------------------------------------------------------------------------------------

    def rewrite(self, message: Any) -> bool:
        """Rewrite ``message`` (a decoded request body) in place; True when anything changed."""
        from kafka_shim.protocol.messages import Struct

        changed = False
        fields = getattr(message, "_fields", ())
        if "producer_id" in fields and "producer_epoch" in fields:
            old = (message.producer_id, message.producer_epoch)
            new = self.producer(*old)
            if new != old:
                message.producer_id, message.producer_epoch = new
                changed = True
        for name in fields:
            value = getattr(message, name)
            kind = APPLIED.get(name)
            if kind is not None and not (kind == "producer" and "producer_epoch" in fields):
                new = self.values[kind].get(value) if not isinstance(value, list) else None
                if new is not None and new != value:
                    setattr(message, name, new)
                    changed = True
            elif name == "records" and isinstance(value, bytes | bytearray) and self.values["producer"]:
                patched = self.rewrite_batches(bytes(value))
                if patched != value:
                    setattr(message, name, patched)
                    changed = True
            elif isinstance(value, Struct):
                changed |= self.rewrite(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, Struct):
                        changed |= self.rewrite(item)
        return changed

    def rewrite_batches(self, records: bytes) -> bytes:
        """Magic-2 batches with their producer id and epoch re-mapped and the CRC recomputed; others as they are."""
        out = bytearray(records)
        pos = 0
        while pos + _HEADER <= len(out):
            length = struct.unpack_from(">i", out, pos + 8)[0]
            end = pos + 12 + length
            if length < _HEADER - 12 or end > len(out) or out[pos + 16] != 2:
                break  # a legacy message set or a cut batch: left untouched
            pid, epoch = struct.unpack_from(">qh", out, pos + _PRODUCER_AT)
            new = self.producer(pid, epoch)
            if new != (pid, epoch):
                struct.pack_into(">qh", out, pos + _PRODUCER_AT, *new)
                struct.pack_into(">I", out, pos + 17, crc32c(bytes(out[pos + 21:end])))
            pos = end
        return bytes(out)


_HEADER = 61  # bytes of a magic-2 batch header
_PRODUCER_AT = 43  # offset of producerId (then producerEpoch) in the batch

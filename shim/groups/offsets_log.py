"""Committed offsets and group metadata kept in ``__consumer_offsets``, in Kafka 3.9's record formats.

Kafka's counterpart: GroupMetadataManager (``offsetCommitKey`` / ``offsetCommitValue`` / ``groupMetadataKey`` /
``groupMetadataValue`` and the loader ``doLoadGroupsAndOffsets``), with the record schemas of the group coordinator
(OffsetCommitKey v1, OffsetCommitValue v3 — v1 when the commit carries an explicit expiry —, GroupMetadataKey v2,
GroupMetadataValue v3; versions 0-4 are read). Each record is a version-prefixed key and value in a magic-2 batch,
CREATE_TIME, uncompressed, written to partition ``abs(javaHash(group)) % partitions`` of the topic, so
``kafka-dump-log.sh --offsets-decoder`` prints them as it prints Kafka's. A removed offset or group is a record with
a null value (a tombstone). At start every partition is read from its log start: the last record of each key wins.
KIP-848 consumer groups' records (key versions 3-8, ``consumer_records.py``) share the topic; they are collected
per group here and rebuilt by the coordinator.

The topic's partitions are reached through ``OffsetsTopic``, which the Broker provides (groups/ may not import the
partitions manager). The log is not compacted: it grows with every commit until segments are deleted by retention
(``cleanup.policy=compact`` is recorded, not applied); reading it back at start costs time proportional to its size.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.records import NO_SEQUENCE, build_batch, encode_batch
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.groups import consumer_records
from kafka_shim.shim.groups.offsets import OffsetAndMetadata, SinkError, TopicPartition
from kafka_shim.shim.groups.record_reader import RecordReader
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.log.partition_log import PartitionLog, decoded_batches, wall_clock_ms
from kafka_shim.shim.producers.state import Outcome, PartitionProducers

log = get_logger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_OFFSET_KEY_VERSION, _GROUP_KEY_VERSION = 1, 2


class OffsetsTopic(Protocol):
    """``__consumer_offsets`` as the coordinator needs it (the Broker adapts the partitions manager)."""

    def partition_count(self) -> int | None:
        """The topic's partitions, or None while it does not exist."""

    def log(self, partition: int) -> PartitionLog:
        """A partition's log (the topic exists)."""

    def leader_epoch(self, partition: int) -> int:
        """The partition's leader epoch, stamped on the batches the coordinator writes (as on a producer's)."""

    def producers(self, partition: int) -> PartitionProducers | None:
        """The partition's producer state, which a transactional batch written here joins (None: not kept)."""

    def appended(self, partition: int) -> None:
        """Tell the broker a partition grew (fetches waiting on it wake up)."""


def partition_for(group_id: str, partitions: int) -> int:
    """GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % partitions (abs(MIN_VALUE) is 0)."""
    h = java_string_hash(group_id)
    h = h - (1 << 32) if h & 0x80000000 else h
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# -- record formats ---------------------------------------------------------------------------------------------------


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _I16.pack(len(raw)) + raw


def _nullable_string(text: str | None) -> bytes:
    return _I16.pack(-1) if text is None else _string(text)


def offset_commit_key(group_id: str, tp: TopicPartition) -> bytes:
    return _I16.pack(_OFFSET_KEY_VERSION) + _string(group_id) + _string(tp[0]) + _I32.pack(tp[1])


def group_metadata_key(group_id: str) -> bytes:
    return _I16.pack(_GROUP_KEY_VERSION) + _string(group_id)


def offset_commit_value(o: OffsetAndMetadata) -> bytes:
    """Version 3, or 1 when the commit carries an explicit expiry (GroupMetadataManager.offsetCommitValue)."""
    if o.expire_timestamp is not None:
        return (_I16.pack(1) + _I64.pack(o.offset) + _string(o.metadata) + _I64.pack(o.commit_timestamp)
                + _I64.pack(o.expire_timestamp))
    return _I16.pack(3) + _I64.pack(o.offset) + _I32.pack(o.leader_epoch) + _string(o.metadata) + _I64.pack(o.commit_timestamp)


@dataclass(frozen=True, slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """A classic group as GroupMetadataValue holds it."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int  # -1 when unknown
    members: tuple[MemberRecord, ...] = ()


def group_metadata_value(group: GroupRecord) -> bytes:
    """Version 3 (GroupMetadataManager.groupMetadataValue)."""
    out = bytearray(_I16.pack(3))
    out += _string(group.protocol_type) + _I32.pack(group.generation) + _nullable_string(group.protocol)
    out += _nullable_string(group.leader) + _I64.pack(group.current_state_timestamp) + _I32.pack(len(group.members))
    for m in group.members:
        out += _string(m.member_id) + _nullable_string(m.group_instance_id) + _string(m.client_id) + _string(m.client_host)
        out += _I32.pack(m.rebalance_timeout_ms) + _I32.pack(m.session_timeout_ms)
        out += _I32.pack(len(m.subscription)) + m.subscription + _I32.pack(len(m.assignment)) + m.assignment
    return bytes(out)


def read_key(key: bytes) -> tuple[str, TopicPartition | None] | None:
    """(group, (topic, partition)) for an offset key, (group, None) for a group key, None for an unknown version."""
    r = RecordReader(key)
    version = r.i16()
    if version in (0, 1):
        group, topic = r.string() or "", r.string() or ""
        return group, (topic, r.i32())
    if version == 2:
        return r.string() or "", None
    return None


def read_offset_value(value: bytes) -> OffsetAndMetadata:
    r = RecordReader(value)
    version = r.i16()
    if not 0 <= version <= 4:
        raise ValueError(f"unknown offset commit value version {version}")
    r.flexible = version >= 4
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.string() or ""
    commit_timestamp = r.i64()
    expire = r.i64() if version == 1 else -1
    return OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp, None if expire == -1 else expire)


def read_group_value(value: bytes) -> GroupRecord:
    r = RecordReader(value)
    version = r.i16()
    if not 0 <= version <= 4:
        raise ValueError(f"unknown group metadata value version {version}")
    r.flexible = version >= 4
    protocol_type, generation = r.string() or "", r.i32()
    protocol, leader = r.string(), r.string()
    state_timestamp = r.i64() if version >= 2 else -1
    members = []
    for _ in range(max(r.array_length(), 0)):
        member_id = r.string() or ""
        instance_id = r.string() if version >= 3 else None
        client_id, client_host = r.string() or "", r.string() or ""
        rebalance_timeout = r.i32() if version >= 1 else None
        session_timeout = r.i32()
        subscription, assignment = r.bytes_(), r.bytes_()
        r.skip_tags()
        members.append(MemberRecord(member_id, instance_id, client_id, client_host,
                                    session_timeout if rebalance_timeout is None else rebalance_timeout, session_timeout,
                                    subscription, assignment))
    return GroupRecord(protocol_type, generation, protocol, leader, state_timestamp, tuple(members))


# -- the log ----------------------------------------------------------------------------------------------------------


@dataclass
class Loaded:
    """What the topic holds at start: offsets and group metadata per group (the last record of each key)."""

    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    groups: dict[str, GroupRecord] = field(default_factory=dict)
    # KIP-848 consumer groups: each group's records (consumer_records.py), the last value of each key.
    consumer_groups: dict[str, dict[bytes, bytes]] = field(default_factory=dict)
    # Transactional offsets whose transaction has no marker in the log yet: producer id -> group -> offsets.
    pending: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = field(default_factory=dict)




class OffsetsLog:
    """Appends the coordinator's records to ``__consumer_offsets`` and reads them back (an ``OffsetsSink``)."""

    def __init__(self, topic: OffsetsTopic, now_ms=wall_clock_ms) -> None:
        self.topic = topic
        self.now_ms = now_ms

    def append_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self._append(group_id, [(offset_commit_key(group_id, tp), offset_commit_value(o)) for tp, o in offsets.items()],
                     base_sequence=0)

    def append_tombstones(self, group_id: str, partitions: Iterable[TopicPartition], *, group: bool = False) -> None:
        records: list[tuple[bytes, bytes | None]] = [(offset_commit_key(group_id, tp), None) for tp in partitions]
        if group:
            records.append((group_metadata_key(group_id), None))
        if records:
            self._append(group_id, records)

    def append_transactional_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                     offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """TxnOffsetCommit's records: a transactional batch of the producer (GroupMetadataManager.storeOffsets with a
        producer id), applied by the transaction's marker. As any append of the partition it goes through the
        partition's producer state (origin COORDINATOR: an epoch older than the producer's there is
        INVALID_PRODUCER_EPOCH), and opens the producer's transaction there until the marker: a later TxnOffsetCommit
        of the producer is then not verified, and a marker of an older epoch than the last batch's is refused."""
        self._append(group_id, [(offset_commit_key(group_id, tp), offset_commit_value(o)) for tp, o in offsets.items()],
                     producer=(producer_id, producer_epoch), base_sequence=0)

    def append_group(self, group_id: str, group: GroupRecord) -> None:
        self._append(group_id, [(group_metadata_key(group_id), group_metadata_value(group))])

    def append_records(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        """Append already-encoded records (a consumer group's, consumer_records.py) in one batch to the group's partition."""
        self._append(group_id, records)

    def _append(self, group_id: str, records: list[tuple[bytes, bytes | None]],
                producer: tuple[int, int] | None = None, base_sequence: int = NO_SEQUENCE) -> None:
        """One batch of ``records``. Offset commits (transactional or not) carry base sequence 0, as
        GroupMetadataManager.storeOffsets builds them; group metadata and tombstones carry none (-1)."""
        count = self.topic.partition_count()
        if count is None:
            raise SinkError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{OFFSETS_TOPIC} does not exist")
        now = self.now_ms()
        transactional = {} if producer is None else {"transactional": True, "producer_id": producer[0],
                                                     "producer_epoch": producer[1]}
        data = encode_batch(build_batch([(key, value, [], now) for key, value in records], base_sequence=base_sequence,
                                        **transactional))
        partition = partition_for(group_id, count)
        producers = self.topic.producers(partition) if producer is not None else None
        if producers is not None and producer is not None:
            verdict = producers.check_coordinator_append(*producer)
            if verdict.outcome is Outcome.REJECT:
                raise SinkError(verdict.error, verdict.detail or verdict.error.name)
        try:
            info = self.topic.log(partition).append(data, leader_epoch=self.topic.leader_epoch(partition))
        except Exception as exc:  # OSError from the disk, LogError from the log: Kafka's append fails with 56
            raise SinkError(getattr(exc, "error_code", ErrorCode.KAFKA_STORAGE_ERROR), str(exc)) from exc
        if producers is not None and producer is not None:
            timestamp = info.log_append_time if info.log_append_time != -1 else now
            producers.record_append(producer[0], producer[1], base_sequence, base_sequence + len(records) - 1,
                                    info.base_offset, info.last_offset, timestamp, transactional=True)
        self.topic.appended(partition)

    def load(self) -> Loaded:
        """Read every partition from its log start (GroupMetadataManager.doLoadGroupsAndOffsets): transactional
        offsets wait for their producer's marker, applied on commit, dropped on abort."""
        loaded = Loaded()
        count = self.topic.partition_count() or 0
        for partition in range(count):
            waiting: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}
            for batch in decoded_batches(self.topic.log(partition)):
                if batch.is_control:
                    by_group = waiting.pop(batch.producer_id, {})
                    key = batch.records[0].key if batch.records else None
                    if key is not None and len(key) >= 4 and _I16.unpack_from(key, 2)[0] == 1:  # ControlRecordType COMMIT
                        for group_id, offsets in by_group.items():
                            loaded.offsets.setdefault(group_id, {}).update(offsets)
                    continue
                if batch.is_transactional:
                    for record in batch.records:
                        parsed = read_key(record.key) if record.key else None
                        if parsed is not None and parsed[1] is not None and record.value is not None:
                            group_offsets = waiting.setdefault(batch.producer_id, {}).setdefault(parsed[0], {})
                            group_offsets[parsed[1]] = read_offset_value(record.value)
                    continue
                for record in batch.records:
                    try:
                        self._replay(loaded, record.key, record.value, partition)
                    except (ValueError, struct.error, IndexError) as exc:  # Kafka logs an unreadable record and goes on
                        log.warning("unreadable_offsets_topic_record", partition=partition, offset=batch.base_offset + record.offset_delta,
                                    error=str(exc), hint="the record is skipped; the offsets it held are not restored")
            for producer_id, by_group in waiting.items():
                for group_id, offsets in by_group.items():
                    loaded.pending.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)
        return loaded

    @staticmethod
    def _replay(loaded: Loaded, key: bytes | None, value: bytes | None, partition: int) -> None:
        if key and len(key) >= 2 and _I16.unpack_from(key)[0] in consumer_records.KEY_VERSIONS:
            _, group_id, _ = consumer_records.read_key(key)
            records = loaded.consumer_groups.setdefault(group_id, {})
            if value is None:
                records.pop(key, None)
            else:
                records[key] = value
            return
        parsed = read_key(key) if key else None
        if parsed is None:
            log.warning("unknown_offsets_topic_record", partition=partition, hint="a record kafka-shim does not know; ignored")
            return
        group_id, tp = parsed
        if tp is not None:
            offsets = loaded.offsets.setdefault(group_id, {})
            if value is None:
                offsets.pop(tp, None)
            else:
                offsets[tp] = read_offset_value(value)
        elif value is None:
            loaded.groups.pop(group_id, None)
        else:
            loaded.groups[group_id] = read_group_value(value)

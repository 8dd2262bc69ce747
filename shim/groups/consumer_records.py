"""KIP-848 consumer groups kept in ``__consumer_offsets``, in Kafka 3.9's record formats.

Kafka's counterparts: ``GroupCoordinatorRecordHelpers.newConsumerGroup*Record`` / ``*Tombstone`` (what the new group
coordinator writes when a group changes) and ``GroupMetadataManager.replay`` (how it rebuilds its groups at load),
with the schemas of ``group-coordinator/src/main/resources/common/message``:

    key version  record                                          value (version 0, flexible)
    3            ConsumerGroupMetadata(GroupId)                  Epoch
    4            ConsumerGroupPartitionMetadata(GroupId)         Topics[TopicId, TopicName, NumPartitions, PartitionMetadata[]]
    5            ConsumerGroupMemberMetadata(GroupId, MemberId)  InstanceId, RackId, ClientId, ClientHost,
                                                                 SubscribedTopicNames, SubscribedTopicRegex, RebalanceTimeoutMs,
                                                                 ServerAssignor, tag 0: ClassicMemberMetadata
    6            ConsumerGroupTargetAssignmentMetadata(GroupId)  AssignmentEpoch
    7            ConsumerGroupTargetAssignmentMember(GroupId, MemberId)  TopicPartitions[TopicId, Partitions]
    8            ConsumerGroupCurrentMemberAssignment(GroupId, MemberId) MemberEpoch, PreviousMemberEpoch, State,
                                                                 AssignedPartitions[], PartitionsPendingRevocation[]

Keys are not flexible (int16 version, then int16-length strings); values are (compact strings and arrays, a tagged
field section). ``State`` is ``MemberState``'s byte: STABLE 0, UNREVOKED_PARTITIONS 1, UNRELEASED_PARTITIONS 2.

Kafka appends the records of each change as it makes it. ``ConsumerGroupRecorder`` gets there by difference: after
every call that changed a group it compares the group's records with those last written and appends the changed
ones, tombstones (null values) first in Kafka's removal order (current assignment, target member, target epoch,
member, partition metadata, group epoch), then the new values in Kafka's write order (member, partition metadata,
group epoch, target members, target epoch, current assignment). A log read back therefore ends in the same state
Kafka's would, and ``kafka-dump-log.sh --offsets-decoder`` prints each record. Racks are not recorded (a single
broker has none: PartitionMetadata is empty, as Kafka writes it without rack information).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from kafka_shim.protocol.primitives import write_uvarint
from kafka_shim.shim.groups.consumer import ClassicMetadata, ConsumerGroup, ConsumerMember, MemberState, TopicShape
from kafka_shim.shim.groups.record_reader import RecordReader

_I8, _I16, _I32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")

GROUP_EPOCH, PARTITION_METADATA, MEMBER, TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT = 3, 4, 5, 6, 7, 8
KEY_VERSIONS = frozenset(range(GROUP_EPOCH, CURRENT_ASSIGNMENT + 1))
_TOMBSTONE_ORDER = (CURRENT_ASSIGNMENT, TARGET_MEMBER, TARGET_EPOCH, MEMBER, PARTITION_METADATA, GROUP_EPOCH)
_WRITE_ORDER = (MEMBER, PARTITION_METADATA, GROUP_EPOCH, TARGET_MEMBER, TARGET_EPOCH, CURRENT_ASSIGNMENT)
_STATE_BYTES = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1, MemberState.UNRELEASED_PARTITIONS: 2}
_STATES = {b: s for s, b in _STATE_BYTES.items()}

Record = tuple[bytes, bytes | None]


# -- writing ----------------------------------------------------------------------------------------------------------


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _I16.pack(len(raw)) + raw


def _cstring(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    raw = text.encode("utf-8")
    return write_uvarint(len(raw) + 1) + raw


def _cbytes(data: bytes) -> bytes:
    return write_uvarint(len(data) + 1) + data


def _carray(items: list[bytes]) -> bytes:
    return write_uvarint(len(items) + 1) + b"".join(items)


_NO_TAGS = b"\x00"


def key(version: int, group_id: str, member_id: str | None = None) -> bytes:
    out = _I16.pack(version) + _string(group_id)
    return out if member_id is None else out + _string(member_id)


def _topic_partitions(partitions: Mapping[uuid.UUID, Iterable[int]]) -> bytes:
    # In the map's own order, as Kafka writes its HashMap's entries: a target assignment read back keeps the order
    # the next sticky assignment walks.
    return _carray([topic_id.bytes + _carray([_I32.pack(p) for p in sorted(ps)]) + _NO_TAGS
                    for topic_id, ps in partitions.items()])


def epoch_value(epoch: int) -> bytes:
    """ConsumerGroupMetadataValue and ConsumerGroupTargetAssignmentMetadataValue (one int32 each)."""
    return _I16.pack(0) + _I32.pack(epoch) + _NO_TAGS


def partition_metadata_value(topics: Mapping[str, TopicShape]) -> bytes:
    entries = [shape.topic_id.bytes + _cstring(name) + _I32.pack(shape.partitions) + _carray([]) + _NO_TAGS
               for name, shape in sorted(topics.items())]
    return _I16.pack(0) + _carray(entries) + _NO_TAGS


def member_value(member: ConsumerMember) -> bytes:
    out = bytearray(_I16.pack(0))
    out += _cstring(member.instance_id) + _cstring(member.rack_id) + _cstring(member.client_id) + _cstring(member.client_host)
    out += _carray([_cstring(name) for name in member.subscribed_names_in_kafka_order()])
    out += _cstring(None) + _I32.pack(member.rebalance_timeout_ms) + _cstring(member.server_assignor)
    if member.classic is None:
        return bytes(out + _NO_TAGS)
    classic = (_I32.pack(member.classic.session_timeout_ms)
               + _carray([_cstring(name) + _cbytes(data) + _NO_TAGS for name, data in member.classic.protocols]) + _NO_TAGS)
    return bytes(out + write_uvarint(1) + write_uvarint(0) + write_uvarint(len(classic)) + classic)


def target_member_value(partitions: Mapping[uuid.UUID, Iterable[int]]) -> bytes:
    return _I16.pack(0) + _topic_partitions(partitions) + _NO_TAGS


def current_assignment_value(member: ConsumerMember) -> bytes:
    return (_I16.pack(0) + _I32.pack(member.member_epoch) + _I32.pack(member.previous_member_epoch)
            + _I8.pack(_STATE_BYTES[member.state]) + _topic_partitions(member.assigned)
            + _topic_partitions(member.pending_revocation) + _NO_TAGS)


def group_records(group: ConsumerGroup) -> dict[bytes, bytes]:
    """Every record that describes the group now, by key."""
    gid = group.group_id
    records = {key(GROUP_EPOCH, gid): epoch_value(group.group_epoch),
               key(PARTITION_METADATA, gid): partition_metadata_value(group.subscription_metadata),
               key(TARGET_EPOCH, gid): epoch_value(group.assignment_epoch)}
    for member in group.members.values():
        records[key(MEMBER, gid, member.member_id)] = member_value(member)
        records[key(CURRENT_ASSIGNMENT, gid, member.member_id)] = current_assignment_value(member)
    for member_id, partitions in group.target.items():
        if member_id in group.members:
            records[key(TARGET_MEMBER, gid, member_id)] = target_member_value(partitions)
    return records


def _version(record_key: bytes) -> int:
    return _I16.unpack_from(record_key)[0]


def changes(before: Mapping[bytes, bytes], after: Mapping[bytes, bytes]) -> list[Record]:
    """The records that take ``before`` to ``after``: tombstones, then new values, each in Kafka's order."""
    gone = [k for k in before if k not in after]
    changed = [k for k, v in after.items() if before.get(k) != v]
    tombstones = sorted(gone, key=lambda k: _TOMBSTONE_ORDER.index(_version(k)))
    writes = sorted(changed, key=lambda k: _WRITE_ORDER.index(_version(k)))
    return [(k, None) for k in tombstones] + [(k, after[k]) for k in writes]


class ConsumerGroupRecorder:
    """Writes each consumer group's changes through ``append(group_id, records)`` (OffsetsLog.append_records)."""

    def __init__(self, append: Callable[[str, list[Record]], None]) -> None:
        self.append = append
        self.written: dict[str, dict[bytes, bytes]] = {}

    def prime(self, group_id: str, records: Mapping[bytes, bytes]) -> None:
        """What the log already holds for a group (read back at start)."""
        self.written[group_id] = dict(records)

    def sync(self, group: ConsumerGroup) -> None:
        after = group_records(group)
        records = changes(self.written.get(group.group_id, {}), after)
        if records:
            self.append(group.group_id, records)  # raises SinkError; ``written`` then stays as it was
        self.written[group.group_id] = after

    def deleted(self, group_id: str) -> None:
        """The group is gone (deleted, or replaced by a classic group): tombstones for all it wrote."""
        records = changes(self.written.pop(group_id, {}), {})
        if records:
            self.append(group_id, records)


# -- reading ----------------------------------------------------------------------------------------------------------


def _value_version(r: RecordReader) -> None:
    version = r.i16()
    if version != 0:
        raise ValueError(f"unknown consumer group record value version {version}")


def read_key(record_key: bytes) -> tuple[int, str, str | None]:
    """(record type = key version, group id, member id or None)."""
    r = RecordReader(record_key)
    version = r.i16()
    group_id = r.string()
    return version, group_id, (r.string() if version in (MEMBER, TARGET_MEMBER, CURRENT_ASSIGNMENT) else None)


def read_epoch(value: bytes) -> int:
    r = RecordReader(value)
    _value_version(r)
    return r.i32()


def read_partition_metadata(value: bytes) -> dict[str, TopicShape]:
    r = RecordReader(value)
    _value_version(r)
    topics = {}
    for _ in range(r.compact_count()):
        topic_id, name, partitions = r.uuid(), r.compact_string() or "", r.i32()
        for _ in range(r.compact_count()):
            r.i32()
            for _ in range(r.compact_count()):
                r.compact_string()
            r.tags()
        r.tags()
        topics[name] = TopicShape(topic_id, partitions)
    return topics


def read_member(member_id: str, value: bytes) -> ConsumerMember:
    r = RecordReader(value)
    _value_version(r)
    instance_id, rack_id, client_id, client_host = r.compact_string(), r.compact_string(), r.compact_string() or "", r.compact_string() or ""
    names = frozenset(r.compact_string() or "" for _ in range(r.compact_count()))
    r.compact_string()  # SubscribedTopicRegex: 3.9's consumers never set it
    rebalance_timeout, assignor = r.i32(), r.compact_string()
    classic = None
    tagged = r.tags()
    if 0 in tagged:
        c = RecordReader(tagged[0])
        session_timeout = c.i32()
        protocols = []
        for _ in range(c.compact_count()):
            name, data = c.compact_string() or "", c.compact_bytes()
            c.tags()
            protocols.append((name, data))
        classic = ClassicMetadata(session_timeout, tuple(protocols))
    return ConsumerMember(member_id=member_id, instance_id=instance_id, rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout,
                          client_id=client_id, client_host=client_host, subscribed_topic_names=names, server_assignor=assignor,
                          classic=classic)


def _read_topic_partitions(r: RecordReader) -> dict[uuid.UUID, frozenset[int]]:
    out = {}
    for _ in range(r.compact_count()):
        topic_id = r.uuid()
        out[topic_id] = frozenset(r.i32() for _ in range(r.compact_count()))
        r.tags()
    return out


def read_target_member(value: bytes) -> dict[uuid.UUID, frozenset[int]]:
    r = RecordReader(value)
    _value_version(r)
    return _read_topic_partitions(r)


@dataclass(frozen=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    pending_revocation: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)


def read_current_assignment(value: bytes) -> CurrentAssignment:
    r = RecordReader(value)
    _value_version(r)
    epoch, previous, state = r.i32(), r.i32(), r.i8()
    if state not in _STATES:
        raise ValueError(f"unknown member state {state}")
    return CurrentAssignment(epoch, previous, _STATES[state], _read_topic_partitions(r), _read_topic_partitions(r))


def restore(group_id: str, records: Mapping[bytes, bytes]) -> ConsumerGroup | None:
    """GroupMetadataManager.replay's result for one group from its last record of each key (None when nothing of it
    is left). A member's current assignment comes with its metadata; one without it starts at epoch 0, as Kafka's."""
    group = ConsumerGroup(group_id)
    members: dict[str, ConsumerMember] = {}
    assignments: dict[str, CurrentAssignment] = {}
    for record_key, value in records.items():
        kind, _, member_id = read_key(record_key)
        if kind == GROUP_EPOCH:
            group.group_epoch = read_epoch(value)
        elif kind == TARGET_EPOCH:
            group.assignment_epoch = read_epoch(value)
        elif kind == PARTITION_METADATA:
            group.subscription_metadata = read_partition_metadata(value)
        elif kind == MEMBER:
            members[member_id or ""] = read_member(member_id or "", value)
        elif kind == TARGET_MEMBER:
            group.target[member_id or ""] = read_target_member(value)
        elif kind == CURRENT_ASSIGNMENT:
            assignments[member_id or ""] = read_current_assignment(value)
    if key(GROUP_EPOCH, group_id) not in records and not members:
        return None
    for member_id, member in members.items():
        a = assignments.get(member_id)
        if a is not None:
            member = replace(member, member_epoch=a.member_epoch, previous_member_epoch=a.previous_member_epoch,
                             state=a.state, assigned=a.assigned, pending_revocation=a.pending_revocation)
        group.put_member(member)
    group.target = {m: t for m, t in group.target.items() if m in group.members}
    return group

"""OffsetCommit (key 8, v0-9), OffsetFetch (key 9, v0-9) and OffsetDelete (key 47, v0), as a single-broker Kafka 3.9
with its default (old) group coordinator answers them (KafkaApis.handleOffsetCommitRequest / handleOffsetFetchRequest
/ handleOffsetDeleteRequest over GroupCoordinatorAdapter and GroupCoordinator.scala).

Behaviour, in Kafka's order of work:
- **OffsetCommit**: READ on the group, else 30 on every partition. READ on each topic (29 on each partition of a
  denied topic), then unknown topics and partitions (3). If nothing is left, that is the answer. v0 (ZooKeeper-only
  in Kafka) then gets UNSUPPORTED_VERSION (35) on every partition, as a KRaft broker answers it; an emulated
  ZooKeeper-mode release (before 3.3) writes it to its ZooKeeper store (``groups.zookeeper_offsets``) instead. The rest goes to the
  coordinator: NOT_COORDINATOR (16) until ``__consumer_offsets`` exists (FindCoordinator creates it), the group's
  generation and member checks (an unknown group committing with generation -1 becomes a group that only stores
  offsets; with another generation 22), then each offset, 12 when its metadata is longer than
  ``offset.metadata.max.bytes``. v1 commits carry their own commit timestamp (-1: now); v2-v4's
  ``retention_time_ms`` (other than -1) gives the offset an explicit expiry.
- **OffsetFetch** (KIP-163): DESCRIBE on each group, else that group gets 30 and nothing else. A request naming
  partitions needs DESCRIBE on each topic: a denied topic's partitions come back with offset -1 and 29, after the
  others; a request for all partitions (null topics, v2+) silently leaves out topics without DESCRIBE. A partition
  never committed has offset -1, leader epoch -1, metadata "". v8+ carries several groups, each judged alone; v2-v7
  put the group's error at the top level; v0-v1 have no such field (a refused group is an empty answer). v0 is
  ZooKeeper-only: 30 without DESCRIBE on the group, else 35, on each requested partition (an emulated ZooKeeper-mode
  release reads its ZooKeeper store: 3 and offset -1 where nothing was committed there). ``require_stable`` (v7+,
  KIP-447): a partition whose offset waits for its transaction (TxnOffsetCommit) answers UNSTABLE_OFFSET_COMMIT (88).
- **OffsetDelete**: DELETE on the group, else 30 for the request. READ on each topic (29), unknown topics and
  partitions (3), then the coordinator: 24 for an empty group id, 16 before ``__consumer_offsets`` exists, 69 for
  an unknown group, 68 for a group with members that is not a consumer group; in a consumer group with members the
  partitions of subscribed topics get 86 and the others are deleted. A group-level error replaces every partition.

Answer orders follow Kafka's Scala maps (``groups.offsets``: commit_order, fetch_order, delete_order).

Version notes. OffsetCommit: v0 is ZooKeeper-only (35 from a KRaft broker); v1 adds the generation, member id and a
per-partition commit timestamp; v2-v4 carry ``retention_time_ms`` instead; v6 the leader epoch; v7 the group instance
id; v8 is flexible; v9 is v8 (the new coordinator's member epochs; the old one reads it as a generation).
OffsetFetch: v0 is ZooKeeper-only; v2 allows null topics (all partitions) and adds the top-level error; v5 the leader
epoch; v7 ``require_stable``; v8 several groups; v9 member id and epoch (ignored by the old coordinator).
"""

from __future__ import annotations

from kafka_shim.authorizer.api_checks import Check
from kafka_shim.authorizer.api_checks.releases import OFFSET_FETCH_GROUP_READ
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse
from kafka_shim.shim.groups.offsets import FetchedOffset, OffsetAndMetadata, TopicPartition, by_topic
from kafka_shim.shim.handlers import CloseConnection, handles
from kafka_shim.shim.javacompat.hash_orders import (
    java_hash_map_order,
    scala_immutable_map_order,
    scala_mutable_map_order,
    topic_partition_hash,
)
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.java_long import java_long
from kafka_shim.shim.requests.authz import allowed, allowed_names, check, hidden_topics
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.coordination import coordinates

_COMMIT_GROUP = check(ApiKey.OFFSET_COMMIT, "group")
_COMMIT_TOPICS = check(ApiKey.OFFSET_COMMIT, "topics")
_FETCH_GROUP = check(ApiKey.OFFSET_FETCH, "group")
_FETCH_GROUPS = check(ApiKey.OFFSET_FETCH, "groups")
_FETCH_TOPICS = check(ApiKey.OFFSET_FETCH, "topics")
_FETCH_GROUP_TOPICS = check(ApiKey.OFFSET_FETCH, "group_topics")
_FETCH_ALL_TOPICS = check(ApiKey.OFFSET_FETCH, "all_topics")
_DELETE_GROUP = check(ApiKey.OFFSET_DELETE, "group")
_DELETE_TOPICS = check(ApiKey.OFFSET_DELETE, "topics")

DEFAULT_RETENTION_TIME = -1
DEFAULT_TIMESTAMP = -1


# -- OffsetCommit -----------------------------------------------------------------------------------------------------


def offset_commit_error_response(request: messages.OffsetCommitRequest, code: int, message: str | None) -> OffsetCommitResponse:
    """OffsetCommitRequest.getErrorResponse: every requested partition with the code, in request order."""
    return OffsetCommitResponse(throttle_time_ms=0, topics=[
        OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions]) for t in request.topics])


class _PartitionErrors:
    """OffsetCommitResponse.Builder / OffsetDeleteResponse.Builder: topics in first-added order, partitions appended."""

    def __init__(self) -> None:
        self.topics: dict[str, list[tuple[int, int]]] = {}

    def add(self, topic: str, partition: int, error: int) -> None:
        self.topics.setdefault(topic, []).append((partition, error))

    def merge(self, results: list[tuple[TopicPartition, int]]) -> None:
        for topic, entries in by_topic(results).items():
            self.topics.setdefault(topic, []).extend(entries)  # type: ignore[arg-type]


def _split_topics(ctx: RequestContext, request_topics: list, topic_check: Check, errors: _PartitionErrors) -> list[tuple[str, list]]:
    """KafkaApis' first pass of OffsetCommit and OffsetDelete: 29 for unreadable topics, 3 for unknown topics and
    partitions (on an emulated 0.11, 3 first for topics not describable or unknown); the partitions left, per topic in
    request order. Since 3.5 an unreadable or unknown topic is answered even with no partitions."""
    echo_empty = not ctx.services.release_rules.offset_commit_topics_in_hash_order
    known = ctx.services.cluster.topics
    names = [t.name for t in request_topics]
    hidden = hidden_topics(ctx, names, known.__contains__)
    readable = allowed_names(ctx, topic_check, [name for name in names if name not in hidden])
    valid: list[tuple[str, list]] = []
    for t in request_topics:
        if t.name in hidden:
            for p in t.partitions:
                errors.add(t.name, p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif t.name not in readable or t.name not in known:
            if echo_empty:  # Builder.addPartitions creates the topic's entry before adding what it lists
                errors.topics.setdefault(t.name, [])
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if t.name in readable else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            for p in t.partitions:
                errors.add(t.name, p.partition_index, code)
        else:
            count = len(known[t.name].partitions)
            kept = []
            for p in t.partitions:
                if 0 <= p.partition_index < count:
                    kept.append(p)
                else:
                    errors.add(t.name, p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if kept:
                valid.append((t.name, kept))
    return valid


@handles(ApiKey.OFFSET_COMMIT, 0, 9, error_response=offset_commit_error_response)
def offset_commit(ctx: RequestContext, request: messages.OffsetCommitRequest) -> OffsetCommitResponse:
    if not allowed(ctx, _COMMIT_GROUP, request.group_id):
        return offset_commit_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    errors = _PartitionErrors()
    valid = _split_topics(ctx, request.topics, _COMMIT_TOPICS, errors)
    status: dict[TopicPartition, int] = {}
    if valid and ctx.api_version == 0:
        if ctx.services.zookeeper_offsets is None:  # ZooKeeper-only in Kafka
            return offset_commit_error_response(request, ErrorCode.UNSUPPORTED_VERSION, None)
        return _commit_to_zookeeper(ctx, request.group_id, valid, errors)
    if valid:
        groups = ctx.services.groups
        now = groups.offsets.now_ms()
        retention = request.retention_time_ms if 2 <= ctx.api_version <= 4 else DEFAULT_RETENTION_TIME
        expire = None if retention == DEFAULT_RETENTION_TIME else java_long(now + retention)
        offsets = [((name, p.partition_index),
                    OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "",
                                      now if p.commit_timestamp == DEFAULT_TIMESTAMP else p.commit_timestamp, expire))
                   for name, partitions in valid for p in partitions]
        local = coordinates(ctx, request.group_id)
        if groups.settings.new_coordinator:
            error = groups.commit_error(request.group_id, request.member_id, request.group_instance_id,
                                        request.generation_id_or_member_epoch, ctx.api_version, local)
            if error != ErrorCode.NONE:
                # Thrown by the new coordinator: GroupCoordinatorService answers it over the request KafkaApis passed
                # on (the valid partitions only), which KafkaApis merges into its own errors like any answer.
                return _commit_answer([(name, [(p.partition_index, error) for p in partitions]) for name, partitions in valid], errors)
        results = groups.commit_offsets(request.group_id, request.member_id, request.group_instance_id,
                                        request.generation_id_or_member_epoch, offsets, ctx.api_version, local)
        if groups.settings.new_coordinator:
            return _commit_answer(_per_request_topic(valid, results), errors)
        if ctx.services.release_rules.offset_commit_topics_in_hash_order:
            codes = dict(results)
            status = {tp: codes[tp] for tp, _ in offsets}
        else:
            errors.merge(results)
    if ctx.services.release_rules.offset_commit_topics_in_hash_order:  # before 3.5 (api_checks.releases)
        return _answer_in_hash_order(status, errors)
    return OffsetCommitResponse(throttle_time_ms=0, topics=[
        OffsetCommitResponse.OffsetCommitResponseTopic(name=name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p, error_code=e) for p, e in entries])
        for name, entries in errors.topics.items()])


def _per_request_topic(valid: list[tuple[str, list]], results: list[tuple[TopicPartition, int]]) -> list[tuple[str, list[tuple[int, int]]]]:
    """The new coordinator's answer: one topic per topic of the request (a topic named twice answered twice), each
    partition as asked; ``results`` holds the codes in the same order."""
    codes = iter(code for _, code in results)
    return [(name, [(p.partition_index, next(codes)) for p in partitions]) for name, partitions in valid]


def _merged(errors: _PartitionErrors, answered: list[tuple[str, list[tuple[int, int]]]]) -> list[tuple[str, list[tuple[int, int]]]]:
    """OffsetCommitResponse.Builder / OffsetDeleteResponse.Builder.merge of the coordinator's answer into KafkaApis'
    own errors: taken as it is when there are none, else merged into them topic by topic."""
    if not errors.topics:
        return answered
    for name, entries in answered:
        errors.topics.setdefault(name, []).extend(entries)
    return list(errors.topics.items())


def _commit_answer(answered: list[tuple[str, list[tuple[int, int]]]], errors: _PartitionErrors) -> OffsetCommitResponse:
    return OffsetCommitResponse(throttle_time_ms=0, topics=[
        OffsetCommitResponse.OffsetCommitResponseTopic(name=name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p, error_code=e) for p, e in entries])
        for name, entries in _merged(errors, answered)])


def _commit_to_zookeeper(ctx: RequestContext, group_id: str, valid: list[tuple[str, list]],
                         refused: _PartitionErrors) -> OffsetCommitResponse:
    """OffsetCommit v0 on an emulated ZooKeeper-mode release: each offset straight to ZooKeeper, no coordinator, 12
    for metadata longer than ``offset.metadata.max.bytes``."""
    offsets, store = ctx.services.groups.offsets, ctx.services.zookeeper_offsets
    written: dict[TopicPartition, int] = {}
    status: dict[TopicPartition, int] = {}
    for name, partitions in valid:
        for p in partitions:
            tp = (name, p.partition_index)
            if p.committed_metadata is not None and offsets.metadata_too_large(p.committed_metadata):
                status[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                written.pop(tp, None)  # a partition named twice: the last one counts, as in Kafka's map
            else:
                written[tp] = p.committed_offset
                status[tp] = ErrorCode.NONE
    store.commit(group_id, written)
    return _answer_in_hash_order(status, refused)


def _answer_in_hash_order(status: dict[TopicPartition, int], refused: _PartitionErrors) -> OffsetCommitResponse:
    """OffsetCommit's answer as Kafka built it before 3.5: ``status`` (the partitions that were committed or tried, in
    request order, an immutable Map), the unreadable and the unknown partitions (each a mutable.HashMap) merged into
    one immutable Map, grouped by topic in a java.util.HashMap (OffsetCommitResponse's constructor from a map)."""
    errors = {(name, p): e for name, entries in refused.topics.items() for p, e in entries}
    unreadable = scala_mutable_map_order([tp for tp, e in errors.items() if e != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION], topic_partition_hash)
    unknown = scala_mutable_map_order([tp for tp, e in errors.items() if e == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION], topic_partition_hash)
    combined = status | errors
    order = scala_immutable_map_order([*status, *unreadable, *unknown], topic_partition_hash)
    topics = java_hash_map_order([tp[0] for tp in order], java_string_hash)
    return OffsetCommitResponse(throttle_time_ms=0, topics=[
        OffsetCommitResponse.OffsetCommitResponseTopic(name=name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p, error_code=combined[(t, p)])
            for t, p in order if t == name]) for name in topics])


# -- OffsetFetch ------------------------------------------------------------------------------------------------------

_Topic, _Partition = OffsetFetchResponse.OffsetFetchResponseTopic, OffsetFetchResponse.OffsetFetchResponsePartition
_Group = OffsetFetchResponse.OffsetFetchResponseGroup
_GroupTopic, _GroupPartition = OffsetFetchResponse.OffsetFetchResponseTopics, OffsetFetchResponse.OffsetFetchResponsePartitions
_UNAUTHORIZED = FetchedOffset(error=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
_UNKNOWN_PARTITION = FetchedOffset(error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
GroupAnswer = tuple[str, int, list[tuple[str, list[tuple[int, FetchedOffset]]]]]


def offset_fetch_error_response(request: messages.OffsetFetchRequest, code: int, message: str | None,
                                version: int | None = None) -> OffsetFetchResponse:
    """OffsetFetchRequest.getErrorResponse: v0-1 the code on each requested partition, v2-7 at the top, v8+ on each
    group. Without the version, a request naming groups is taken for v8+, another for v2-7."""
    if version is None:
        version = 8 if request.groups else 2
    if version >= 8:
        return OffsetFetchResponse(throttle_time_ms=0, groups=[_Group(group_id=g.group_id, topics=[], error_code=code)
                                                               for g in request.groups])
    if version >= 2:
        return OffsetFetchResponse(throttle_time_ms=0, topics=[], error_code=code)
    return _v0_error_response(request, code)


def _v0_error_response(request: messages.OffsetFetchRequest, code: int) -> OffsetFetchResponse:
    """getErrorResponse below v2: the code on each requested partition, in Kafka's java.util.HashMap orders."""
    partitions = java_hash_map_order([(t.name, p) for t in request.topics or [] for p in t.partition_indexes], topic_partition_hash)
    topics = java_hash_map_order([tp[0] for tp in partitions], java_string_hash)
    return OffsetFetchResponse(throttle_time_ms=0, topics=[
        _Topic(name=name, partitions=[_Partition(partition_index=p, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                                                 error_code=code) for t, p in partitions if t == name]) for name in topics])


@handles(ApiKey.OFFSET_FETCH, 0, 9, error_response=offset_fetch_error_response)
def offset_fetch(ctx: RequestContext, request: messages.OffsetFetchRequest) -> OffsetFetchResponse:
    version = ctx.api_version
    # KIP-163: an emulated release before 1.0 asks READ on the group (api_checks.releases).
    group_check = OFFSET_FETCH_GROUP_READ if ctx.services.release_rules.offset_fetch_needs_read else _FETCH_GROUP
    if version == 0:  # ZooKeeper-only in Kafka: a KRaft broker checks the group, then refuses the version
        if not allowed(ctx, group_check, request.group_id):
            return _v0_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if ctx.services.zookeeper_offsets is None:
            return _v0_error_response(request, ErrorCode.UNSUPPORTED_VERSION)
        return _fetch_from_zookeeper(ctx, request)
    if version >= 8:
        if not request.groups:
            # The answer has no group-level errors, so OffsetFetchResponse.errorCounts takes it for a v0-7 answer and
            # counts its null error: Kafka's request channel fails to send it and never answers the connection again.
            raise CloseConnection("OffsetFetch v8+ naming no group: Kafka 3.9 never answers it")
        rules = ctx.services.release_rules
        if rules.offset_fetch_partitions_in_hash_order:
            # before 3.5 (api_checks.releases) each group id is fetched as OffsetFetchRequest.isAllPartitionsForGroup
            # (its first entry) and groupIdsToPartitions (its last) say; a null list there is an NPE: -1 everywhere
            first = {g.group_id: g.topics for g in reversed(request.groups)}
            last = {g.group_id: g.topics for g in request.groups}
            asked = [(group_id, None if first[group_id] is None else last[group_id], None) for group_id in last]
            if any(first[group_id] is not None and topics is None for group_id, topics, _ in asked
                   if allowed(ctx, _FETCH_GROUPS, group_id)):
                return OffsetFetchResponse(throttle_time_ms=0, groups=[
                    _Group(group_id=group_id, topics=[], error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
                    for group_id in java_hash_map_order([g.group_id for g in request.groups], java_string_hash,
                                                        initial_capacity=len(request.groups))])
        else:
            asked = [(g.group_id, g.topics, (g.member_id, g.member_epoch) if version >= 9 else None) for g in request.groups]
        answers = [_fetch_group(ctx, group_id, topics, _FETCH_GROUPS, _FETCH_GROUP_TOPICS, member, request.require_stable)
                   for group_id, topics, member in asked]
        if rules.offset_fetch_groups_in_hash_order:
            # 3.0-3.4 built the answer from a Scala mutable.HashMap keyed by group id (api_checks.releases)
            by_id = {answer[0]: answer for answer in answers}
            answers = [by_id[group_id] for group_id in scala_mutable_map_order(list(by_id), java_string_hash)]
        return OffsetFetchResponse(throttle_time_ms=0, groups=[
            _Group(group_id=group_id, error_code=error, topics=[
                _GroupTopic(name=name, partitions=[_GroupPartition(partition_index=p, committed_offset=o.offset,
                                                                   committed_leader_epoch=o.leader_epoch, metadata=o.metadata,
                                                                   error_code=o.error) for p, o in entries])
                for name, entries in topics])
            for group_id, error, topics in answers])
    topics = None if request.topics is None else [OffsetFetchRequest.OffsetFetchRequestTopics(name=t.name, partition_indexes=t.partition_indexes)
                                                  for t in request.topics]
    _, error, answer = _fetch_group(ctx, request.group_id, topics, group_check, _FETCH_TOPICS,
                                    require_stable=version >= 7 and request.require_stable)
    if version == 1 and error != ErrorCode.NONE and ctx.services.release_rules.offset_fetch_v1_partition_errors:
        # before 3.5 Kafka answered v1's group errors as v0's, on each requested partition (api_checks.releases)
        return _v0_error_response(request, error)
    return OffsetFetchResponse(throttle_time_ms=0, error_code=error, topics=[
        _Topic(name=name, partitions=[_Partition(partition_index=p, committed_offset=o.offset, committed_leader_epoch=o.leader_epoch,
                                                 metadata=o.metadata, error_code=o.error) for p, o in entries])
        for name, entries in answer])


def _fetch_from_zookeeper(ctx: RequestContext, request: messages.OffsetFetchRequest) -> OffsetFetchResponse:
    """OffsetFetch v0 on an emulated ZooKeeper-mode release, after the group check: each partition whose topic the
    principal may describe from ZooKeeper (offset, no leader epoch, no metadata), UNKNOWN_TOPIC_OR_PARTITION (3) with
    offset -1 for a partition that does not exist or has no offset there; the others 29 (3 on 0.11, KAFKA-5547).
    In Kafka's order: the two immutable Maps merged, grouped by topic in a java.util.HashMap."""
    store = ctx.services.zookeeper_offsets
    asked = list(dict.fromkeys((t.name, p) for t in request.topics or [] for p in t.partition_indexes))
    describable = allowed_names(ctx, _FETCH_TOPICS, list(dict.fromkeys(name for name, _ in asked)))
    known = ctx.services.cluster.topics
    answers: dict[TopicPartition, FetchedOffset] = {}
    for name, partition in asked:
        if name in describable:
            topic = known.get(name)
            offset = store.get(request.group_id, (name, partition)) if topic is not None and 0 <= partition < len(topic.partitions) else None
            answers[(name, partition)] = _UNKNOWN_PARTITION if offset is None else FetchedOffset(offset)
    refusal = _UNKNOWN_PARTITION if ctx.services.release_rules.topics_hidden_as_unknown else _UNAUTHORIZED
    # authorized ++ unauthorized, two immutable Maps: their own orders only show when the whole has four entries or
    # fewer (Map1..Map4 keep insertion order); beyond, the merged trie's order is the hashes' alone
    order = scala_immutable_map_order([*answers, *(tp for tp in asked if tp not in answers)], topic_partition_hash)
    topics = java_hash_map_order([tp[0] for tp in order], java_string_hash)
    return OffsetFetchResponse(throttle_time_ms=0, topics=[
        _Topic(name=name, partitions=[_Partition(partition_index=p, committed_offset=o.offset, committed_leader_epoch=o.leader_epoch,
                                                 metadata=o.metadata, error_code=o.error)
                                      for t, p in order if t == name for o in [answers.get((t, p), refusal)]])
        for name in topics])


def _fetch_group(ctx: RequestContext, group_id: str, topics: list | None, group_check, topic_check,
                 member: tuple[str | None, int] | None = None, require_stable: bool = False) -> GroupAnswer:
    """KafkaApis.handleOffsetFetchRequestFromCoordinator for one group (``member``: v9's id and epoch, which only a
    KIP-848 group checks)."""
    if not allowed(ctx, group_check, group_id):
        return group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    coordinator = ctx.services.groups
    if topics is None:  # all partitions: topics the principal may not describe are left out, silently
        error, offsets = coordinator.fetch_offsets(group_id, None, require_stable, member=member, local=coordinates(ctx, group_id))
        if error != ErrorCode.NONE:
            return group_id, error, []
        grouped = by_topic(offsets)
        visible = allowed_names(ctx, _FETCH_ALL_TOPICS, list(grouped))
        if ctx.services.release_rules.offset_fetch_partitions_in_hash_order:
            return group_id, ErrorCode.NONE, _all_in_hash_maps(offsets, visible)
        return group_id, ErrorCode.NONE, [(name, entries) for name, entries in grouped.items() if name in visible]  # type: ignore[misc]
    describable = allowed_names(ctx, topic_check, [t.name for t in topics])
    asked = [(t.name, p) for t in topics if t.name in describable for p in t.partition_indexes]
    error, offsets = coordinator.fetch_offsets(group_id, asked, require_stable, member=member, local=coordinates(ctx, group_id))
    if error != ErrorCode.NONE:
        return group_id, error, []
    if ctx.services.release_rules.offset_fetch_partitions_in_hash_order:
        refused = [(t.name, p) for t in topics if t.name not in describable for p in t.partition_indexes]
        return group_id, ErrorCode.NONE, _named_in_hash_maps(offsets, asked, refused, ctx)
    if coordinator.settings.new_coordinator:  # each topic and partition as asked, a repeated one again
        found = dict(offsets)
        answer = [(t.name, [(p, found[(t.name, p)]) for p in t.partition_indexes]) for t in topics if t.name in describable]
    else:
        answer = list(by_topic(offsets).items())
    # KAFKA-5547: 0.11 answered a topic it would not describe as an unknown partition (3), 1.0+ as unauthorized (29)
    refusal = _UNKNOWN_PARTITION if ctx.services.release_rules.topics_hidden_as_unknown else _UNAUTHORIZED
    answer += [(t.name, [(p, refusal) for p in t.partition_indexes]) for t in topics if t.name not in describable]
    return group_id, ErrorCode.NONE, answer  # type: ignore[return-value]


def _by_topic_in_hash_map(order: list[TopicPartition], found: dict[TopicPartition, FetchedOffset]) -> list:
    """OffsetFetchResponse's constructor from a map of partitions (before 3.5): grouped by topic in a java.util.HashMap."""
    return [(name, [(p, found[(t, p)]) for t, p in order if t == name])
            for name in java_hash_map_order([t for t, _ in order], java_string_hash)]


def _named_in_hash_maps(offsets: list[tuple[TopicPartition, FetchedOffset]], asked: list[TopicPartition],
                        refused: list[TopicPartition], ctx: RequestContext) -> list:
    """Named partitions before 3.5: GroupMetadataManager.getOffsets' immutable Map (request order) ++ the refused
    partitions' (a partition named twice once); up to four entries keep that order, more take the hashes' alone."""
    got = dict(offsets)
    found = {tp: got[tp] for tp in asked if tp in got}
    refusal = _UNKNOWN_PARTITION if ctx.services.release_rules.topics_hidden_as_unknown else _UNAUTHORIZED
    found |= {tp: refusal for tp in refused}
    return _by_topic_in_hash_map(scala_immutable_map_order(list(found), topic_partition_hash), found)


def _all_in_hash_maps(offsets: list[tuple[TopicPartition, FetchedOffset]], visible) -> list:
    """All partitions before 3.5: the group's offsets (a mutable.HashMap) turned into immutable Maps and Sets, which
    keep that order up to four entries, then filtered by topic (a subset of up to four keeps the order it had)."""
    found = dict(offsets)
    every = list(found)
    order = (scala_mutable_map_order if len(every) <= 4 else scala_immutable_map_order)(every, topic_partition_hash)
    kept = [tp for tp in order if tp[0] in visible]
    if len(kept) > 4:
        kept = scala_immutable_map_order(kept, topic_partition_hash)
    return _by_topic_in_hash_map(kept, found)


# -- OffsetDelete -----------------------------------------------------------------------------------------------------


def offset_delete_error_response(request: messages.OffsetDeleteRequest, code: int, message: str | None) -> OffsetDeleteResponse:
    """OffsetDeleteRequest.getErrorResponse: the code at the top, no topics."""
    return OffsetDeleteResponse(error_code=code, throttle_time_ms=0, topics=[])


@handles(ApiKey.OFFSET_DELETE, 0, 0, error_response=offset_delete_error_response)
def offset_delete(ctx: RequestContext, request: messages.OffsetDeleteRequest) -> OffsetDeleteResponse:
    if not allowed(ctx, _DELETE_GROUP, request.group_id):
        return offset_delete_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    errors = _PartitionErrors()
    valid = _split_topics(ctx, request.topics, _DELETE_TOPICS, errors)
    groups = ctx.services.groups
    group_error, results = groups.delete_offsets(request.group_id, [(name, p.partition_index) for name, ps in valid for p in ps],
                                                 coordinates(ctx, request.group_id))
    if group_error != ErrorCode.NONE:
        return offset_delete_error_response(request, group_error, None)
    if groups.settings.new_coordinator:
        topics = _merged(errors, _per_request_topic(valid, results))
    else:
        errors.merge(results)
        topics = list(errors.topics.items())
    return OffsetDeleteResponse(error_code=ErrorCode.NONE, throttle_time_ms=0, topics=[
        OffsetDeleteResponse.OffsetDeleteResponseTopic(name=name, partitions=[
            OffsetDeleteResponse.OffsetDeleteResponsePartition(partition_index=p, error_code=e) for p, e in entries])
        for name, entries in topics])

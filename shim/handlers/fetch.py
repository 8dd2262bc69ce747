"""Fetch (key 1), v0-17: records of the partitions a consumer (or a follower) asks for, as a Kafka 3.9 KRaft broker
answers, with long polling and incremental fetch sessions.

Behaviour (KafkaApis.handleFetchRequest, ReplicaManager.fetchMessages). The fetch context comes first
(partitions.fetch_sessions: sessionless, full, incremental, or a session error 70/71/106 with no partitions). Then,
for a consumer: partitions of an unknown topic id get UNKNOWN_TOPIC_ID (100), READ is asked once per topic name
(29 for denied topics, whether or not they exist), then existence (3). A follower (replica id >= 0) needs
CLUSTER_ACTION on the cluster, else 29 on every partition; with it, a single node refuses it as an unknown
replica. The allowed partitions are read (partitions.read: the request's max_bytes, capped by the broker's
``fetch.max.bytes``, shared in order; the first batch whole; stored bytes as they are). The answer goes at once
when max_wait_ms <= 0, at least min_bytes were read, or a partition had an error or a diverging epoch; otherwise
the fetch waits (partitions.waiting) until an append to one of its partitions or max_wait_ms, reading again after
each wake-up. Read partitions come first in the answer, then the refused ones, grouped into topics as they follow
each other (FetchResponse.of). Preferred read replica is always -1.

Version notes. v0-2: no max_bytes and a hard size limit (a first batch larger than the limit is sent cut); v0-3
get magic 0/1 message sets converted from the stored batches (partitions.down_convert, Kafka's
LazyDownConversionRecords; UNSUPPORTED_VERSION (35) when the topic sets ``message.downconversion.enable=false``).
v0-9 on a topic with ``compression.type=zstd``: UNSUPPORTED_COMPRESSION_TYPE (76). v4: isolation level, last stable
offset, aborted transactions (an empty list under READ_COMMITTED). v5: log start offset. v7: sessions. v9: current
leader epoch (74/75). v11: rack id, preferred read replica. v12: last fetched epoch and diverging epochs. v13:
topic ids. v15: replica state. v16: current leader and node endpoints on NOT_LEADER_OR_FOLLOWER /
FENCED_LEADER_EPOCH.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from kafka_shim.authorizer import CLUSTER_NAME
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import FetchResponse
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.partitions.down_convert import NegativeTimestamp, UnsupportedForDownConversion, down_convert
from kafka_shim.shim.partitions.fetch_sessions import (
    FINAL_EPOCH,
    ZERO_UUID,
    FetchSessionFailure,
    PartitionAnswer,
    PartitionRequest,
    TopicPartitionId,
)
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.read import ReadParams, read_partitions
from kafka_shim.shim.partitions.waiting import AppendWaiters
from kafka_shim.shim.requests import request_quota
from kafka_shim.shim.requests.authz import allowed, allowed_names, check, hidden_topics
from kafka_shim.shim.requests.context import CloseConnection, RequestContext
from kafka_shim.shim.requests.work import EncodeOffLoop

log = get_logger(__name__)

_FOLLOWER, _TOPICS = check(ApiKey.FETCH, "follower"), check(ApiKey.FETCH, "topics")
_INT32_MAX = 2**31 - 1
# Answers carrying more record bytes than this are encoded in the worker thread (copying megabytes into a frame
# would otherwise hold every other client for as long).
LARGE_ANSWER_BYTES = 1 << 20
_NO_EPOCH = -1

_Topic = FetchResponse.FetchableTopicResponse
_Partition = FetchResponse.PartitionData


FETCH_QUOTA = "consumer_byte_rate"


def fetch_error_response(request: messages.FetchRequest, code: int, message: str | None, version: int | None = None) -> FetchResponse:
    """FetchRequest.getErrorResponse: the top-level code and, below v13, the same code in every partition (without
    ``version``, v13+ is told by the topic ids)."""
    by_id = version >= 13 if version is not None else any(t.topic_id != ZERO_UUID for t in request.topics)
    topics = [] if by_id else [
        _Topic(topic=t.topic, topic_id=t.topic_id, partitions=[_refused(p.partition, code) for p in t.partitions])
        for t in request.topics
    ]
    return FetchResponse(throttle_time_ms=0, error_code=code, session_id=request.session_id, responses=topics)


def _refused(partition: int, code: int) -> _Partition:
    """FetchResponse.partitionResponse: the error, high watermark -1, null records (sent as such when nothing
    converts them to empty ones, as KafkaApis' conversion step does for every other partition)."""
    return _Partition(partition_index=partition, error_code=code, high_watermark=-1, last_stable_offset=-1,
                      log_start_offset=-1, aborted_transactions=[], preferred_read_replica=-1, records=None)


@handles(ApiKey.FETCH, 0, 17, error_response=fetch_error_response)
async def fetch(ctx: RequestContext, request: messages.FetchRequest) -> FetchResponse | EncodeOffLoop:
    services = ctx.services
    partitions = services.partitions
    sessions, waiters = services.fetch_sessions, services.append_waiters
    assert partitions is not None and sessions is not None and waiters is not None
    version = ctx.api_version
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    from_follower = replica_id >= 0

    def name_of(topic_id: uuid.UUID) -> str | None:
        topic = services.cluster.topic_by_id(topic_id)
        return topic.name if topic is not None else None

    fetches = [(_partition_id(t, p.partition, version, name_of), _partition_request(p, version))
               for t in request.topics for p in t.partitions]
    forgotten = [_partition_id(t, p, version, name_of) for t in request.forgotten_topics_data for p in t.partitions] if version >= 7 else []
    session_id, epoch = (request.session_id, request.session_epoch) if version >= 7 else (0, FINAL_EPOCH)
    try:
        context = sessions.new_context(version, session_id, epoch, from_follower, fetches, forgotten, name_of)
    except FetchSessionFailure as exc:
        return _session_failure(ctx, request, exc)
    if context.error != ErrorCode.NONE:
        # As Kafka (at debug): an evicted or unknown session, or a repeated epoch; the client starts a new session.
        log.debug("fetch_session_refused", session_id=session_id, session_epoch=epoch, error_code=int(context.error),
                  client=f"{ctx.client_host}:{ctx.client_port}", hint="the client should send a full fetch (epoch 0)")

    refused, interesting = _classify(ctx, partitions, context.partitions(), from_follower)
    answers: list[tuple[TopicPartitionId, PartitionAnswer]] = []
    if interesting and version >= 4 and request.isolation_level not in (0, 1):
        # FetchParams reads IsolationLevel.forId, which throws on other codes: KafkaApis' handleError answers the
        # whole request with UNKNOWN_SERVER_ERROR (only once some partition may be read, as there).
        log.warning("fetch_isolation_level_unknown", isolation_level=request.isolation_level,
                    client=f"{ctx.client_host}:{ctx.client_port}", answered="UNKNOWN_SERVER_ERROR",
                    hint="isolation_level is 0 (READ_UNCOMMITTED) or 1 (READ_COMMITTED)")
        return fetch_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None, version)
    if interesting:
        max_bytes = min(request.max_bytes if version >= 3 else _INT32_MAX, services.config.fetch_max_bytes,
                        _max_quota_window_bytes(ctx, from_follower))
        stalled = services.faults.partition_faults.stalled if services.faults is not None else None
        params = ReadParams(max_bytes, version <= 2, version >= 4 and request.isolation_level == 1, from_follower,
                            stalled or None, ctx.node_id, services.release_rules.unknown_follower_read)
        min_bytes = min(request.min_bytes, max_bytes)
        answers = read_partitions(partitions, interesting, params)
        if request.max_wait_ms > 0 and not _complete(answers, min_bytes):
            answers = await _long_poll(partitions, waiters, interesting, params, min_bytes, request.max_wait_ms)
    if version >= 13 and _unnamed_topic_not_last(context.carried(answers + refused)):
        # FetchResponse.toMessage compares each partition's topic with the previous one's, and for a topic id of
        # zero by its name, which Kafka never resolved: its NullPointerException reaches KafkaApis' handleError.
        log.warning("fetch_zero_topic_id", client=f"{ctx.client_host}:{ctx.client_port}", answered="UNKNOWN_SERVER_ERROR",
                    hint="Fetch v13+ names topics by their topic id (from Metadata); a zero id is no topic")
        return fetch_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None, version)
    throttled = _quota_throttle(ctx, context, answers + refused, from_follower)
    if throttled:
        # KafkaApis: a fetch over its byte-rate or request quota gets an empty answer with the throttle time, its
        # bytes taken back from the byte-rate meter, and the connection muted that long.
        error, response_session = context.throttled()
        return FetchResponse(throttle_time_ms=throttled, error_code=error, session_id=response_session, responses=[])
    try:
        error, response_session, kept = context.respond(answers + refused)
    except FetchSessionFailure as exc:
        return _session_failure(ctx, request, exc)
    try:
        topics = _topics(ctx, partitions, kept, context.partitions(), version)
    except NegativeTimestamp as exc:
        return _unconvertible(ctx, request, exc)
    response = FetchResponse(throttle_time_ms=ctx.throttle_ms, error_code=error, session_id=response_session,
                             responses=topics, node_endpoints=_node_endpoints(ctx, kept, version))
    if sum(answer.records_size for _, answer in kept) > LARGE_ANSWER_BYTES:
        return EncodeOffLoop(response)
    return response


def _session_failure(ctx: RequestContext, request: messages.FetchRequest, exc: FetchSessionFailure) -> FetchResponse:
    """Where Kafka's FetchManager throws on the request's session id or partitions, KafkaApis' handleError answers
    the whole fetch with UNKNOWN_SERVER_ERROR."""
    log.warning("fetch_session_failed", session_id=request.session_id, session_epoch=request.session_epoch,
                error=str(exc), client=f"{ctx.client_host}:{ctx.client_port}", answered="UNKNOWN_SERVER_ERROR",
                hint="session ids come from the broker's answers; topic ids from Metadata (never the zero id)")
    # The version, not the topic ids, decides whether partitions are listed: a v13+ request naming only the zero
    # topic id (the usual cause of this failure) must still get none.
    return fetch_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None, ctx.api_version)


def _unconvertible(ctx: RequestContext, request: messages.FetchRequest, exc: NegativeTimestamp) -> FetchResponse:
    """A record Fetch v0-3 must down-convert has a timestamp below -1. Kafka converts the first chunk while handling
    the request: its handleError answers the whole fetch with UNKNOWN_SERVER_ERROR. Later chunks it converts while
    sending the answer, and the failure closes the connection."""
    fields = {"client": f"{ctx.client_host}:{ctx.client_port}", "error": str(exc),
              "hint": "records with timestamps below -1 cannot be fetched below Fetch v4"}
    if not exc.first:
        log.warning("fetch_down_conversion_failed", answered="connection closed", **fields)
        raise CloseConnection(f"down-converting a later chunk failed: {exc}")
    log.warning("fetch_down_conversion_failed", answered="UNKNOWN_SERVER_ERROR", **fields)
    return fetch_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None, ctx.api_version)


def _max_quota_window_bytes(ctx: RequestContext, from_follower: bool) -> int:
    """KafkaApis caps a consumer's fetch at what its byte-rate quota allows over the sampled window: a larger answer
    would always be throttled, and so, answered empty, never reach the consumer."""
    meters = ctx.services.quota_meters
    most = None if meters is None or from_follower else meters.max_value_in_window(FETCH_QUOTA, ctx.principal, ctx.header.client_id)
    return _INT32_MAX if most is None else min(int(most), _INT32_MAX)


def _quota_throttle(ctx: RequestContext, context, answers: list, from_follower: bool) -> int:
    """The larger of the byte-rate (consumer_byte_rate, on the record bytes the answer would carry) and the request
    (request_percentage, on the handler time so far) throttles, each recorded as KafkaApis records them; a
    follower's fetch is exempt from both."""
    meters = ctx.services.quota_meters
    if meters is None or from_follower or not meters.quotas.has_any:
        ctx.request_quota_charged = True  # exempt, or nothing to charge
        return 0
    size = context.response_size(answers)
    bandwidth = meters.record(FETCH_QUOTA, ctx.principal, ctx.header.client_id, size)
    request = 0
    if request_quota.timed(ctx):
        ctx.request_quota_charged = True
        request = meters.record_request_time(ctx.principal, ctx.header.client_id, request_quota.time_so_far(ctx))
    throttle = max(bandwidth, request)
    if throttle > 0:
        meters.unrecord(FETCH_QUOTA, ctx.principal, ctx.header.client_id, size)
        ctx.throttle_ms = throttle
    return throttle


def _partition_id(topic: messages.FetchRequest.FetchTopic | messages.FetchRequest.ForgottenTopic, partition: int, version: int,
                  name_of: Callable[[uuid.UUID], str | None]) -> TopicPartitionId:
    """By topic id from v13 (the name when the id is known), by name before."""
    if version >= 13:
        return TopicPartitionId(topic.topic_id, name_of(topic.topic_id), partition)
    return TopicPartitionId(ZERO_UUID, topic.topic, partition)


def _partition_request(p: messages.FetchRequest.FetchPartition, version: int) -> PartitionRequest:
    # FetchRequest.optionalEpoch: any negative epoch means "not given".
    current = p.current_leader_epoch if version >= 9 else _NO_EPOCH
    last = p.last_fetched_epoch if version >= 12 else _NO_EPOCH
    return PartitionRequest(p.fetch_offset, p.log_start_offset if version >= 5 else -1, p.partition_max_bytes,
                            None if current < 0 else current, None if last < 0 else last)


def _classify(ctx: RequestContext, partitions: Partitions, fetches: list[tuple[TopicPartitionId, PartitionRequest]],
              from_follower: bool) -> tuple[list[tuple[TopicPartitionId, PartitionAnswer]], list[tuple[TopicPartitionId, PartitionRequest]]]:
    """(refused partitions with their error, partitions to read), in Kafka's order of checks."""
    refused: list[tuple[TopicPartitionId, PartitionAnswer]] = []
    named: list[tuple[TopicPartitionId, PartitionRequest]] = []
    if from_follower and not allowed(ctx, _FOLLOWER, CLUSTER_NAME):
        code = ctx.services.release_rules.follower_fetch_denied_code  # 29; 31 on an emulated 1.0
        return [(tp, _refusal(ctx, code)) for tp, _ in fetches], []
    for tp, request in fetches:
        if tp.topic is None:
            refused.append((tp, _refusal(ctx, ErrorCode.UNKNOWN_TOPIC_ID)))
        else:
            named.append((tp, request))
    topics = partitions.cluster.topics
    hidden = set() if from_follower else hidden_topics(ctx, [tp.topic for tp, _ in named], topics.__contains__)  # type: ignore[misc]
    readable = ({tp.topic for tp, _ in named} if from_follower
                else allowed_names(ctx, _TOPICS, [tp.topic for tp, _ in named if tp.topic not in hidden]))
    interesting = []
    for tp, request in named:
        topic = topics.get(tp.topic)  # type: ignore[arg-type]
        if tp.topic in hidden:
            refused.append((tp, _refusal(ctx, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
        elif tp.topic not in readable:
            refused.append((tp, _refusal(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
        elif topic is None or not 0 <= tp.partition < len(topic.partitions):
            refused.append((tp, _refusal(ctx, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
        else:
            interesting.append((tp, request))
    return refused, interesting


def _refusal(ctx: RequestContext, code: int) -> PartitionAnswer:
    # FetchResponse.partitionResponse: no records (sent as empty), an empty aborted-transactions list; before 3.0
    # KafkaApis built the refusal itself with a null list (ReleaseRules.fetch_refusal_null_aborted).
    aborted = None if ctx.services.release_rules.fetch_refusal_null_aborted else []
    return PartitionAnswer(error_code=code, records=b"", aborted_transactions=aborted, refused=True)


def _complete(answers: list[tuple[TopicPartitionId, PartitionAnswer]], min_bytes: int) -> bool:
    """ReplicaManager.fetchMessages' "respond now": enough bytes, an error or a diverging epoch."""
    total = 0
    for _, answer in answers:
        if answer.error_code != ErrorCode.NONE or answer.diverging_epoch is not None:
            return True
        total += answer.records_size
    return total >= min_bytes


async def _long_poll(partitions: Partitions, waiters: AppendWaiters, fetches: list[tuple[TopicPartitionId, PartitionRequest]],
                     params: ReadParams, min_bytes: int, max_wait_ms: int) -> list[tuple[TopicPartitionId, PartitionAnswer]]:
    """DelayedFetch: wait for appends to the fetched partitions until min_bytes are there or max_wait_ms passed, then
    read again (as Kafka's onComplete does)."""
    deadline = time.monotonic() + max_wait_ms / 1000
    keys = [(tp.topic or "", tp.partition) for tp, _ in fetches]
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or await waiters.wait(keys, remaining) is None:
            return read_partitions(partitions, fetches, params)
        answers = read_partitions(partitions, fetches, params)
        if _complete(answers, min_bytes):
            return answers


def _topics(ctx: RequestContext, partitions: Partitions, kept: list[tuple[TopicPartitionId, PartitionAnswer]],
            requested: list[tuple[TopicPartitionId, PartitionRequest]], version: int) -> list[_Topic]:
    """FetchResponse.of: consecutive partitions of one topic share a topic entry; records converted for v0-3."""
    offsets = {tp.key: request.fetch_offset for tp, request in requested}
    topics: list[_Topic] = []
    previous: TopicPartitionId | None = None
    for tp, answer in kept:
        entry = _wire_partition(ctx, partitions, tp, answer, version, offsets.get(tp.key, 0))
        if previous is not None and _same_topic(previous, tp):
            topics[-1].partitions.append(entry)
        else:
            topics.append(_Topic(topic=tp.topic or "", topic_id=tp.topic_id, partitions=[entry]))
        previous = tp
    return topics


def _unnamed_topic_not_last(carried: list[tuple[TopicPartitionId, PartitionAnswer]]) -> bool:
    """Whether a partition named by the zero topic id (Fetch v13+) has another partition after it in the answer."""
    return any(tp.topic_id == ZERO_UUID for tp, _ in carried[:-1])


def _same_topic(a: TopicPartitionId, b: TopicPartitionId) -> bool:
    if a.topic_id != ZERO_UUID or b.topic_id != ZERO_UUID:
        return a.topic_id == b.topic_id
    return a.topic == b.topic


def _wire_partition(ctx: RequestContext, partitions: Partitions, tp: TopicPartitionId, answer: PartitionAnswer,
                    version: int, fetch_offset: int) -> _Partition:
    records = answer.records
    if version <= 9 and _hosted(partitions, tp):
        # KafkaApis.maybeConvertFetchedData runs on every partition whose log this broker holds, whatever its error
        # (out of range, not authorized, ...): the topic's config, not the answer, decides these two refusals.
        values = partitions.topic_values(tp.topic)
        if values.get("compression.type") == "zstd":
            return _refused(tp.partition, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        if version <= 3:
            if not values.get("message.downconversion.enable", True):
                return _refused(tp.partition, ErrorCode.UNSUPPORTED_VERSION)
            if answer.error_code == ErrorCode.NONE:
                try:
                    records = down_convert(records or b"", 0 if version <= 1 else 1, fetch_offset)
                except UnsupportedForDownConversion:
                    return _refused(tp.partition, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    entry = _Partition(
        partition_index=tp.partition,
        error_code=answer.error_code,
        high_watermark=answer.high_watermark,
        last_stable_offset=answer.last_stable_offset,
        log_start_offset=answer.log_start_offset,
        aborted_transactions=None if answer.aborted_transactions is None else [
            FetchResponse.AbortedTransaction(producer_id=p, first_offset=o) for p, o in answer.aborted_transactions],
        preferred_read_replica=answer.preferred_read_replica,
        records=records,
    )
    if answer.diverging_epoch is not None:
        entry.diverging_epoch = FetchResponse.EpochEndOffset(epoch=answer.diverging_epoch[0], end_offset=answer.diverging_epoch[1])
    if version >= 16 and answer.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH) and not answer.refused:
        topic = partitions.cluster.topics.get(tp.topic or "")
        if topic is not None and tp.partition < len(topic.partitions):
            leader = topic.partitions[tp.partition]
            entry.current_leader = FetchResponse.LeaderIdAndEpoch(leader_id=leader.leader_id, leader_epoch=leader.leader_epoch)
    return entry


def _hosted(partitions: Partitions, tp: TopicPartitionId) -> bool:
    """Whether this broker holds the partition's log (ReplicaManager.getLogConfig finds a config for it)."""
    topic = partitions.cluster.topics.get(tp.topic) if tp.topic is not None else None
    return topic is not None and 0 <= tp.partition < len(topic.partitions)


def _node_endpoints(ctx: RequestContext, kept: list[tuple[TopicPartitionId, PartitionAnswer]], version: int) -> list:
    """v16+ (KIP-951): the current leaders' endpoints, when a read partition told the client to look for its leader."""
    if version < 16:
        return []
    cluster = ctx.services.cluster
    leaders: set[int] = set()
    for tp, answer in kept:
        if answer.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH) and not answer.refused:
            topic = cluster.topics.get(tp.topic or "")
            if topic is not None and tp.partition < len(topic.partitions) and topic.partitions[tp.partition].leader_id >= 0:
                leaders.add(topic.partitions[tp.partition].leader_id)
    endpoints, name, rack = ctx.services.endpoints, ctx.listener.name, ctx.services.config.rack
    return [FetchResponse.NodeEndpoint(node_id=node, host=host, port=port, rack=rack)
            for node in sorted(leaders) if node not in cluster.down for host, port in [endpoints.advertised(name, node)]]

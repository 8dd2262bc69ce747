"""Produce (key 0), v0-11: records written to partition logs, as a single-node Kafka 3.9 KRaft broker answers.

Behaviour (KafkaApis.handleProduceRequest, then ReplicaManager; the append itself is shim.partitions.append):

- Batches Kafka cannot walk (validator.RequestFailed: a first batch's size below 14, a magic outside 0-2, a size that
  overflows an int, a batch too short for its producer id, ...) fail the whole request as KafkaApis' uncaught
  exception does: every partition gets the error in getErrorResponse's order, CORRUPT_MESSAGE with the exception's
  text in error_message, UNKNOWN_SERVER_ERROR without; acks=0 closes the connection. Where in the steps below Kafka
  reads which batches decides which problem wins (see validator's module notes).
- Transactional batches (the first batch of any partition has the transactional bit) need the request's
  ``transactional_id`` and WRITE on it; otherwise the whole request fails with 53 in every partition (Kafka's
  getErrorResponse, in its java.util.HashMap order; no error_message, as the exception's is the default one).
- WRITE on each topic (declared in authorizer.api_checks, key 0): denied topics get 29 in every partition; the others
  are still written. Then existence (3), then the request-level record checks (ProduceRequest.validateRecords:
  from v3 exactly one magic-2 batch, zstd only from v7 → 87 / 76), all without offsets.
- Transactional batches are verified with the transaction coordinator first (KIP-890, unless
  ``transaction.partition.verification.enable=false``), unless the producer already has an ongoing transaction in the
  partition: a partition not added to the transaction gets INVALID_TXN_STATE ("Partition was not added to the
  transaction"; TRANSACTION_ABORTABLE from v11), a fenced epoch INVALID_PRODUCER_EPOCH, another producer id
  INVALID_PRODUCER_ID_MAPPING, a coordinator that is busy or elsewhere NOT_ENOUGH_REPLICAS with Kafka's "Unable to
  verify ..." message. Whatever the answer, the partition keeps the lowest sequence verified, which holds back the
  producer's higher ones (shim.producers.verification). ``acks`` other than -1, 0, 1: 21 in every partition that got
  this far. Then each partition is appended (shim.partitions.append).
- acks=0: no response at all; if any partition has an error the connection is closed instead (as Kafka does, so
  that the producer notices and refreshes its metadata).

The partitions come in Kafka's order (javacompat.hash_orders): written, denied, unknown, refused by the request
checks, each group in Scala mutable.HashMap order, merged into an immutable Map (insertion order up to four
partitions, CHAMP hash order beyond); topics in the order their first partition comes. Before 3.6 a request with any
partition to append answers all its partitions in one mutable.HashMap's order (ReleaseRules.produce_answer_in_mutable_map).

Version notes: v2+ carry ``log_append_time_ms``, v5+ ``log_start_offset``, v8+ ``record_errors`` and
``error_message``; v3+ carry ``transactional_id``; v9+ flexible. A request with more than 64 KiB of records is
validated in the worker thread (shim.requests.work), so it does not hold up other clients, unless its records are
cheap to read on the loop (see CHEAP_RECORDS and SCANNED_RECORD_COUNT).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kafka_shim.authorizer import CLUSTER_NAME
from kafka_shim.authorizer.api_checks.releases import IDEMPOTENT_WRITE_CLUSTER
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ProduceResponse
from kafka_shim.shim.cluster.topics import INTERNAL_TOPICS
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import CloseConnection, handles
from kafka_shim.shim.javacompat.hash_orders import (
    java_hash_map_order,
    scala_immutable_map_order,
    scala_mutable_map_order,
    topic_partition_hash,
)
from kafka_shim.shim.partitions.append import (
    ACKS,
    AppendResult,
    commit,
    request_refused,
    settings_of,
    validate,
)
from kafka_shim.shim.partitions.manager import PartitionState
from kafka_shim.shim.partitions.validator import (
    V2_HEADER_SIZE,
    AppendSettings,
    RequestFailed,
    check_request,
    first_base_sequence,
    first_batch_idempotent,
    first_batch_transactional,
    transactional_producers,
    validate_by_scans,
)
from kafka_shim.shim.requests.authz import allowed, allowed_names, check, hidden_topics
from kafka_shim.shim.requests.context import NO_RESPONSE, RequestContext
from kafka_shim.shim.requests.coordination import verification_enabled, verifying_coordinator
from kafka_shim.shim.requests.work import Pure, Steps, run_inline, run_sliced

log = get_logger(__name__)
_TXN, _TOPICS = check(ApiKey.PRODUCE, "transactional_id"), check(ApiKey.PRODUCE, "topics")
ADMIN_CLIENT_ID = "__admin_client"  # AdminUtils.ADMIN_CLIENT_ID
MORE_THAN_ONE_PRODUCER = "Transactional records contained more than one producer ID"
# Above this many bytes of records the validation runs in the worker thread, unless the request is cheap to
# validate: uncompressed magic-2 batches of at most CHEAP_RECORD_COUNT records in all and CHEAP_RECORDS bytes (a
# full default-sized producer request). Those cost about a millisecond (the record scan reads same-shaped records
# with the regex engine, at worst ~1.5 us a record in the walk), less than the two thread hops would; a compressed
# batch (which may decompress to far more) or a larger request still goes to the worker.
LARGE_RECORDS = 64 * 1024
CHEAP_RECORDS = 1024 * 1024 + 64 * 1024
CHEAP_RECORD_COUNT = 8192
# Up to this many records (within CHEAP_RECORDS bytes: a megabyte of records of ~30-120 bytes, as producers of small
# messages send) the fast record scans are tried on the loop first (validator.validate_by_scans: ~0.1 us a record,
# a few milliseconds at most); only records they cannot read go to the worker. The worker costs such a request 15-20%
# more CPU than the scans themselves (thread hops, the GIL handed back and forth), more on a busy machine.
SCANNED_RECORD_COUNT = 32768

_TopicResponse = ProduceResponse.TopicProduceResponse
_PartitionResponse = ProduceResponse.PartitionProduceResponse
_RecordError = ProduceResponse.BatchIndexAndErrorMessage
_LeaderIdAndEpoch = ProduceResponse.LeaderIdAndEpoch
PRODUCE_QUOTA = "producer_byte_rate"
_NodeEndpoint = ProduceResponse.NodeEndpoint

Key = tuple[str, int]


def produce_error_response(request: messages.ProduceRequest, code: int, message: str | None) -> ProduceResponse | None:
    """Kafka's ProduceRequest.getErrorResponse: every partition carries the error; nothing at all with acks=0."""
    if request.acks == 0:
        return None
    return _response({key: AppendResult(ErrorCode(code), error_message=message) for key in _partition_sizes_order(request)},
                     version=11)


def _partition_sizes_order(request: messages.ProduceRequest) -> list[Key]:
    """ProduceRequest.partitionSizes: a java.util.HashMap filled with compute(), which getErrorResponse walks."""
    keys = ((t.name, p.index) for t in request.topic_data for p in t.partition_data)
    return java_hash_map_order(keys, topic_partition_hash, by_compute=True)


@dataclass(slots=True)
class _Entry:
    key: Key
    records: bytes | None
    settings: AppendSettings


@handles(ApiKey.PRODUCE, 0, 11, error_response=produce_error_response)
def produce(ctx: RequestContext, request: messages.ProduceRequest) -> ProduceResponse:
    # Also NO_RESPONSE (acks=0), or an awaitable of either for a large request; dispatch takes all three.
    size = sum(len(p.records or b"") for t in request.topic_data for p in t.partition_data)
    count = _plain_record_count(request, size) if size > LARGE_RECORDS else 0
    if count is not None and count <= CHEAP_RECORD_COUNT:
        return _finish(ctx, request, run_inline(_answer(ctx, request)))  # type: ignore[return-value]
    steps = _answer(ctx, request, scans_first=count is not None and count <= SCANNED_RECORD_COUNT)
    return _finish_later(ctx, request, run_sliced(steps))  # type: ignore[return-value]


def _plain_record_count(request: messages.ProduceRequest, size: int) -> int | None:
    """The records' count when they are uncompressed magic-2 batches of at most CHEAP_RECORDS bytes in all, which
    the loop may read (see CHEAP_RECORDS); None otherwise."""
    if size > CHEAP_RECORDS:
        return None
    count = 0
    for topic in request.topic_data:
        for part in topic.partition_data:
            records = part.records
            if records is None or len(records) < V2_HEADER_SIZE:
                continue
            # The first batch's magic, codec bits and record count; v3+ allows one batch (others are refused
            # before validation), and any other layout goes to the worker.
            if records[16] != 2 or records[22] & 0x07 or int.from_bytes(records[8:12], "big") + 12 != len(records):
                return None
            count += max(int.from_bytes(records[57:61], "big", signed=True), 0)
    return count


async def _finish_later(ctx: RequestContext, request: messages.ProduceRequest, answer: object) -> object:
    return _finish(ctx, request, await answer)  # type: ignore[misc]


def _finish(ctx: RequestContext, request: messages.ProduceRequest, results: dict[Key, AppendResult]) -> object:
    meters = ctx.services.quota_meters
    if meters is not None:
        # ClientQuotaManager: the request's bytes against producer_byte_rate; over it, the answer carries the time to
        # wait and the connection is muted that long (with acks=0 only the mute).
        ctx.throttle_ms = meters.record(PRODUCE_QUOTA, ctx.principal, ctx.header.client_id, ctx.request_size)
    if request.acks != 0:
        response = _response(results, ctx.api_version)
        response.throttle_time_ms = ctx.throttle_ms
        if ctx.api_version >= 10 and any(r.error == ErrorCode.NOT_LEADER_OR_FOLLOWER for r in results.values()):
            _name_current_leaders(ctx, response)
        return response
    failed = {f"{t}-{p}": r.error.name for (t, p), r in results.items() if r.error != ErrorCode.NONE}
    if failed:
        # KafkaApis: with acks=0 the producer reads no answer, so an error closes the connection instead.
        raise CloseConnection(f"Produce with acks=0 failed ({', '.join(f'{k}: {v}' for k, v in failed.items())}); "
                              "closing the connection so that the producer refreshes its metadata")
    return NO_RESPONSE


def _answer(ctx: RequestContext, request: messages.ProduceRequest, scans_first: bool = False) -> Steps[dict[Key, AppendResult]]:
    try:
        return (yield from _answer_walked(ctx, request, scans_first))
    except RequestFailed as failed:
        # Kafka could not walk some partition's batches (validator.RequestFailed): the exception leaves
        # handleProduceRequest and the whole request answers with it, or the connection closes for acks=0.
        if request.acks == 0:
            raise CloseConnection(f"Produce with acks=0 of records Kafka cannot read: {failed}") from None
        refusal = failed.refusal
        log.info("produce_request_failed", client_id=ctx.header.client_id, error=refusal.error.name, reason=refusal.detail)
        return _whole_request(request, refusal.error, refusal.message)


def _answer_walked(ctx: RequestContext, request: messages.ProduceRequest, scans_first: bool) -> Steps[dict[Key, AppendResult]]:
    services = ctx.services
    partitions = services.partitions
    version = ctx.api_version
    transactional_id = request.transactional_id if version >= 3 else None
    transactional = any(first_batch_transactional(p.records) for t in request.topic_data for p in t.partition_data)
    if transactional and (transactional_id is None or not allowed(ctx, _TXN, transactional_id)):
        if request.acks == 0:
            raise CloseConnection("Produce with acks=0 of transactional records without WRITE on the transactional id")
        # Kafka's getErrorResponse: the exception's default message is not repeated in error_message.
        return _whole_request(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if (not transactional and services.release_rules.idempotent_needs_cluster
            and any(first_batch_idempotent(p.records) for t in request.topic_data for p in t.partition_data)
            and not allowed(ctx, IDEMPOTENT_WRITE_CLUSTER, CLUSTER_NAME)):
        # KIP-679: before 2.8, idempotent batches needed IDEMPOTENT_WRITE on the cluster, or the request failed whole.
        if request.acks == 0:
            raise CloseConnection("Produce with acks=0 of idempotent records without IDEMPOTENT_WRITE on the cluster")
        return _whole_request(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)

    hidden = hidden_topics(ctx, [t.name for t in request.topic_data], lambda name: name in services.cluster.topics)
    writable = allowed_names(ctx, _TOPICS, [t.name for t in request.topic_data if t.name not in hidden])
    accepted: dict[Key, _Entry] = {}
    unauthorized: dict[Key, AppendResult] = {}
    unknown: dict[Key, AppendResult] = {}
    invalid: dict[Key, AppendResult] = {}
    for topic in request.topic_data:
        for part in topic.partition_data:
            key = (topic.name, part.index)
            if topic.name in hidden:
                unknown[key] = request_refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif topic.name not in writable:
                unauthorized[key] = request_refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif partitions is None or partitions.get(topic.name, part.index) is None:
                unknown[key] = request_refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif part.records is None:
                # Kafka 3.9 fails on null records after accepting them and never answers the request (a differential
                # probe waited in vain); kafka-shim closes the connection instead of leaving the client hanging.
                raise CloseConnection(f"Produce with null records for {topic.name}-{part.index}")
            elif (refusal := check_request(version, part.records)) is not None:
                invalid[key] = request_refused(refusal.error)
            else:
                accepted[key] = _Entry(key, part.records, settings_of(partitions, topic.name))

    producers = {pair for entry in accepted.values() for pair in transactional_producers(entry.records)}
    if len(producers) > 1:
        # ReplicaManager.handleProduceAppend throws before anything is appended; KafkaApis answers with the request's
        # error form, this exception's message included.
        if request.acks == 0:
            raise CloseConnection("Produce with acks=0 of transactional records of more than one producer id")
        return _whole_request(request, ErrorCode.INVALID_PRODUCER_ID_MAPPING, MORE_THAN_ONE_PRODUCER)

    written: dict[Key, AppendResult] = {}
    unverified: dict[Key, AppendResult] = {}
    verifying = False
    if partitions is not None:
        # ReplicaManager.handleProduceAppend: transactional batches are verified first (KIP-890: the partition must
        # have been added to the transaction); the other partitions go on to appendRecords, where invalid acks refuse
        # them all.
        for key, entry in list(accepted.items()):
            state = partitions.get(*key)
            pairs = transactional_producers(entry.records) if state is not None else set()
            if state is None or not pairs or not _needs_verification(ctx, state, next(iter(pairs))[0]):
                continue
            verifying = True
            producer_id, epoch = next(iter(pairs))
            # The partition remembers the verification whatever the coordinator answers (its lowest sequence holds
            # back higher ones until a transactional append: shim.producers.verification).
            state.producers.verifying.start(producer_id, first_base_sequence(entry.records), epoch,
                                            time.time_ns() // 1_000_000)
            refused = _verify_transaction(ctx, transactional_id or "", key, state, (producer_id, epoch), version)
            if refused is not None:
                unverified[key] = refused
                del accepted[key]
    if accepted and request.acks not in ACKS:
        written = {key: request_refused(ErrorCode.INVALID_REQUIRED_ACKS) for key in accepted}
    elif accepted:
        assert partitions is not None
        now = time.time_ns() // 1_000_000
        entries = list(accepted.values())
        checked = _validate_all_by_scans(entries, now) if scans_first else None
        if checked is None:
            checked = yield Pure(_validate_all, entries, now)
        for entry, outcome in zip(entries, checked, strict=True):
            state = partitions.get(*entry.key)  # looked up again: the topic may have gone while validation ran
            if entry.key[0] in INTERNAL_TOPICS and ctx.header.client_id != ADMIN_CLIENT_ID:
                # ReplicaManager.appendToLocalLog: only Kafka's own admin client may write to internal topics.
                written[entry.key] = request_refused(ErrorCode.INVALID_TOPIC_EXCEPTION)
            elif state is None:
                written[entry.key] = request_refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif not services.cluster.leads(*entry.key, ctx.node_id):
                written[entry.key] = request_refused(ErrorCode.NOT_LEADER_OR_FOLLOWER)  # a leaderless fault holds it
            else:
                written[entry.key] = commit(partitions, state, outcome, request.acks, entry.settings)
    if verifying or (written and services.release_rules.produce_answer_in_mutable_map):
        # After a transaction verification ReplicaManager's maps are mutable HashMaps all the way to the answer (when
        # no partition needed one, it answers straight away, as for other produces). Before 3.6 so were the appended
        # results of every Produce, and KafkaApis' ++ onto a mutable.HashMap keeps it one; only a request with nothing
        # to append started from an immutable empty Map.
        merged = {**written, **unverified, **unauthorized, **unknown, **invalid}
        return {key: merged[key] for key in scala_mutable_map_order(merged, topic_partition_hash)}
    return _kafka_order(written, unauthorized, unknown, invalid)


def _needs_verification(ctx: RequestContext, state: PartitionState, producer_id: int) -> bool:
    """UnifiedLog.maybeStartTransactionVerification: verification is on and the producer id has no ongoing
    transaction in this partition, whatever its epoch (UnifiedLog.hasOngoingTransaction looks at the id alone: a
    batch of another epoch is left to the log's own epoch and sequence checks)."""
    return verification_enabled(ctx) and not state.producers.has_ongoing_transaction(producer_id)


def _verify_transaction(ctx: RequestContext, transactional_id: str, key: Key, state: PartitionState,
                        producer: tuple[int, int], version: int) -> AppendResult | None:
    """ReplicaManager.maybeStartTransactionVerificationForPartitions for one partition that needs it: None when the
    batch may be appended, else the answer (the coordinator's error as ReplicaManager and AddPartitionsToTxnManager
    translate it)."""
    producer_id, epoch = producer
    coordinator = verifying_coordinator(ctx, transactional_id)
    if isinstance(coordinator, int):
        code = coordinator
    else:
        code = coordinator.verify_partitions(transactional_id, producer_id, epoch, [key])[key]
    if code == ErrorCode.NONE:
        return None
    if code == ErrorCode.PRODUCER_FENCED:
        code = ErrorCode.INVALID_PRODUCER_EPOCH  # producers expect this code here
    elif code == ErrorCode.TRANSACTION_ABORTABLE and version <= 10:
        code = ErrorCode.INVALID_TXN_STATE  # clients before KIP-890's new error class
    if code == ErrorCode.INVALID_TXN_STATE:
        return request_refused(ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction")
    if code in _RETRIABLE_VERIFICATION:
        return request_refused(ErrorCode.NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to the "
                               f"transaction. Underlying error: {ErrorCode(code).name}")
    return request_refused(ErrorCode(code))


_RETRIABLE_VERIFICATION = frozenset({ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION,
                                     ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                     ErrorCode.NOT_COORDINATOR})


def _kafka_order(*groups: dict[Key, AppendResult]) -> dict[Key, AppendResult]:
    """The partitions in the order Kafka answers them: each group is a Scala mutable.HashMap, merged into an
    immutable Map (KafkaApis: responseStatus ++ unauthorized ++ nonExisting ++ invalid)."""
    if sum(map(len, groups)) == 1:  # one partition (a producer's usual request): no order to work out
        return next(group for group in groups if group)
    merged: dict[Key, AppendResult] = {}
    for group in groups:
        for key in scala_mutable_map_order(group, topic_partition_hash):
            merged[key] = group[key]  # Scala's ++: a later map's entry replaces an earlier one
    return {key: merged[key] for key in scala_immutable_map_order(merged, topic_partition_hash)}


def _whole_request(request: messages.ProduceRequest, error: ErrorCode, message: str | None = None) -> dict[Key, AppendResult]:
    return {key: request_refused(error, message) for key in _partition_sizes_order(request)}


def _validate_all(entries: list[_Entry], now: int) -> list[object]:
    return [validate(e.records, e.settings, now, f"{e.key[0]}-{e.key[1]}") for e in entries]


def _validate_all_by_scans(entries: list[_Entry], now: int) -> list[object] | None:
    """:func:`_validate_all` when the fast scans read every partition's records; None when any needs the walk."""
    checked = []
    for e in entries:
        outcome = validate_by_scans(e.records, e.settings, now, f"{e.key[0]}-{e.key[1]}")
        if outcome is None:
            return None
        checked.append(outcome)
    return checked


def _name_current_leaders(ctx: RequestContext, response: ProduceResponse) -> None:
    """KIP-951 (v10+): a partition this node does not lead names its current leader, and the answer carries the
    leaders' endpoints, so the producer goes there without waiting for a metadata refresh."""
    cluster = ctx.services.cluster
    leaders: set[int] = set()
    for topic in response.responses:
        known = cluster.topics.get(topic.name)
        for p in topic.partition_responses:
            if p.error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER or known is None or p.index >= len(known.partitions):
                continue
            partition = known.partitions[p.index]
            p.current_leader = _LeaderIdAndEpoch(leader_id=partition.leader_id, leader_epoch=partition.leader_epoch)
            if partition.leader_id >= 0 and partition.leader_id not in cluster.down:
                leaders.add(partition.leader_id)
    endpoints, name, rack = ctx.services.endpoints, ctx.listener.name, ctx.services.config.rack
    response.node_endpoints = [_NodeEndpoint(node_id=node, host=host, port=port, rack=rack)
                               for node in sorted(leaders) for host, port in [endpoints.advertised(name, node)]]


def _response(results: dict[Key, AppendResult], version: int) -> ProduceResponse:
    topics: dict[str, _TopicResponse] = {}
    for (name, index), result in results.items():
        entry = topics.get(name)
        if entry is None:
            entry = topics[name] = _TopicResponse(name=name, partition_responses=[])
        extra = {}
        if version >= 8:
            extra = {"record_errors": [_RecordError(batch_index=e.batch_index, batch_index_error_message=e.message)
                                       for e in result.record_errors],
                     "error_message": result.error_message}
        entry.partition_responses.append(_PartitionResponse(
            index=index, error_code=result.error, base_offset=result.base_offset, log_append_time_ms=result.log_append_time,
            log_start_offset=result.log_start_offset, **extra))
    return ProduceResponse(responses=list(topics.values()), throttle_time_ms=0)

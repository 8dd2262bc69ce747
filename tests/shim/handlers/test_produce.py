"""Produce (0) and InitProducerId (22) over TCP with hand-built requests: authorization per topic and on the
transactional id, unknown partitions, acks (0 answers nothing and closes on an error; invalid acks 21), the
whole-request error form, the per-version fields, and KIP-679 for idempotent producers."""

from __future__ import annotations

import asyncio

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.messages import InitProducerIdRequest, MetadataRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from tests.support.acl_helpers import ALLOW, CLUSTER, DENY, PREFIXED, WRITE, binding, grant
from tests.support.produce import records_of

PRODUCE, METADATA, INIT_PRODUCER_ID = 0, 3, 22
TRANSACTIONAL_ID = 5
IDEMPOTENT_WRITE = 12
NOW = 1_700_000_000_000


def _batch(values: list[bytes], **kw: object) -> bytes:
    return encode_batch(build_batch([(b"k", v, [], NOW + i) for i, v in enumerate(values)], **kw))


def _request(topics: dict[str, dict[int, bytes]], acks: int = -1, transactional_id: str | None = None) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=transactional_id, acks=acks, timeout_ms=30000,
        topic_data=[ProduceRequest.TopicProduceData(
            name=name, partition_data=[ProduceRequest.PartitionProduceData(index=i, records=r) for i, r in parts.items()])
            for name, parts in topics.items()])


def _answers(response) -> dict[tuple[str, int], tuple]:
    return {(t.name, p.index): (p.error_code, p.base_offset, p.log_start_offset)
            for t in response.responses for p in t.partition_responses}


def _stored(broker, topic: str, partition: int = 0) -> list[bytes | None]:
    state = broker.services.partitions.get(topic, partition)
    return [s.value for s in records_of(state.log.read(0, 1 << 30).records)]


@pytest.mark.parametrize("version", [3, 5, 8, 9, 11])
async def test_denied_topics_get_29_and_the_others_are_written(secured_broker, client_of, version: int) -> None:
    partitions = secured_broker.services.partitions
    partitions.create_topic("open", 2)
    partitions.create_topic("closed", 1)
    grant(secured_broker, binding(name="open", operation=WRITE))
    client = await client_of(secured_broker)
    response = await client.request(PRODUCE, version, _request(
        {"open": {0: _batch([b"a"]), 1: _batch([b"b", b"c"])}, "closed": {0: _batch([b"x"])}, "missing": {0: _batch([b"y"])}}))
    log_start = 0 if version >= 5 else -1
    assert _answers(response) == {
        ("open", 0): (0, 0, log_start), ("open", 1): (0, 0, log_start),
        ("closed", 0): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1), ("missing", 0): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1),
    }
    assert _stored(secured_broker, "open", 1) == [b"b", b"c"] and _stored(secured_broker, "closed") == []


async def test_unknown_topics_and_partitions_get_3(open_broker, client_of) -> None:
    open_broker.services.partitions.create_topic("t", 1)
    client = await client_of(open_broker)
    response = await client.request(PRODUCE, 9, _request({"t": {0: _batch([b"a"]), 1: _batch([b"b"])}, "nope": {0: _batch([b"c"])}}))
    assert _answers(response) == {("t", 0): (0, 0, 0), ("t", 1): (3, -1, -1), ("nope", 0): (3, -1, -1)}


async def test_record_validation_errors_carry_record_errors_and_a_message_from_v8(open_broker, client_of) -> None:
    open_broker.services.partitions.create_topic("c", 1, {"cleanup.policy": "compact"})
    client = await client_of(open_broker)
    keyless = encode_batch(build_batch([(None, b"v", [], NOW)]))
    for version, message in ((7, None), (8, "One or more records have been rejected due to 1 record errors in total, and only "
                                             "showing the first three errors at most: [RecordError(batchIndex=0, message='Compacted "
                                             "topic cannot accept message without key in topic partition c-0')]")):
        response = await client.request(PRODUCE, version, _request({"c": {0: keyless}}))
        (partition,) = response.responses[0].partition_responses
        assert (partition.error_code, partition.error_message) == (ErrorCode.INVALID_RECORD, message)
        if version >= 8:
            assert [(e.batch_index, e.batch_index_error_message) for e in partition.record_errors] == [
                (0, "Compacted topic cannot accept message without key in topic partition c-0")]


async def test_invalid_acks_get_21_after_authorization_and_existence(open_broker, client_of) -> None:
    open_broker.services.partitions.create_topic("t", 1)
    client = await client_of(open_broker)
    response = await client.request(PRODUCE, 9, _request({"t": {0: _batch([b"a"])}, "nope": {0: _batch([b"b"])}}, acks=2))
    assert _answers(response) == {("t", 0): (ErrorCode.INVALID_REQUIRED_ACKS, -1, -1), ("nope", 0): (3, -1, -1)}
    assert _stored(open_broker, "t") == []


async def test_acks_0_answers_nothing_and_closes_the_connection_on_an_error(open_broker, client_of) -> None:
    open_broker.services.partitions.create_topic("t", 1)
    client = await client_of(open_broker)
    await client.send(PRODUCE, 9, _request({"t": {0: _batch([b"quiet"])}}, acks=0))
    # The next answer on the connection is the Metadata one: the acks=0 request got none.
    metadata = await client.request(METADATA, 12, MetadataRequest(topics=None))
    assert [t.name for t in metadata.topics] == ["t"]
    assert _stored(open_broker, "t") == [b"quiet"]
    await client.send(PRODUCE, 9, _request({"t": {0: _batch([b"written"])}, "nope": {0: _batch([b"lost"])}}, acks=0))
    assert await client.closed_by_peer()
    assert _stored(open_broker, "t") == [b"quiet", b"written"]


async def test_transactional_batches_need_write_on_the_transactional_id(secured_broker, client_of) -> None:
    secured_broker.services.partitions.create_topic("t", 1)
    grant(secured_broker, binding(name="t", operation=WRITE))
    client = await client_of(secured_broker)
    txn = _batch([b"a"], producer_id=4, producer_epoch=0, base_sequence=0, transactional=True)
    response = await client.request(PRODUCE, 9, _request({"t": {0: txn}, "other": {0: _batch([b"b"])}}, transactional_id="tx"))
    assert _answers(response) == {("t", 0): (53, -1, -1), ("other", 0): (53, -1, -1)}
    assert {p.error_message for t in response.responses for p in t.partition_responses} == {None}  # Kafka's default message
    grant(secured_broker, binding(rtype=TRANSACTIONAL_ID, name="tx", operation=WRITE))
    response = await client.request(PRODUCE, 9, _request({"t": {0: txn}}, transactional_id="tx"))
    (partition,) = response.responses[0].partition_responses
    assert (partition.error_code, partition.error_message) == (
        ErrorCode.NOT_ENOUGH_REPLICAS,
        "Unable to verify the partition has been added to the transaction. Underlying error: COORDINATOR_NOT_AVAILABLE")
    assert _stored(secured_broker, "t") == []


async def test_a_large_request_is_written_while_another_client_is_served(open_broker, client_of) -> None:
    open_broker.services.partitions.create_topic("big", 1, {"max.message.bytes": str(16 << 20)})
    big, small = await client_of(open_broker), await client_of(open_broker)
    values = [bytes([i % 251]) * 1000 for i in range(3000)]
    sent = asyncio.ensure_future(big.request(PRODUCE, 9, _request({"big": {0: _batch(values)}}), timeout=120))
    metadata = await small.request(METADATA, 12, MetadataRequest(topics=None), timeout=60)
    assert [t.name for t in metadata.topics] == ["big"]
    assert _answers(await sent) == {("big", 0): (0, 0, 0)}
    assert _stored(open_broker, "big") == values


@pytest.mark.parametrize("headers, in_worker", [([], False), ([("trace", b"1")], True)], ids=["uniform", "with-headers"])
async def test_many_small_records_are_read_on_the_loop_when_the_scans_can(open_broker, client_of, monkeypatch, headers,
                                                                         in_worker: bool) -> None:
    """Most of a megabyte of 80-byte records (more than CHEAP_RECORD_COUNT) in the shapes producers write is validated by
    the fast scans on the loop; records the scans cannot read (headers) go to the worker thread. Written alike."""
    from kafka_shim.shim.handlers import produce

    worker_used = []
    validate_all = produce._validate_all

    def in_the_worker(*args: object) -> object:
        worker_used.append(True)
        return validate_all(*args)

    monkeypatch.setattr(produce, "_validate_all", in_the_worker)
    open_broker.services.partitions.create_topic("small", 1)
    count = produce.CHEAP_RECORD_COUNT + 1000
    values = [b"%08d" % i + b"v" * 72 for i in range(count)]
    records = encode_batch(build_batch([(None, v, headers, NOW) for v in values]))
    assert produce.LARGE_RECORDS < len(records) <= produce.CHEAP_RECORDS
    client = await client_of(open_broker)
    assert _answers(await client.request(PRODUCE, 9, _request({"small": {0: records}}), timeout=120)) == {("small", 0): (0, 0, 0)}
    assert bool(worker_used) == in_worker
    assert _stored(open_broker, "small") == values


# -- InitProducerId ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
async def test_idempotent_producers_get_increasing_ids_at_epoch_0(open_broker, client_of, version: int) -> None:
    client = await client_of(open_broker)
    first = await client.request(INIT_PRODUCER_ID, version, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))
    second = await client.request(INIT_PRODUCER_ID, version, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))
    assert (first.error_code, first.producer_epoch, second.producer_epoch) == (0, 0, 0)
    assert second.producer_id == first.producer_id + 1


async def test_producer_id_without_epoch_is_invalid(open_broker, client_of) -> None:
    client = await client_of(open_broker)
    response = await client.request(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1,
                                                                                producer_id=12, producer_epoch=-1))
    assert (response.error_code, response.producer_id, response.producer_epoch) == (ErrorCode.INVALID_REQUEST, -1, -1)


@pytest.mark.parametrize(("acls", "expected"), [
    ([], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    ([binding(name="pay", pattern=PREFIXED, operation=WRITE)], ErrorCode.NONE),
    ([binding(name="pay", pattern=PREFIXED, operation=WRITE), binding(name="pa", pattern=PREFIXED, operation=WRITE, permission=DENY)],
     ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    ([binding(name="orders", operation=WRITE), binding(name="*", operation=WRITE, permission=DENY)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    ([binding(rtype=CLUSTER, name="kafka-cluster", operation=IDEMPOTENT_WRITE, permission=ALLOW)], ErrorCode.NONE),
], ids=["nothing", "prefixed-write", "dominated-by-deny", "literal-star-deny", "idempotent-write"])
async def test_kip_679_idempotent_producers(secured_broker, client_of, acls, expected) -> None:
    grant(secured_broker, *acls)
    client = await client_of(secured_broker)
    response = await client.request(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))
    assert response.error_code == expected
    assert (response.producer_id >= 0) == (expected == ErrorCode.NONE)


async def test_transactional_ids_need_write_and_then_find_no_coordinator(secured_broker, client_of) -> None:
    client = await client_of(secured_broker)
    denied = await client.request(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000))
    assert (denied.error_code, denied.producer_id, denied.producer_epoch) == (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    grant(secured_broker, binding(rtype=TRANSACTIONAL_ID, name="tx", operation=WRITE))
    for txn_id, timeout, code in (("tx", 60000, ErrorCode.NOT_COORDINATOR), ("tx", 0, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
                                  ("tx", 900001, ErrorCode.INVALID_TRANSACTION_TIMEOUT)):
        answer = await client.request(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout))
        assert (answer.error_code, answer.producer_id) == (code, -1)


async def test_producer_ids_are_not_repeated_after_a_restart(tmp_path) -> None:
    from tests.support.acl_helpers import config, connect, running

    cfg = config(authorizer=False, log_dirs=str(tmp_path))
    ids = []
    for _ in range(2):
        async with running(cfg) as broker:
            client = await connect(broker)
            answer = await client.request(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1))
            ids.append(answer.producer_id)
            await client.close()
    assert ids[1] > ids[0]


async def test_internal_topics_are_written_only_by_kafkas_admin_client(open_broker, client_of) -> None:
    open_broker.services.partitions.create_topic("__consumer_offsets", 1)
    client = await client_of(open_broker)
    response = await client.request(PRODUCE, 9, _request({"__consumer_offsets": {0: _batch([b"a"])}}))
    assert _answers(response) == {("__consumer_offsets", 0): (ErrorCode.INVALID_TOPIC_EXCEPTION, -1, -1)}
    assert _stored(open_broker, "__consumer_offsets") == []


async def test_null_records_close_the_connection(open_broker, client_of) -> None:
    """Kafka 3.9 never answers such a request; kafka-shim closes rather than leave the producer waiting."""
    open_broker.services.partitions.create_topic("t", 1)
    client = await client_of(open_broker)
    await client.send(PRODUCE, 9, _request({"t": {0: None}}))
    assert await client.closed_by_peer()

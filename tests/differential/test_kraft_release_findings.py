"""Differences a random differential probe of the KRaft release emulation (/tmp/kraft-probe, seeds against real 3.5.2
and 3.7.2) found between real Kafka 3.5.2 and kafka-shim with ``kafka.version=3.5``, each pinned as the same request to
both brokers, answers compared field by field.

scripts/real-kafka starts 3.5.2 as it starts 3.9 (KRaft, StandardAuthorizer, the same SASL users and super users);
kafka-shim runs with ``kafka.version=3.5`` and the same users. One real broker for the module; every test names its own
topics, groups and transactional ids, so the tests share it without resetting it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DescribeLogDirsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    OffsetCommitRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.compare import assert_same
from tests.support.peers import INTERNAL_TOPIC_PROPERTIES, REPORTED, RealKafka, start_real_kafka, stop_real_kafka
from tests.support.sasl_setup import listener_address, sasl_properties
from tests.support.wire import Answer, Wire

LINE, RELEASE = "3.5", "3.5.2"  # the emulated release line and the real release that judges it
ADMIN = ("admin", "admin-secret")
COORDINATOR_NOT_READY = {14, 15, 16}  # a coordinator still loading or being created: retried, with a bound
GROUP, TRANSACTION = 0, 1  # FindCoordinator key types


def shim_config(line: str = LINE) -> BrokerConfig:
    """kafka-shim as scripts/real-kafka configures a KRaft Kafka of release ``line``: the same users and super users,
    StandardAuthorizer."""
    return BrokerConfig.from_properties(sasl_properties() | {
        "kafka.version": line,
        "super.users": "User:admin;User:broker",
        "allow.everyone.if.no.acl.found": "false",
        "group.initial.rebalance.delay.ms": "0",
    } | INTERNAL_TOPIC_PROPERTIES)


@dataclass
class Pair:
    kafka: RealKafka
    shim_sasl: tuple[str, int]
    cid: int = 7000

    @property
    def addresses(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return self.kafka.sasl, self.shim_sasl

    def each(self, api_key: int, version: int, body_for: Callable[[int], Any]) -> tuple[Answer, Answer]:
        """One request to each broker as admin; ``body_for(side)`` (0 Kafka, 1 kafka-shim) builds its body, for the
        fields each broker allocates itself (producer ids)."""
        answers = []
        self.cid += 1
        for side, address in enumerate(self.addresses):
            with Wire(address) as wire:
                wire.sasl_plain(*ADMIN)
                frame = encode_request(api_key, version, self.cid, body_for(side), client_id="kraft-findings")
                answers.append(wire.exchange(frame, api_key, version))
        return answers[0], answers[1]

    def both(self, api_key: int, version: int, body: Any) -> tuple[Answer, Answer]:
        return self.each(api_key, version, lambda side: body)

    def until_ready(self, api_key: int, version: int, body_for: Callable[[int], Any], error_of: Callable[[Any], int],
                    timeout: float = 60.0) -> tuple[Answer, Answer]:
        """The request on each broker, repeated while its coordinator is not ready (Kafka creates the internal topics
        on the first FindCoordinator); then both must have succeeded."""
        answers = []
        for side, address in enumerate(self.addresses):
            deadline = time.monotonic() + timeout
            with Wire(address) as wire:
                wire.sasl_plain(*ADMIN)
                while True:
                    answer = wire.request(api_key, version, body_for(side))
                    if error_of(answer.body) not in COORDINATOR_NOT_READY or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
            assert error_of(answer.body) == 0, (address, answer)
            answers.append(answer)
        return answers[0], answers[1]

    def create_topic(self, name: str) -> None:
        body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                                   timeout_ms=30000)
        kafka, shim = self.both(ApiKey.CREATE_TOPICS, 4, body)
        assert [t.error_code for t in kafka.body.topics] == [t.error_code for t in shim.body.topics] == [0], (kafka, shim)

    def coordinator(self, key: str, key_type: int) -> None:
        self.until_ready(ApiKey.FIND_COORDINATOR, 2, lambda side: FindCoordinatorRequest(key=key, key_type=key_type),
                         lambda body: body.error_code)

    def init_transaction(self, transactional_id: str) -> list[tuple[int, int]]:
        """A transactional producer on each broker: [(producer id, epoch) on Kafka, on kafka-shim]."""
        self.coordinator(transactional_id, TRANSACTION)
        answers = self.until_ready(ApiKey.INIT_PRODUCER_ID, 1, lambda side: InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=60000), lambda body: body.error_code)
        return [(a.body.producer_id, a.body.producer_epoch) for a in answers]


def release_pair(directory: Path, release: str, config: BrokerConfig, label: str, *overrides: str,
                 mode: str | None = None) -> Iterator[Pair]:
    """A real Kafka of ``release`` (with ``overrides``; ``mode``: scripts/real-kafka's REAL_KAFKA_MODE) and kafka-shim
    on ``config``, for a module's fixture."""
    started = time.monotonic()
    kafka = start_real_kafka(directory, *overrides, version=release, mode=mode)
    REPORTED.append(f"{label}: Kafka {release} started in {time.monotonic() - started:.1f}s")
    try:
        with EmbeddedBroker(config) as shim:
            yield Pair(kafka, listener_address(shim.broker, "SASL_PLAINTEXT"))
    finally:
        stop_real_kafka(kafka)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    yield from release_pair(tmp_path_factory.mktemp(f"kafka-{RELEASE}"), RELEASE, shim_config(), "KRaft release findings")


def _what(text: str) -> str:
    return f"{text} (Kafka {RELEASE} vs kafka-shim kafka.version={LINE})"


def test_api_versions_features_are_the_release_metadata_version(pair: Pair) -> None:
    """ApiVersions v3 reports metadata.version up to the release's own latest level, finalized there on a freshly
    formatted cluster (3.5-IV2, level 11, for 3.5), not 3.9's 21. The epoch is the metadata log offset: not compared."""
    kafka, shim = pair.both(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="kraft-findings",
                                                                       client_software_version="1"))
    assert_same(kafka, shim, ignore=("finalized_features_epoch",), what=_what("ApiVersions v3"))
    assert [(f.name, f.max_version) for f in kafka.body.supported_features] == [("metadata.version", 11)]


@pytest.mark.parametrize("version", [5, 7])
def test_create_topics_lists_the_internal_tiered_storage_keys(pair: Pair, version: int) -> None:
    """KRaft's controller lists a new topic's configs from every key of the topic ConfigDef, so 3.3-3.5 also list the
    tiered storage keys LogConfig defined as internal (remote.storage.enable, local.retention.ms/.bytes), which 3.6
    made public; DescribeConfigs does not list them."""
    name = f"kraft-findings-configs-v{version}"
    body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                               timeout_ms=30000)
    kafka, shim = pair.both(ApiKey.CREATE_TOPICS, version, body)
    assert_same(kafka, shim, ignore=("topics.*.topic_id",), what=_what(f"CreateTopics v{version} of a new topic"))
    listed = {c.name: c.value for c in kafka.body.topics[0].configs}
    assert {k: listed.get(k) for k in ("remote.storage.enable", "local.retention.ms", "local.retention.bytes")} == {
        "remote.storage.enable": "false", "local.retention.ms": "-2", "local.retention.bytes": "-2"}


def test_transactional_produce_to_a_partition_not_added(pair: Pair) -> None:
    """Before KIP-890 part 1 (3.6) nothing verified that a transactional batch's partition was added to its
    transaction: 3.5 appends it (3.6+ answer INVALID_TXN_STATE, 48)."""
    unverified_produce(pair, "kraft-findings", _what("transactional Produce v9 to a partition not added"))


def test_txn_offset_commit_without_add_offsets(pair: Pair) -> None:
    """Before KAFKA-15449 (3.7) a TxnOffsetCommit's __consumer_offsets partition was not verified with the transaction
    coordinator: 3.5 (and 3.6) take offsets of a transaction that never sent AddOffsetsToTxn (3.7+: 48)."""
    unverified_txn_offset_commit(pair, "kraft-findings", _what("TxnOffsetCommit without AddOffsetsToTxn"))


def unverified_produce(pair: Pair, prefix: str, what: str) -> None:
    """A transactional Produce (v8: every release since 2.3 has it) to a partition its transaction never added:
    appended (0) on both, as every release before 3.6 did."""
    topic, transactional_id = f"{prefix}-unverified-produce", f"{prefix}-tx-produce"
    pair.create_topic(topic)
    producers = pair.init_transaction(transactional_id)

    def produce(side: int) -> ProduceRequest:
        producer_id, epoch = producers[side]
        batch = build_batch([(b"k", b"v", [], 1_700_000_000_000)], transactional=True, producer_id=producer_id,
                            producer_epoch=epoch, base_sequence=0)
        return ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[ProduceRequest.PartitionProduceData(
                index=0, records=encode_batch(batch))])])

    kafka, shim = pair.each(ApiKey.PRODUCE, 8, produce)
    assert_same(kafka, shim, what=what)
    assert [p.error_code for t in kafka.body.responses for p in t.partition_responses] == [0]


def unverified_txn_offset_commit(pair: Pair, prefix: str, what: str) -> None:
    """TxnOffsetCommit v0 and v3 of a transaction that never sent AddOffsetsToTxn: taken (0) on both, as every
    release before 3.7 did."""
    topic, group, transactional_id = f"{prefix}-txn-offsets", f"{prefix}-txn-group", f"{prefix}-tx-offsets"
    pair.create_topic(topic)
    pair.coordinator(group, GROUP)
    # a simple offset commit first: it answers 0 only once the group's coordinator has loaded its partition
    pair.until_ready(ApiKey.OFFSET_COMMIT, 2, lambda side: OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1, topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]),
        lambda body: body.topics[0].partitions[0].error_code)
    producers = pair.init_transaction(transactional_id)

    def commit(side: int) -> TxnOffsetCommitRequest:
        producer_id, epoch = producers[side]
        return TxnOffsetCommitRequest(transactional_id=transactional_id, group_id=group, producer_id=producer_id,
                                      producer_epoch=epoch, generation_id=-1, member_id="", topics=[
                                          TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                                              TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0,
                                                                                                    committed_offset=1)])])

    for version in (0, 3):
        kafka, shim = pair.each(ApiKey.TXN_OFFSET_COMMIT, version, commit)
        assert_same(kafka, shim, what=f"{what} (v{version})")
        assert [p.error_code for t in kafka.body.topics for p in t.partitions] == [0]


def test_describe_log_dirs_of_named_partitions_lists_every_topic(pair: Pair) -> None:
    """Up to 3.7.0 ReplicaManager.describeLogDirs listed every topic of the directory, those with no requested partition
    with an empty partition list (KAFKA-16807, fixed in 3.7.1). Sizes and the directory itself are each broker's own."""
    asked, other = "kraft-findings-log-dirs-asked", "kraft-findings-log-dirs-other"
    for name in (asked, other):
        pair.create_topic(name)
    # Kafka's broker creates a new topic's log once it applies the controller's record, a moment after CreateTopics
    # answers: wait (bounded) until its directory holds both
    deadline = time.monotonic() + 30
    with Wire(pair.kafka.sasl) as wire:
        wire.sasl_plain(*ADMIN)
        while not {asked, other} <= {t.name for r in wire.request(ApiKey.DESCRIBE_LOG_DIRS, 1, DescribeLogDirsRequest(
                topics=None)).body.results for t in r.topics}:
            assert time.monotonic() < deadline, "Kafka never hosted the new topics' logs"
            time.sleep(0.05)
    body = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic=asked, partitions=[0])])
    for version in (1, 4):
        kafka, shim = pair.both(ApiKey.DESCRIBE_LOG_DIRS, version, body)
        assert_same(kafka, shim, ignore=("results.*.log_dir", "results.*.total_bytes", "results.*.usable_bytes",
                                         "results.*.topics.*.partitions.*.partition_size"),
                    what=_what(f"DescribeLogDirs v{version} of one partition"))
        listed = {t.name: [p.partition_index for p in t.partitions] for r in kafka.body.results for t in r.topics}
        assert listed[asked] == [0] and listed[other] == []


def test_produce_answers_in_one_mutable_map_order(pair: Pair) -> None:
    """Before 3.6 every map from KafkaApis' appendable partitions to the Produce answer was a Scala mutable.HashMap
    (ReplicaManager.appendRecords, KafkaApis' ++ onto it): a Produce that appends answers all its partitions in that
    map's hash order, refused ones possibly first (3.6+ merge into an immutable Map: the appended ones first)."""
    mixed_produce_order(pair, "kraft-findings", _what("Produce of an appended and refused partitions"))


def mixed_produce_order(pair: Pair, prefix: str, what: str) -> None:
    """One partition appended, an absent partition of its topic and an absent topic (3), at acks 1 and -1. The names
    are ones whose hash order does not put the appended partition first (checked on Kafka's answer below), so an
    answer that lists it first cannot pass."""
    topic = f"{prefix}-produce-order-0"
    pair.create_topic(topic)
    batch = encode_batch(build_batch([(b"k", b"v", [], 1_700_000_000_000)]))
    for version, acks in ((3, 1), (8, -1)):
        body = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=name, partition_data=[
                ProduceRequest.PartitionProduceData(index=index, records=batch) for index in indexes])
            for name, indexes in ((topic, [0, 3]), (f"{topic}-absent", [0]))])
        kafka, shim = pair.both(ApiKey.PRODUCE, version, body)
        assert_same(kafka, shim, what=f"{what} (v{version}, acks={acks})")
        answered = [(t.name, p.index, p.error_code) for t in kafka.body.responses for p in t.partition_responses]
        assert sorted(answered) == sorted([(topic, 0, 0), (topic, 3, 3), (f"{topic}-absent", 0, 3)])
        assert answered[0] != (topic, 0, 0), answered

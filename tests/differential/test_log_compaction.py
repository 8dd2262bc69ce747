"""Log compaction against a real Kafka 3.9: the same records go to both brokers, the topic turns compacted, and the
batches both then serve from the start are compared field by field (producer ids and delete horizons aside), with
ListOffsets, the segment files and the ``cleaner-offset-checkpoint``.

Each stage writes with ``cleanup.policy=delete`` and small segments, then turns the topic to ``compact`` with a large
``segment.bytes``, so that each broker cleans every dirty segment in one group, in one swap, whenever its cleaner
comes by: the result does not depend on timing. Stage one has repeated keys within and across batches, keyless
records, a tombstone, a gzip batch, headers, an idempotent producer whose last batch is superseded, an aborted and a
committed transaction; the later stages come after the delete horizon (``delete.retention.ms=0``) and after the
producers expired, and drop the tombstone, the producers' last (empty) batches and the aborted transaction's marker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafka_shim.protocol.messages import (
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeProducersRequest,
    EndTxnRequest,
    FetchRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from kafka_shim.protocol.records import Compression, RecordBatch, build_batch, decode_batches, encode_batch
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_transactions import Script
from tests.support.peers import RealKafka, start_real_kafka, stop_real_kafka
from tests.support.sasl_setup import USERS, listener_address, sasl_properties

pytestmark = pytest.mark.oracle

PRODUCE, FETCH, LIST_OFFSETS, INIT_PID, CREATE_TOPICS, ADD_PARTITIONS, END_TXN, ALTER_CONFIGS = 0, 1, 2, 22, 19, 24, 26, 44
DESCRIBE_PRODUCERS = 61
TOPIC = "compaction-diff"
# A cleaner that comes by often; producers that expire a few seconds after their last write, checked often.
BROKER = {"log.cleaner.backoff.ms": "100", "producer.id.expiration.ms": "20000",
          "producer.id.expiration.check.interval.ms": "500"}
SMALL_SEGMENTS = {"cleanup.policy": "delete", "segment.bytes": "1024"}
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "1048576", "min.cleanable.dirty.ratio": "0.01",
             "delete.retention.ms": "0"}


@pytest.fixture(scope="module")
def kafka(tmp_path_factory, oracle) -> Iterator[RealKafka]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-compaction"), *(f"{k}={v}" for k, v in BROKER.items()))
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="module")
def shim(tmp_path_factory) -> Iterator[tuple[tuple[str, int], Path]]:
    data = tmp_path_factory.mktemp("shim-compaction")
    config = BrokerConfig.from_properties({**sasl_properties(), **BROKER, "log.dirs": str(data),
                                           "offsets.topic.replication.factor": "1",
                                           "transaction.state.log.replication.factor": "1",
                                           "transaction.state.log.min.isr": "1"})
    with EmbeddedBroker(config) as broker:
        yield listener_address(broker.broker, "SASL_PLAINTEXT"), data


def _admin(address: tuple[str, int]) -> Script:
    script = Script(address)
    script.wire.sasl_plain("admin", USERS["admin"])
    return script


def _alter(run: Script, configs: dict[str, str]) -> None:
    answer = run("alter", ALTER_CONFIGS, 1, IncrementalAlterConfigsRequest(validate_only=False, resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=2, resource_name=TOPIC, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs.items()])]))
    assert answer.body.responses[0].error_code == 0, answer


def _produce(run: Script, data: bytes, transactional_id: str | None = None) -> None:
    answer = run("produce", PRODUCE, 9, ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=30_000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=data)])]))
    assert answer.body.responses[0].partition_responses[0].error_code == 0, answer


def _batch(records: list[tuple[bytes | None, bytes | None]], t0: int, *, producer: tuple[int, int, int] | None = None,
           transactional: bool = False, compression: Compression = Compression.NONE, headers: list | None = None) -> bytes:
    pid, epoch, sequence = producer or (-1, -1, -1)
    return encode_batch(build_batch([(k, v, headers or [], t0 + i) for i, (k, v) in enumerate(records)],
                                    producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                                    transactional=transactional, compression=compression))


def _transaction(run: Script, name: str, records: list[tuple[bytes, bytes]], t0: int, commit: bool) -> None:
    init = run("init " + name, INIT_PID, 4, InitProducerIdRequest(transactional_id=name, transaction_timeout_ms=60_000,
                                                                   producer_id=-1, producer_epoch=-1)).body
    assert init.error_code == 0, init
    added = run("add " + name, ADD_PARTITIONS, 3, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=name, v3_and_below_producer_id=init.producer_id,
        v3_and_below_producer_epoch=init.producer_epoch, v3_and_below_topics=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])]))
    assert added.body.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0, added
    for sequence, record in enumerate(records):
        _produce(run, _batch([record], t0 + sequence, producer=(init.producer_id, init.producer_epoch, sequence),
                             transactional=True), name)
    ended = run("end " + name, END_TXN, 3, EndTxnRequest(transactional_id=name, producer_id=init.producer_id,
                                                         producer_epoch=init.producer_epoch, committed=commit))
    assert ended.body.error_code == 0, ended
    run.wait_until_complete(name)


def _stage_one(run: Script, t0: int, side: dict[str, int]) -> None:
    run("create", CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
        CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1, assignments=[], configs=[
            CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in SMALL_SEGMENTS.items()])]))
    run.wait_for_coordinator("compaction-aborted", "compaction-group")
    _produce(run, _batch([(b"a", b"a1"), (b"b", b"b1"), (b"a", b"a2")], t0))
    _produce(run, _batch([(None, b"keyless"), (b"c", b"c1")], t0 + 10))
    _produce(run, _batch([(b"a", b"a3"), (b"d", b"d1"), (b"e", b"e1")], t0 + 20, compression=Compression.GZIP))
    _produce(run, _batch([(b"b", None)], t0 + 30))  # a tombstone
    init = run("init idempotent", INIT_PID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000,
                                                                      producer_id=-1, producer_epoch=-1)).body
    # The idempotent producer's records carry this side's time, taken now (not an hour ahead): a producer expires
    # producer.id.expiration.ms after its last batch's timestamp, here well after this stage's cleaning.
    side["start"] = int(time.time() * 1000)
    _produce(run, _batch([(b"f", b"f1"), (b"g", b"g1")], side["start"], producer=(init.producer_id, init.producer_epoch, 0)))
    _produce(run, _batch([(b"f", b"f2")], side["start"] + 10, producer=(init.producer_id, init.producer_epoch, 2)))
    _produce(run, _batch([(b"f", b"f3")], t0 + 60, headers=[("h", b"v"), ("n", None)]))  # supersedes the producer's last
    _transaction(run, "compaction-aborted", [(b"a", b"aborted-1"), (b"x", b"aborted-2")], t0 + 70, commit=False)
    _transaction(run, "compaction-committed", [(b"y", b"committed-1"), (b"y", b"committed-2")], t0 + 80, commit=True)
    for i in range(40):  # several more segments, the last one staying active
        _produce(run, _batch([(b"k%d" % (i % 7), b"filler-%d-" % i + b"." * 40)], t0 + 100 + i))


def _filler(count: int, stage: int) -> Callable[[Script, int, dict[str, int]], None]:
    def write(run: Script, t0: int, _side: dict[str, int]) -> None:
        for i in range(count):
            _produce(run, _batch([(b"k%d" % (i % 7), b"stage-%d-%d-" % (stage, i) + b"." * 40)], t0 + 100 * stage + i))

    return write


def _wait_for_expired_producers(run: Script) -> None:
    """DescribeProducers until the partition has no producer left (producer.id.expiration.ms after their last write)."""
    deadline = time.monotonic() + 120
    while True:
        answer = run("describe producers", DESCRIBE_PRODUCERS, 0, DescribeProducersRequest(topics=[
            DescribeProducersRequest.TopicRequest(name=TOPIC, partition_indexes=[0])]))
        active = answer.body.topics[0].partitions[0].active_producers
        if not active:
            return
        assert time.monotonic() < deadline, f"producers never expired at {run.wire.address}: {active}"
        time.sleep(0.2)


def _fetch_all(run: Script) -> list[list[RecordBatch]]:
    """Every batch from the log start, one list per Fetch (a Fetch answers from one segment)."""
    fetches, offset = [], 0
    while True:
        answer = run("fetch", FETCH, 12, FetchRequest(
            replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 22, isolation_level=0, session_id=0, session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=offset, log_start_offset=-1, partition_max_bytes=1 << 22,
                current_leader_epoch=-1)])], forgotten_topics_data=[], rack_id="")).body.responses[0].partitions[0]
        assert part_ok(answer), answer
        batches = decode_batches(answer.records or b"", allow_partial_tail=True)
        if not batches:
            return fetches
        fetches.append(batches)
        offset = batches[-1].last_offset + 1
        if offset >= answer.high_watermark:
            return fetches


def part_ok(partition) -> bool:
    return partition.error_code == 0


def _wait_for_cleaning(run: Script, data: Path) -> list[list[RecordBatch]]:
    """Wait until the broker's cleaner-offset-checkpoint says the log is clean up to its active segment (written
    after the swap: a Fetch during the swap may see old and new segments at once), then read the log."""
    folder, checkpoint = data / f"{TOPIC}-0", data / "cleaner-offset-checkpoint"
    deadline = time.monotonic() + 120
    while True:
        active = max(int(p.name.split(".")[0]) for p in folder.glob("*.log"))
        lines = checkpoint.read_text().splitlines() if checkpoint.exists() else []
        if f"{TOPIC} 0 {active}" in lines:
            return _fetch_all(run)
        assert time.monotonic() < deadline, f"no cleaning at {run.wire.address}: {lines}, active segment {active}"
        time.sleep(0.1)


def _shape(fetches: list[list[RecordBatch]], t_alter: int, side_start: int) -> list[list[dict]]:
    """The batches as comparable fields: producer ids by order of appearance; a delete horizon as 'set', after it
    was checked to be the cleaning's time (after the alter, before now) plus delete.retention.ms (0); a marker's
    timestamps aside; the idempotent producer's timestamps (this side's time) from ``side_start``."""
    pids: dict[int, int] = {}
    now = int(time.time() * 1000)
    shaped = []
    for batches in fetches:
        row = []
        for b in batches:
            horizon = None
            if b.has_delete_horizon:
                assert t_alter <= b.base_timestamp <= now, (b.base_timestamp, t_alter, now)
                horizon = "set"
            local = b.producer_id >= 0 and not b.is_transactional
            row.append({
                "base_offset": b.base_offset, "last_offset_delta": b.last_offset_delta, "epoch": b.partition_leader_epoch,
                "attributes": b.attributes, "producer": None if b.producer_id < 0 else pids.setdefault(b.producer_id, len(pids)),
                # a marker carries the time the coordinator wrote it
                "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
                "max_timestamp": "marker time" if b.is_control else _since(b.max_timestamp, side_start, local),
                "base_timestamp": horizon or ("marker time" if b.is_control else _since(b.base_timestamp, side_start, local)),
                "records": [(r.offset_delta, _record_time(b, r.timestamp_delta, horizon is not None, side_start, local),
                             r.key, r.value, [(h.key, h.value) for h in r.headers]) for r in b.records],
            })
        shaped.append(row)
    return shaped


def _record_time(batch: RecordBatch, delta: int, horizon: bool, side_start: int, local: bool) -> int | str:
    """A record's timestamp delta, or with a horizon (the base) its own timestamp, comparably."""
    if batch.is_control:
        return "marker time"
    return _since(delta + batch.base_timestamp, side_start, local) if horizon else delta


def _since(timestamp: int, start: int, local: bool) -> int | str:
    return f"start + {timestamp - start}" if local and timestamp >= 0 else timestamp


def _list_offsets(run: Script) -> list[tuple[int, int]]:
    found = []
    for timestamp in (-2, -1, -3):
        answer = run("list offsets", LIST_OFFSETS, 8, ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])]))
        partition = answer.body.topics[0].partitions[0]
        found.append((partition.offset, partition.timestamp))
    return found


def _files(data: Path) -> dict[str, object]:
    folder = data / f"{TOPIC}-0"
    checkpoint = (data / "cleaner-offset-checkpoint").read_text().splitlines()
    return {
        "segments": sorted(p.name for p in folder.iterdir() if p.suffix in (".log", ".index", ".timeindex", ".txnindex")),
        "checkpoint": [line for line in checkpoint[2:] if line.startswith(TOPIC + " ")],
    }


def _run_side(address: tuple[str, int], data: Path, t0: int) -> dict[str, object]:
    """Four stages, each written with small segments then compacted: the first with everything; the second after
    the producers expired (their last batches may go); the third and fourth move the aborted transaction's marker
    to a horizon, then out."""
    run = _admin(address)
    side: dict[str, int] = {}  # when this side's idempotent producer wrote (its batches carry that time)
    seen: dict[str, object] = {}
    try:
        for stage, write in enumerate([_stage_one, _filler(25, 2), _filler(10, 3), _filler(10, 4)], start=1):
            if stage > 1:
                _alter(run, SMALL_SEGMENTS)
            write(run, t0, side)
            if stage == 2:
                _wait_for_expired_producers(run)
            t_alter = int(time.time() * 1000)
            _alter(run, COMPACTED)
            cleaned = _wait_for_cleaning(run, data)
            seen |= {f"stage {stage}": _shape(cleaned, t_alter, side["start"]), f"stage {stage} offsets": _list_offsets(run),
                     f"stage {stage} files": _files(data)}
        return seen
    finally:
        run.close()


def _difference(key: str, kafka: object, shim: object) -> str:
    """The first batch (or value) that differs, whole, from both brokers."""
    if isinstance(kafka, list) and isinstance(shim, list) and kafka and isinstance(kafka[0], list):
        flat_k, flat_s = [b for f in kafka for b in f], [b for f in shim for b in f]
        for at, (k, s) in enumerate(zip(flat_k, flat_s, strict=False)):
            if k != s:
                return f"{key}: batch {at} differs:\n  kafka {k}\n  shim  {s}"
        if len(flat_k) != len(flat_s):
            return f"{key}: {len(flat_k)} batches at Kafka, {len(flat_s)} at kafka-shim"
        return f"{key}: same batches, split differently over fetches (segments): {[len(f) for f in kafka]} vs {[len(f) for f in shim]}"
    return f"{key}: kafka {kafka}\n  shim  {shim}"


def test_compacted_batches_match_kafkas(kafka: RealKafka, shim: tuple[tuple[str, int], Path]) -> None:
    # Record times an hour ahead (accepted: message.timestamp.after.max.ms is unbounded), so that the largest
    # timestamp (ListOffsets MAX_TIMESTAMP) is a record's, not a marker's wall-clock time.
    t0 = int(time.time() * 1000) + 3_600_000
    expected = _run_side(kafka.sasl, kafka.dir / "data", t0)
    got = _run_side(shim[0], shim[1], t0)
    for key in expected:
        assert got[key] == expected[key], _difference(key, expected[key], got[key])
    # What the comparison is about, as Kafka did it: stage one drops superseded, keyless and aborted records, keeps
    # the tombstone with a horizon and the producers' last batches as empty headers; stage two drops the tombstone
    # and those empty batches (the producers expired); the abort marker gets a horizon at stage three (no batch of
    # its transaction is left) and goes at stage four; the commit marker stays with its transaction's record.
    def batches(stage: int) -> list[dict]:
        return [b for fetch in expected[f"stage {stage}"] for b in fetch]

    def keys(stage: int) -> set:
        return {r[2] for b in batches(stage) for r in b["records"] if not b["attributes"] & 0x20}

    empty = [[b["base_offset"] for b in batches(stage) if not b["records"]] for stage in (1, 2)]
    markers = [[(b["base_offset"], b["base_timestamp"] == "set") for b in batches(stage) if b["attributes"] & 0x20]
               for stage in (1, 2, 3, 4)]
    assert b"b" in keys(1) and b"b" not in keys(2) and None not in keys(1)
    assert not any(b"aborted" in (r[3] or b"") for b in batches(1) for r in b["records"])
    assert len(empty[0]) == 2 and empty[1] == []
    assert [len(m) for m in markers] == [2, 2, 2, 1] and markers[2][0][1] and not markers[1][0][1]

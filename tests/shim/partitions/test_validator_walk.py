"""Batches Kafka cannot walk, without a socket: which check refuses them, with which code and message, and whether
the refusal is the partition's or the whole request's (validator.RequestFailed). The same cases are compared with
Kafka 3.9 over the wire in tests/differential/test_malformed_batches.py."""

from __future__ import annotations

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.partitions.append import append_records
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.validator import (
    RequestFailed,
    check_request,
    first_batch_transactional,
    transactional_producers,
)
from tests.support.malformed import (
    malformed_batches,
    malformed_message_sets,
    malformed_transactional_batches,
    transactional_batch,
)

CASES = malformed_batches()
SETS = malformed_message_sets()


def _failed(call, *args) -> tuple[ErrorCode, str | None]:
    with pytest.raises(RequestFailed) as raised:
        call(*args)
    return raised.value.refusal.error, raised.value.refusal.message


@pytest.mark.parametrize(("case", "message"), [
    ("garbage", "Invalid magic found in record: 55"),
    ("negative-magic", "Invalid magic found in record: -1"),
    ("first-17-bytes-wrong-magic", "Invalid magic found in record: 3"),
    ("batch-length--1", "Record size -1 is less than the minimum record overhead (14)"),
    ("batch-length-13", "Record size 13 is less than the minimum record overhead (14)"),
    ("first-12-bytes-tiny-length", "Record size 13 is less than the minimum record overhead (14)"),
])
def test_a_first_batch_header_kafka_refuses_fails_the_request_with_its_text(case: str, message: str) -> None:
    assert _failed(first_batch_transactional, CASES[case]) == (ErrorCode.CORRUPT_MESSAGE, message)


@pytest.mark.parametrize("case", ["absurd-batch-length", "batch-length-2^31-12", "batch-length-2^31-11"])
def test_a_size_that_overflows_fails_the_request_without_a_message(case: str) -> None:
    assert _failed(first_batch_transactional, CASES[case]) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)


def test_the_first_whole_batch_alone_is_read_for_the_transactional_bit() -> None:
    assert first_batch_transactional(CASES["batch-length-2^31-13"]) is False  # fits an int: not whole, not read
    assert first_batch_transactional(CASES["first-17-bytes"]) is False
    assert first_batch_transactional(CASES["then-garbage"]) is False  # the second batch is not read here
    assert first_batch_transactional(CASES["transactional-batch-length-14-cut"]) is True  # short, but whole
    assert first_batch_transactional(transactional_batch()) is True


def test_validate_records_refuses_a_broken_second_batch_in_its_partition_but_fails_on_an_overflow() -> None:
    refused = check_request(9, CASES["then-garbage"])
    assert refused is not None and (refused.error, refused.message) == (ErrorCode.CORRUPT_MESSAGE, None)
    assert _failed(check_request, 9, CASES["then-absurd-batch-length"]) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)


def test_an_unknown_codec_fails_the_request_below_v7_and_the_partition_from_v7(parts: Partitions) -> None:
    assert _failed(check_request, 6, CASES["unknown-codec"]) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert check_request(7, CASES["unknown-codec"]) is None
    result = append_records(parts, "t", 0, CASES["unknown-codec"])
    assert (result.error, result.log_start_offset, result.error_message) == (ErrorCode.UNKNOWN_SERVER_ERROR, 0, None)


@pytest.mark.parametrize(("records", "expected"), [
    (CASES["batch-length-14-cut"], (ErrorCode.UNKNOWN_SERVER_ERROR, None)),  # no producer id to read
    (CASES["batch-length-38-cut"], (ErrorCode.UNKNOWN_SERVER_ERROR, None)),
    (SETS["then-garbage"], (ErrorCode.CORRUPT_MESSAGE, "Invalid magic found in record: 55")),  # v0-2: every batch
    (malformed_transactional_batches()["transactional-batch-length-44-cut"], (ErrorCode.UNKNOWN_SERVER_ERROR, None)),
], ids=["batch-length-14-cut", "batch-length-38-cut", "then-garbage", "transactional-batch-length-44-cut"])  # the bytes hold clock times
def test_what_the_producer_id_walk_cannot_read_fails_the_request(records: bytes, expected: tuple) -> None:
    assert _failed(transactional_producers, records) == expected


def test_the_producer_id_walk_reads_what_it_can() -> None:
    assert transactional_producers(CASES["batch-length-39-cut"]) == set()  # the producer id is there (-1)
    assert transactional_producers(malformed_transactional_batches()["transactional-batch-length-45-cut"]) == {(5, 0)}


@pytest.fixture
def parts() -> Partitions:
    partitions = Partitions(ClusterState(cluster_id="c", node_id=1), LogManager(None), {}, None)
    partitions.load()
    partitions.create_topic("t", 1)
    return partitions


@pytest.mark.parametrize(("case", "error", "log_start"), [
    ("batch-length-39-cut", ErrorCode.CORRUPT_MESSAGE, -1),  # shorter than a header: its CRC cannot hold
    ("batch-length-48-cut-base-offset-5", ErrorCode.INVALID_RECORD, 0),  # the base offset is checked first
])
def test_short_batches_in_the_log(parts: Partitions, case: str, error: ErrorCode, log_start: int) -> None:
    result = append_records(parts, "t", 0, CASES[case])
    assert (result.error, result.log_start_offset, result.error_message) == (error, log_start, None)


@pytest.mark.parametrize("case", ["v1-size-14", "v1-size-21", "v0-value-cut", "v0-key-too-long", "v1-gzip-value-too-long"])
def test_a_legacy_message_whose_key_or_value_does_not_fit_is_an_unknown_server_error(parts: Partitions, case: str) -> None:
    result = append_records(parts, "t", 0, SETS[case])
    assert (result.error, result.log_start_offset) == (ErrorCode.UNKNOWN_SERVER_ERROR, 0)
    assert parts.get("t", 0).log.log_end_offset == 0

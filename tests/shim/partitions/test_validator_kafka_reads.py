"""The codes the validator answers for records Kafka reads in particular ways, on each of its paths (the fast scan
for default topics, the whole records for compacted ones): the same as tests/differential/test_malformed_batches.py
compares with Kafka 3.9 on the default path."""

from __future__ import annotations

import time

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.partitions.append import AppendSettings
from kafka_shim.shim.partitions.validator import Refusal, validate
from tests.support.malformed import compressed_kept_batches

CASES = compressed_kept_batches()


@pytest.mark.parametrize("compacted", [False, True])
@pytest.mark.parametrize(("case", "code"), [
    ("uncompressed-overlong-length-varint", ErrorCode.UNKNOWN_SERVER_ERROR),  # Kafka's IllegalArgumentException
    ("overlong-length-varint", ErrorCode.INVALID_RECORD),  # the stream iterator turns it into an InvalidRecordException
    ("offsets-0-2-4", ErrorCode.UNKNOWN_SERVER_ERROR),  # partially read records cannot be rebuilt
    ("length-too-large", ErrorCode.NONE),  # lengths are not checked when read partially
    ("uncompressed-length-too-large", ErrorCode.INVALID_RECORD),
])
def test_code_on_each_path(case: str, code: ErrorCode, compacted: bool) -> None:
    answer = validate(CASES[case], AppendSettings(compacted=compacted), int(time.time() * 1000), "t-0")
    assert (answer.error if isinstance(answer, Refusal) else ErrorCode.NONE) == code

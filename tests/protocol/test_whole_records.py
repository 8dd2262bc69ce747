"""Records read whole as Kafka's DefaultRecord.readFrom reads them, from an uncompressed batch's buffer and from a
decompressed stream (tests/differential/test_malformed_batches.py compares the answers with Kafka 3.9)."""

from __future__ import annotations

import pytest

from kafka_shim.protocol.records.whole_records import (
    IllegalLength,
    WholeRecord,
    WholeRecordError,
    read_stream,
    read_uncompressed,
)
from tests.support.malformed import raw_record, varint, whole_read_records

READERS = [read_uncompressed, read_stream]


@pytest.mark.parametrize("read", READERS)
def test_what_a_strict_decoder_refuses_kafka_reads(read) -> None:
    cases = whole_read_records()
    middle = {name: read(data, 3)[1] for name, data in cases.items() if name != "header-count-beyond-the-record"}
    assert middle["key-size-minus-5"].key is None
    assert middle["header-value-size-minus-3"].headers == ((b"h", None),)
    assert middle["header-key-not-utf8"].headers == ((b"\xff\xfeh", b"v"),)  # bytes: decoded only when rebuilt
    assert middle["offset-delta-fifth-byte-high-bits"] == WholeRecord(0, 0, 1, b"k", b"v", ())
    assert middle["timestamp-delta-tenth-byte-high-bits"] == WholeRecord(0, 0, 1, b"k", b"v", ())


def test_a_header_count_is_judged_against_the_batch_or_the_record() -> None:
    # Uncompressed: the count fits what is left of the batch, so the next record's bytes are read as headers, until
    # they run out. From a stream: the record's own buffer is too small for the count.
    data = whole_read_records()["header-count-beyond-the-record"]
    with pytest.raises(WholeRecordError, match=r"^Found invalid record structure$"):
        read_uncompressed(data, 3)
    with pytest.raises(WholeRecordError, match=r"^Found invalid number of record headers. 2 is larger than the remaining size of the buffer$"):
        read_stream(data, 3)


@pytest.mark.parametrize(("read", "data", "count", "message"), [
    (read_uncompressed, raw_record(0), 2, "Incorrect declared batch size, premature EOF reached"),
    (read_stream, raw_record(0), 2, "Incorrect declared batch size, premature EOF reached"),
    (read_uncompressed, raw_record(0, length=200), 1,
     "Invalid record size: expected 200 bytes in record payload, but instead the buffer has only 8 remaining bytes."),
    (read_stream, raw_record(0, length=200), 1,
     "Invalid record size: expected 200 bytes in record payload, but the record payload reached EOF."),
    (read_uncompressed, raw_record(0, length=-3), 1, "Invalid record size: expected to read -3 bytes in record payload, but instead read 8"),
    (read_stream, raw_record(0, length=-3), 1, "Incorrect declared batch size, premature EOF reached"),
    (read_uncompressed, raw_record(0) + b"\x00", 1, "Incorrect declared batch size, records still remaining in file"),
    (read_stream, raw_record(0) + b"\x00", 1, "Incorrect declared batch size, records still remaining in file"),
    (read_uncompressed, raw_record(0, headers=varint(-1)), 1, "Found invalid number of record headers -1"),
    (read_stream, raw_record(0, headers=varint(1) + varint(-2)), 1, "Invalid negative header key size -2"),
    (read_uncompressed, raw_record(0, key=b"kk", key_size=40), 1, "Found invalid record structure"),
    (read_stream, varint(12) + b"\x00" + b"\xff" * 11, 1, "Found invalid record structure"),  # a varlong too long
])
def test_what_kafka_refuses(read, data: bytes, count: int, message: str) -> None:
    with pytest.raises(WholeRecordError) as refused:
        read(data, count)
    assert str(refused.value) == message


def test_an_endless_length_varint_of_an_uncompressed_batch_escapes_as_itself() -> None:
    with pytest.raises(IllegalLength):
        read_uncompressed(b"\xff" * 5 + raw_record(0)[1:], 1)
    with pytest.raises(WholeRecordError, match="premature EOF"):
        read_stream(b"\xff" * 5 + raw_record(0)[1:], 1)

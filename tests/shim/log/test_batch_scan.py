"""The cleaner's scan of a stored batch reads the same offsets, keys and tombstones as the full decoder, and gives
up (for the decoder to report) on anything it cannot read cleanly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_shim.protocol.records import Compression, build_batch, decode_batch, encode_batch
from kafka_shim.shim.log.batch_scan import StoredBatch, scan_records

nullable = st.none() | st.binary(max_size=300)
records = st.lists(st.tuples(nullable, nullable, st.lists(st.tuples(st.text(max_size=5), nullable), max_size=2),
                             st.integers(0, 2**41)), min_size=1, max_size=40)


@given(records, st.booleans(), st.integers(0, 2**40))
def test_the_scan_reads_what_the_decoder_reads(items, transactional, base_offset) -> None:
    raw = encode_batch(build_batch(items, base_offset=base_offset, transactional=transactional,
                                   producer_id=7 if transactional else -1, producer_epoch=0 if transactional else -1,
                                   base_sequence=0 if transactional else -1))
    header, decoded = StoredBatch(raw), decode_batch(raw)
    assert (header.base_offset, header.last_offset, header.is_transactional, header.count) == (
        decoded.base_offset, decoded.last_offset, decoded.is_transactional, len(decoded.records))
    assert scan_records(raw, header) == [(r.offset_delta, r.key, r.value is None) for r in decoded.records]


def test_compressed_control_and_cut_batches_go_to_the_decoder() -> None:
    raw = encode_batch(build_batch([(b"k", b"v", [], 1)], compression=Compression.GZIP))
    assert scan_records(raw, StoredBatch(raw)) is None
    control = encode_batch(build_batch([(b"\x00\x00\x00\x01", b"\x00" * 6, [], 1)], control=True, transactional=True,
                                       producer_id=1, producer_epoch=0))
    assert StoredBatch(control).is_control and scan_records(control, StoredBatch(control)) is None
    whole = encode_batch(build_batch([(b"key", b"value", [], 1), (b"k2", None, [], 2)]))
    for cut in range(61, len(whole)):
        assert scan_records(whole[:cut], StoredBatch(whole)) is None
    longer = bytearray(whole)
    longer[57:61] = (1).to_bytes(4, "big")  # a count below the records there: bytes left over
    assert scan_records(bytes(longer), StoredBatch(bytes(longer))) is None

"""Reading traces: the schema version check, damaged files, and rows whose bytes do not decode."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import MetadataRequest
from kafka_shim.traces.format import (
    SCHEMA,
    SCHEMA_VERSION,
    VERSION_KEY,
    NewerTraceVersion,
    Problem,
    TraceError,
    file_metadata,
    iter_requests,
    read_trace,
)


def _row(correlation_id: int, request: bytes | None) -> dict:
    return {"kind": "request", "time": time.time_ns() // 1000, "source": "capture", "api_key": ApiKey.METADATA,
            "api_version": 12, "correlation_id": correlation_id, "request": request, "response": b"\x00\x00", "decisions": []}


def _write(path: Path, rows: list[dict], version: int = SCHEMA_VERSION) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = file_metadata("capture") | {VERSION_KEY: str(version).encode()}
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA.with_metadata(metadata)), path)
    return path


def _metadata_frame(correlation_id: int) -> bytes:
    return encode_request(ApiKey.METADATA, 12, correlation_id, MetadataRequest(topics=[]), client_id="t")[4:]


def test_a_newer_schema_version_is_refused_with_what_to_do(tmp_path: Path) -> None:
    newer = _write(tmp_path / "day=2026-01-01" / "part-1.parquet", [_row(1, None)], version=SCHEMA_VERSION + 1)
    with pytest.raises(NewerTraceVersion) as caught:
        read_trace(tmp_path)
    message = str(caught.value)
    assert str(newer) in message
    assert f"trace schema version {SCHEMA_VERSION + 1} is newer than this kafka-shim reads (version {SCHEMA_VERSION}" in message
    assert "upgrade kafka-shim" in message


def test_a_truncated_file_is_reported_not_a_crash(tmp_path: Path) -> None:
    good = _write(tmp_path / "day=2026-01-01" / "part-1.parquet", [_row(1, _metadata_frame(1))])
    bad = _write(tmp_path / "day=2026-01-02" / "part-2.parquet", [_row(2, _metadata_frame(2))])
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=rf"{bad}: not a readable Parquet file"):
        read_trace(tmp_path)
    problems: list[Problem] = []
    table = read_trace(tmp_path, problems)
    assert table["correlation_id"].to_pylist() == [1]
    assert table["day"].to_pylist() == ["2026-01-01"]
    assert [p.path for p in problems] == [bad] and "not a readable Parquet file" in problems[0].error
    assert good.exists()


def test_a_parquet_file_that_is_not_a_trace_is_named(tmp_path: Path) -> None:
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1]}), other)
    with pytest.raises(TraceError, match=r"not a kafka-shim trace file"):
        read_trace(other)


def test_a_missing_path_is_an_error_not_an_empty_trace(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file or directory"):
        read_trace(tmp_path / "nothing")


def test_rows_whose_bytes_do_not_decode_say_why(tmp_path: Path) -> None:
    path = _write(tmp_path / "part-1.parquet", [_row(1, _metadata_frame(1)), _row(2, b"\x00\x03\x00\x0c\x00")])
    first, second = iter_requests(path)
    assert first.request_body == MetadataRequest(topics=[]) and first.decode_error is not None  # the fake response
    assert second.request_body is None and second.decode_error.startswith("request: ")
    assert "day" not in first.row


def test_pyarrow_reads_a_day_partitioned_directory_as_one_dataset(tmp_path: Path) -> None:
    for day, cid in (("2026-01-01", 1), ("2026-01-02", 2), ("2026-01-03", 3)):
        _write(tmp_path / f"day={day}" / f"part-{cid}.parquet", [_row(cid, _metadata_frame(cid))])
    (tmp_path / "day=2026-01-03" / ".part-4.parquet.inprogress").write_bytes(b"PAR1 half written")
    dataset = ds.dataset(tmp_path, format="parquet", partitioning="hive")
    assert sorted(dataset.to_table(columns=["correlation_id"])["correlation_id"].to_pylist()) == [1, 2, 3]
    table = read_trace(tmp_path)
    assert table["correlation_id"].to_pylist() == [1, 2, 3]
    assert table["day"].to_pylist() == ["2026-01-01", "2026-01-02", "2026-01-03"]

"""A damaged copy of a trace: its files, plus a truncated Parquet file and a row of an API version Kafka 3.9 lacks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_shim.traces.format import SCHEMA, file_metadata, read_trace, trace_files


def damaged_copy(trace: Path, target: Path) -> Path:
    shutil.copytree(trace, target)
    first = trace_files(target)[0]
    data = first.read_bytes()
    (first.parent / "part-99999999T000000.000000Z-00098.parquet").write_bytes(data[: len(data) // 2])
    table = read_trace(trace).drop_columns(["day"])
    metadata_row = table.filter(pc.equal(table.column("api_key"), 3)).slice(0, 1)
    versions = pa.array([99], pa.int16())
    odd = metadata_row.set_column(metadata_row.schema.get_field_index("api_version"), SCHEMA.field("api_version"), versions)
    pq.write_table(odd.cast(SCHEMA).replace_schema_metadata(file_metadata("capture")),
                   first.parent / "part-99999999T000000.000000Z-00099.parquet")
    return target

"""The audit's Parquet results as another tool reads them: the same rows back, and the statistics a reader uses to
skip row groups by time or request index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kafka_shim.traces.audit.results import parquet_options, write_parquet


def test_a_reader_filtering_by_time_skips_row_groups_outside_it(tmp_path):
    start = datetime(2026, 11, 18, 11, 0, tzinfo=UTC)
    n = 3_000
    table = pa.table({
        "request_index": pa.array(range(n), pa.int64()),
        "time": pa.array([start + timedelta(seconds=i) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "principal": pa.array([f"User:app-{i % 7}" for i in range(n)]),
    })
    path = tmp_path / "decisions.parquet"
    write_parquet(table, path)
    parquet = pq.ParquetFile(path)
    assert parquet.read().equals(table)
    time_stats = parquet.metadata.row_group(0).column(1).statistics
    assert time_stats.has_min_max
    assert (time_stats.min, time_stats.max) == (start, start + timedelta(seconds=n - 1))

    # the engines write a table in row groups of the writer's size: with groups of 1,000 requests, a filter on the
    # last minutes reads only the last one
    grouped = tmp_path / "groups.parquet"
    pq.write_table(table, grouped, row_group_size=1_000, **parquet_options(table.schema))
    fragment = next(ds.dataset(grouped).get_fragments())
    late = ds.field("time") >= pa.scalar(start + timedelta(seconds=2_500), pa.timestamp("us", tz="UTC"))
    kept = fragment.split_by_row_group(late)
    assert [g.row_groups[0].id for g in kept] == [2]
    assert ds.dataset(grouped).to_table(filter=late).num_rows == 500

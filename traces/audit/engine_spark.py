"""The audit on Apache Spark (``--engine spark``, the default): Spark spreads the trace's row groups over its
executors, and each is audited whole inside one (``mapInArrow``) by the same code as the arrow engine
(``engine_arrow.audit_unit``): decoded and exploded into questions, its distinct actions decided by one Authorizer
per Python worker (built once from a broadcast of the ACL sets, answers memoised), replayed per request with the
flips. The executor writes the unit's decisions and flips itself, as Parquet and CSV parts under DIR, and sends the
driver only what is merged across units (counters, the unit's distinct actions, broker differences, problems,
release differences): nothing is shuffled and the big tables never pass through the JVM.

DIR must be a directory every executor can write to: on one machine any local path, on a cluster a shared mount
(as for Spark's own file writer, whose parts land on each executor's disk otherwise). A retried or speculative
task writes the same part again under a hidden name and renames it over the first, so a part is whole and written
once. Same tables as ``engine_arrow`` (a test compares them).
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from kafka_shim.authorizer import AclBinding
from kafka_shim.traces.audit import pipeline
from kafka_shim.traces.audit.decide import AuthorizerSettings, Decider
from kafka_shim.traces.audit.engine_arrow import ArrowResults, Merged, UnitResult, audit_unit, count
from kafka_shim.traces.audit.results import write_csv, write_parquet, write_table
from kafka_shim.traces.audit.tables import DECISIONS, FLIPS

# What each unit sends back to the driver: one row, the tables as Arrow IPC streams.
UNIT_SUMMARY = pa.schema([pa.field("counts", pa.string()), pa.field("broker_rows", pa.int64()),
                          pa.field("actions", pa.binary()), pa.field("broker_diff", pa.binary()),
                          pa.field("problems", pa.binary()), pa.field("release_diff", pa.binary())])
_WRITTEN = (("decisions", DECISIONS), ("flips", FLIPS))


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


_DECIDERS: dict[str, tuple[Decider, Decider | None]] = {}


def _deciders(shared: Any, settings: AuthorizerSettings) -> tuple[Decider, Decider | None]:
    """One pair of Deciders per Python worker and broadcast (the authorizer's index is built once, answers memoised)."""
    token, payload, _ = shared.value
    found = _DECIDERS.get(token)
    if found is None:
        _DECIDERS.clear()
        acls_a, acls_b = _unpickled(payload)
        found = _DECIDERS[token] = (Decider(acls_a, settings), Decider(acls_b, settings) if acls_b is not None else None)
    return found


def _unpickled(payload: bytes) -> Any:
    """``pickle.loads`` with the cyclic GC paused: the ~10 objects per ACL it makes would set off collections that
    rescan them again and again (100k ACLs: 0.79 -> 0.45 s, on every worker before its first row group)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(payload)
    finally:
        if paused:
            gc.enable()


def _ipc(table: pa.Table | None) -> bytes | None:
    if table is None:
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes | None) -> pa.Table | None:
    return None if data is None else pa.ipc.open_stream(data).read_all()


def part_name(unit: pipeline.Unit) -> str:
    """A unit's part file name: the same for every attempt at it, so a retry replaces rather than adds."""
    return f"part-{unit.file_no:05d}-{unit.row_group:06d}"


def write_parts(result: UnitResult, unit: pipeline.Unit, out: Path) -> None:
    """The unit's decisions and flips into DIR/<table>/ and DIR/csv/<table>/, each whole or not at all."""
    for name, table in ((name, getattr(result, name)) for name, _ in _WRITTEN):
        if not table.num_rows:
            continue
        for directory, suffix, write in ((out / name, ".parquet", write_parquet), (out / "csv" / name, ".csv", write_csv)):
            directory.mkdir(parents=True, exist_ok=True)
            final = directory / f"{part_name(unit)}{suffix}"
            hidden = directory / f".{final.name}.{uuid.uuid4().hex}.tmp"  # readers skip dot files
            write(table, hidden)
            os.replace(hidden, final)


def _audit_units(shared: Any, settings: AuthorizerSettings, out: str,
                 compare_release: str | None) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Each row group audited whole inside the executor, its parts written there; one summary row sent back."""

    def audit(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for position in batch.column(0).to_pylist():
                unit = shared.value[2][position]
                a, b = _deciders(shared, settings)
                result = audit_unit(unit, a, b, compare_release)
                write_parts(result, unit, Path(out))
                yield pa.RecordBatch.from_pylist([{
                    "counts": json.dumps(count(result.decisions, result.flips)), "broker_rows": result.broker_rows,
                    "actions": _ipc(result.actions), "broker_diff": _ipc(result.broker_diff),
                    "problems": _ipc(result.problems), "release_diff": _ipc(result.release_diff)}], schema=UNIT_SUMMARY)
    return audit


def _audit_on_spark(spark: Any, units: list[pipeline.Unit], merged: Merged, token: str, payload: bytes,
                    settings: AuthorizerSettings, out: Path, compare_release: str | None,
                    step: Callable[[str, int, int], None]) -> None:
    # The units travel in the broadcast and the tasks get their positions from spark.range: a DataFrame made from
    # Python rows would start Python workers of its own (another daemon and its workers) just to read them.
    parallelism = max(2, spark.sparkContext.defaultParallelism)
    positions = spark.range(0, len(units), numPartitions=max(1, min(len(units), parallelism * 4)))
    shared = spark.sparkContext.broadcast((token, payload, units))
    step("audit", 0, len(units))
    summaries = positions.mapInArrow(_audit_units(shared, settings, str(out.resolve()), compare_release),
                                     _spark_schema(UNIT_SUMMARY)).toArrow()
    for row in summaries.to_pylist():
        result = UnitResult(DECISIONS.empty_table(), FLIPS.empty_table(), _from_ipc(row["actions"]),
                            _from_ipc(row["broker_diff"]), _from_ipc(row["problems"]), row["broker_rows"],
                            _from_ipc(row["release_diff"]))
        merged.add(result, json.loads(row["counts"]))
    step("audit", len(units), len(units))


def run(trace: str | Path, acls_a: list[AclBinding], acls_b: list[AclBinding] | None, settings: AuthorizerSettings, *,
        out: Path, master: str = "local[2]", progress: Callable[[str, int, int], None] | None = None, spark: Any = None,
        compare_release: str | None = None) -> ArrowResults:
    """Row groups audited whole in the executors (each request's rows live in one row group), decisions and flips
    written there under ``out``; the driver merges what the units send back.

    ``spark``: a running SparkSession, or a ``SparkStart`` (its ``finish`` is called here), or None for a SparkStart
    on ``master``.
    """
    from kafka_shim.traces.audit.spark_session import SparkStart

    step = progress or (lambda stage, done, total: None)
    step("spark", 0, 1)
    starter = SparkStart(master) if spark is None else spark if isinstance(spark, SparkStart) else None
    try:
        # while the JVM starts: the plan, and the ACL sets pickled once for the broadcast (a second pickling of
        # bytes by Spark is a copy)
        units, file_problems = pipeline.plan_units(trace)
        payload = pickle.dumps((list(acls_a), None if acls_b is None else list(acls_b)), pickle.HIGHEST_PROTOCOL)
        session = starter.session() if starter is not None else spark
        step("spark", 1, 1)
        merged = Merged(file_problems)
        if units:
            _audit_on_spark(session, units, merged, uuid.uuid4().hex, payload, settings, out, compare_release, step)
    finally:
        if starter is not None:
            starter.finish()
    for name, schema in _WRITTEN:  # a table no unit had rows for is still there, empty
        if not list((out / name).glob("part-*.parquet")):
            write_table(schema.empty_table(), out, name)
    return merged.results(DECISIONS.empty_table(), FLIPS.empty_table())

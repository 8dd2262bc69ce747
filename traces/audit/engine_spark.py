"""The audit on Apache Spark (``--engine spark``, the default): each row group of the trace is audited whole inside
an executor (``mapInArrow``): decoded and exploded into questions, its distinct actions decided in batches by one
Authorizer per Python worker (built once from a broadcast of the ACL sets, answers memoised), replayed per request
(``decide.flow``) with the flips; a request's rows never leave their row group, so nothing is shuffled but the
actions, which Spark aggregates. Spark writes the tables. Same tables as ``engine_arrow`` (a test compares them).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_shim.authorizer import AclBinding
from kafka_shim.traces.audit import pipeline, questions
from kafka_shim.traces.audit.decide import AuthorizerSettings, Decider
from kafka_shim.traces.audit.releases import API_KEYS
from kafka_shim.traces.audit.results import AuditResults, write_table
from kafka_shim.traces.audit.tables import ACTIONS, BROKER_DIFF, DECISIONS, FLIPS, PROBLEMS

KEYS = ["principal", "host", "operation", "resource_type", "name_key", "kind"]
ANSWER_COLUMNS = ["allowed_a", "rule_a", "acl_a", "allowed_b", "rule_b", "acl_b"]


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _broker(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for row in batch.to_pylist():
            yield pipeline.broker_unit(pipeline.Unit(**row))


DECIDED = pa.schema([pa.field(k, pa.string()) for k in KEYS] + [
    pa.field("allowed_a", pa.bool_()), pa.field("rule_a", pa.string()), pa.field("acl_a", pa.string()),
    pa.field("allowed_b", pa.bool_()), pa.field("rule_b", pa.string()), pa.field("acl_b", pa.string())])


@dataclass
class SparkResults(AuditResults):
    frames: dict[str, Any] | None = None
    counts: dict[str, Any] | None = None
    release_input: pa.Table | None = None

    def write_spark(self, out: Path) -> None:
        for name in ("decisions", "flips", "broker_diff"):
            frame = self.frames[name]
            frame.write.mode("overwrite").parquet(str(out / name))
            frame.write.mode("overwrite").option("header", "true").csv(str(out / "csv" / name))
        write_table(self.actions, out, "actions")
        write_table(self.problems, out, "problems")

    def summary(self) -> dict[str, Any]:
        from kafka_shim.traces.audit.results import problem_counts

        c = dict(self.counts or {})
        c.update({"actions": self.actions.num_rows, "broker_decisions": self.broker_rows,
                  "release_differences": self.release_diff.num_rows if self.release_diff is not None else 0,
                  "problems": problem_counts(self.problems)})
        return c


UNIT_OUT = pa.schema([*questions.QUESTIONS, *[DECIDED.field(c) for c in ANSWER_COLUMNS],
                     pa.field("asked_a", pa.bool_()), pa.field("asked_b", pa.bool_()), pa.field("direction", pa.string()),
                     pa.field("severity", pa.string()), pa.field("effect", pa.string())])
_DECIDERS: dict[str, tuple[Decider, Decider | None]] = {}


def _deciders(acls: Any, settings: AuthorizerSettings) -> tuple[Decider, Decider | None]:
    """One pair of Deciders per Python worker and broadcast (the authorizer's index is built once, answers memoised)."""
    token, acls_a, acls_b = acls.value
    found = _DECIDERS.get(token)
    if found is None:
        _DECIDERS.clear()
        found = _DECIDERS[token] = (Decider(acls_a, settings), Decider(acls_b, settings) if acls_b is not None else None)
    return found


def _unit_tables(row: dict, acls: Any, settings: AuthorizerSettings) -> tuple[pa.Table, pa.Table, pa.Table]:
    from kafka_shim.traces.audit.engine_arrow import audit_tables

    unit = pipeline.Unit(**row)
    exploded = pa.Table.from_batches([pipeline.explode_unit(unit)])
    broker = pa.Table.from_batches([pipeline.broker_unit(unit)])
    a, b = _deciders(acls, settings)
    finished, _, diff = audit_tables(exploded, broker, a, b)
    return exploded, finished, diff


def _audit_units(acls: Any, settings: AuthorizerSettings) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Each row group audited whole inside the executor: questions, answers, the broker's flow, flips; the
    requests it could not audit ride along as rows with ``problem`` set."""

    def audit(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for row in batch.to_pylist():
                exploded, finished, _ = _unit_tables(row, acls, settings)
                finished = finished.drop_columns(["asked_a", "asked_b"]) if "asked_a" in finished.column_names else finished
                finished = finished.rename_columns([{"asked_a_": "asked_a", "asked_b_": "asked_b"}.get(n, n)
                                                    for n in finished.column_names])
                yield from finished.select(UNIT_OUT.names).cast(UNIT_OUT).to_batches()
                problems = exploded.filter(pc.is_valid(exploded.column("problem")))
                if problems.num_rows:
                    for f in UNIT_OUT:
                        if f.name not in problems.column_names:
                            problems = problems.append_column(f, pa.nulls(problems.num_rows, f.type))
                    yield from problems.select(UNIT_OUT.names).cast(UNIT_OUT).to_batches()
    return audit


def _unit_broker_diff(acls: Any, settings: AuthorizerSettings) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def diff(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for row in batch.to_pylist():
                if pipeline.broker_unit(pipeline.Unit(**row)).num_rows == 0:
                    continue
                yield from _unit_tables(row, acls, settings)[2].to_batches()
    return diff


def run(trace: str | Path, acls_a: list[AclBinding], acls_b: list[AclBinding] | None, settings: AuthorizerSettings, *,
        master: str = "local[2]", progress: Callable[[str, int, int], None] | None = None, spark: Any = None,
        release_input: bool = True) -> SparkResults:
    """Row groups are audited whole in the executors (each request's rows live in one row group), with one
    Authorizer per worker from a broadcast of the ACL sets; Spark aggregates the actions and writes the tables."""
    from pyspark.sql import functions as F

    from kafka_shim.traces.audit.spark_session import get_spark

    step = progress or (lambda stage, done, total: None)
    step("spark", 0, 1)
    spark = spark or get_spark(master)
    step("spark", 1, 1)
    units, file_problems = pipeline.plan_units(trace)
    parallelism = max(2, spark.sparkContext.defaultParallelism)
    unit_rows = [(u.path, u.file_no, u.row_group, u.first_row) for u in units]
    units_df = spark.createDataFrame(unit_rows, _spark_schema(pipeline.UNIT_SCHEMA)).repartition(
        max(1, min(len(units), parallelism * 4)))
    acls = spark.sparkContext.broadcast((uuid.uuid4().hex, list(acls_a), None if acls_b is None else list(acls_b)))

    step("audit", 0, 1)
    audited = units_df.mapInArrow(_audit_units(acls, settings), _spark_schema(UNIT_OUT)).cache()
    problems = pa.concat_tables([pa.Table.from_pylist(file_problems, schema=PROBLEMS),
                                 audited.where(F.col("problem").isNotNull()).select([f.name for f in PROBLEMS])
                                 .toArrow().cast(PROBLEMS)])
    rows = audited.where(F.col("problem").isNull())
    decisions = rows.select(*[f.name for f in DECISIONS])
    flips = rows.where(F.col("direction").isNotNull()).select(*[f.name for f in FLIPS])
    step("audit", 1, 1)

    step("actions", 0, 1)
    keys = ["principal", "host", "operation", "resource_type", "resource_name", "kind"]
    actions = rows.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("requests"), F.min("time").alias("first_time"), F.max("time").alias("last_time"),
        *[F.first(c, ignorenulls=True).alias(c) for c in ANSWER_COLUMNS],
        F.max(F.col("hard").cast("int")).cast("boolean").alias("hard")).toArrow()
    actions = actions.append_column("name_key", pc.fill_null(actions.column("resource_name"), pipeline.NULL_NAME))
    actions_arrow = pipeline.sort_actions(actions).select([f.name for f in ACTIONS]).cast(ACTIONS)
    step("actions", 1, 1)

    broker_diff = units_df.mapInArrow(_unit_broker_diff(acls, settings), _spark_schema(BROKER_DIFF)).cache()
    broker_count = units_df.mapInArrow(_broker, _spark_schema(questions.BROKER)).count()
    counts_row = decisions.agg(
        F.countDistinct("request_index").alias("requests_audited"), F.count(F.lit(1)).alias("decisions"),
        F.sum((F.col("asked_a") & ~F.coalesce(F.col("allowed_a"), F.lit(True))).cast("int")).alias("denied_a"),
        F.sum(F.col("allowed_a").isNull().cast("int")).alias("unresolved")).collect()[0].asDict()
    flip_counts = flips.agg(F.count(F.lit(1)).alias("flips"),
                            F.sum((F.col("severity") == "hard").cast("int")).alias("flips_hard")).collect()[0].asDict()
    counts = {k: int(v or 0) for k, v in {**counts_row, **flip_counts}.items()}
    counts["broker_differences"] = broker_diff.count()
    # Brought to the driver only for --compare-release: with Produce and Fetch among its APIs, most of a trace
    release = decisions.where(F.col("api_key").isin(list(API_KEYS))).toArrow() if release_input else None
    release = release.cast(DECISIONS) if release is not None and release.num_rows else DECISIONS.empty_table()
    return SparkResults(decisions=DECISIONS.empty_table(), flips=FLIPS.empty_table(), actions=actions_arrow,
                        broker_diff=BROKER_DIFF.empty_table(), problems=problems, broker_rows=broker_count,
                        frames={"decisions": decisions, "flips": flips, "broker_diff": broker_diff}, counts=counts,
                        release_input=release)

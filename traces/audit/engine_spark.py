"""The audit on Apache Spark (``--engine spark``, the default): the trace's row groups are decoded and exploded into
questions inside the executors (``mapInArrow`` over ``pipeline``'s functions), the distinct actions are decided in
batches there too (one Authorizer per partition, built from a broadcast of the ACL sets), and the answers are
joined back, replayed per request (``decide.flow``) and written by Spark. Same tables as ``engine_arrow``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_shim.authorizer import AclBinding
from kafka_shim.traces.audit import pipeline, questions
from kafka_shim.traces.audit.decide import ANSWER, AuthorizerSettings, Decider
from kafka_shim.traces.audit.releases import API_KEYS
from kafka_shim.traces.audit.results import AuditResults, write_table
from kafka_shim.traces.audit.tables import ACTIONS, BROKER_DIFF, DECISIONS, FLIPS, PROBLEMS

KEYS = ["principal", "host", "operation", "resource_type", "name_key", "kind"]
ANSWER_COLUMNS = ["allowed_a", "rule_a", "acl_a", "allowed_b", "rule_b", "acl_b"]


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _explode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for row in batch.to_pylist():
            yield pipeline.explode_unit(pipeline.Unit(**row))


def _broker(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for row in batch.to_pylist():
            yield pipeline.broker_unit(pipeline.Unit(**row))


DECIDED = pa.schema([pa.field(k, pa.string()) for k in KEYS] + [
    pa.field("allowed_a", pa.bool_()), pa.field("rule_a", pa.string()), pa.field("acl_a", pa.string()),
    pa.field("allowed_b", pa.bool_()), pa.field("rule_b", pa.string()), pa.field("acl_b", pa.string())])


def _decide(acls: Any, settings: AuthorizerSettings) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def decide(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        acls_a, acls_b = acls.value
        a = Decider(acls_a, settings)
        b = Decider(acls_b, settings) if acls_b is not None else None
        for batch in batches:
            names = pc.if_else(pc.equal(batch.column("name_key"), pipeline.NULL_NAME), pa.scalar(None, pa.string()),
                               batch.column("name_key"))
            keyed = pa.RecordBatch.from_arrays([*[batch.column(k) for k in KEYS if k != "name_key"], names],
                                               names=[*[k for k in KEYS if k != "name_key"], "resource_name"])
            answer_a = a.answer_batch(keyed)
            answer_b = b.answer_batch(keyed) if b is not None else pa.RecordBatch.from_arrays(
                [pa.nulls(batch.num_rows, f.type) for f in ANSWER], schema=ANSWER)
            yield pa.RecordBatch.from_arrays([*[batch.column(k) for k in KEYS], *answer_a.columns, *answer_b.columns],
                                             schema=DECIDED)
    return decide


def _finisher(what_if: bool) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Per partition (rows of a request together, sorted): ``pipeline.finish``, holding back the last request of
    each batch until the next batch shows it is complete."""

    def finish(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held: pa.Table | None = None
        for batch in batches:
            table = pa.Table.from_batches([batch])
            if held is not None:
                table = pa.concat_tables([held, table])
            if table.num_rows == 0:
                continue
            last = table.column("request_index")[-1]
            complete = table.filter(pc.not_equal(table.column("request_index"), last))
            held = table.filter(pc.equal(table.column("request_index"), last))
            if complete.num_rows:
                yield from pipeline.finish(complete, what_if).to_batches()
        if held is not None and held.num_rows:
            yield from pipeline.finish(held, what_if).to_batches()
    return finish


def _broker_diff(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield from pipeline.broker_differences(pa.Table.from_batches([batch])).to_batches()


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


def run(trace: str | Path, acls_a: list[AclBinding], acls_b: list[AclBinding] | None, settings: AuthorizerSettings, *,
        master: str = "local[2]", progress: Callable[[str, int, int], None] | None = None, spark: Any = None) -> SparkResults:
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

    step("decode", 0, 1)
    exploded = units_df.mapInArrow(_explode, _spark_schema(questions.QUESTIONS)).cache()
    problems = pa.concat_tables([pa.Table.from_pylist(file_problems, schema=PROBLEMS),
                                 exploded.where(F.col("problem").isNotNull()).select([f.name for f in PROBLEMS])
                                 .toArrow().cast(PROBLEMS)])
    asked = exploded.where(F.col("problem").isNull()).withColumn(
        "name_key", F.coalesce(F.col("resource_name"), F.lit(pipeline.NULL_NAME)))
    broker = units_df.mapInArrow(_broker, _spark_schema(questions.BROKER)).withColumn(
        "name_key", F.coalesce(F.col("resource_name"), F.lit(pipeline.NULL_NAME))).cache()
    step("decode", 1, 1)

    actions = asked.groupBy(*KEYS).agg(F.count(F.lit(1)).alias("requests"), F.min("time").alias("first_time"),
                                       F.max("time").alias("last_time"), F.max(F.col("hard").cast("int")).cast("boolean").alias("hard"))
    every = actions.select(*KEYS).union(broker.select(*KEYS)).distinct()
    acls = spark.sparkContext.broadcast((list(acls_a), None if acls_b is None else list(acls_b)))
    step("decide", 0, 1)
    decided = every.repartition(parallelism * 2).mapInArrow(_decide(acls, settings), _spark_schema(DECIDED)).cache()
    actions_arrow = actions.join(decided, KEYS, "left").withColumn(
        "resource_name", F.when(F.col("name_key") == pipeline.NULL_NAME, F.lit(None)).otherwise(F.col("name_key"))).toArrow()
    actions_arrow = pipeline.sort_actions(actions_arrow).select([f.name for f in ACTIONS]).cast(ACTIONS)
    step("decide", 1, 1)

    step("flow", 0, 1)
    joined = asked.join(decided, KEYS, "left").repartition(parallelism * 2, "request_index").sortWithinPartitions(
        "request_index", "seq")
    finished_schema = _finished_schema(joined)
    finished = joined.mapInArrow(_finisher(acls_b is not None), _spark_schema(finished_schema)).cache()
    renamed = finished.drop("asked_a", "asked_b").withColumnRenamed("asked_a_", "asked_a").withColumnRenamed("asked_b_", "asked_b")
    decisions = renamed.select(*[f.name for f in DECISIONS])
    flips = renamed.where(F.col("direction").isNotNull()).select(*[f.name for f in FLIPS])
    step("flow", 1, 1)

    asked_keys = (decisions.where(F.col("asked_a"))
                  .select("request_index", F.when(F.col("kind") == "shortcut", F.lit("authorize")).otherwise(F.col("kind")).alias("kind"),
                          "operation", "resource_type", F.coalesce(F.col("resource_name"), F.lit(pipeline.NULL_NAME)).alias("name_key"))
                  .distinct().withColumn("matched", F.lit(True)))
    broker_joined = (broker.join(decided.select(*KEYS, F.col("allowed_a").alias("audit_allowed"), F.col("rule_a").alias("audit_rule")),
                                 KEYS, "left")
                     .join(asked_keys, ["request_index", "kind", "operation", "resource_type", "name_key"], "left")
                     .withColumn("matched", F.coalesce(F.col("matched"), F.lit(False))))
    broker_diff = broker_joined.mapInArrow(_broker_diff, _spark_schema(BROKER_DIFF))

    counts_row = decisions.agg(
        F.countDistinct("request_index").alias("requests_audited"), F.count(F.lit(1)).alias("decisions"),
        F.sum((F.col("asked_a") & ~F.coalesce(F.col("allowed_a"), F.lit(True))).cast("int")).alias("denied_a"),
        F.sum(F.col("allowed_a").isNull().cast("int")).alias("unresolved")).collect()[0].asDict()
    flip_counts = flips.agg(F.count(F.lit(1)).alias("flips"),
                            F.sum((F.col("severity") == "hard").cast("int")).alias("flips_hard")).collect()[0].asDict()
    counts = {k: int(v or 0) for k, v in {**counts_row, **flip_counts}.items()}
    counts["broker_differences"] = broker_diff.count()
    release_input = decisions.where(F.col("api_key").isin(list(API_KEYS))).toArrow()
    release_input = release_input.cast(DECISIONS) if release_input.num_rows else DECISIONS.empty_table()
    return SparkResults(decisions=DECISIONS.empty_table(), flips=FLIPS.empty_table(), actions=actions_arrow,
                        broker_diff=BROKER_DIFF.empty_table(), problems=problems, broker_rows=broker.count(),
                        frames={"decisions": decisions, "flips": flips, "broker_diff": broker_diff}, counts=counts,
                        release_input=release_input)


def _finished_schema(joined: Any) -> pa.Schema:
    """The Arrow schema of ``pipeline.finish``'s output for these input columns."""
    from pyspark.sql.pandas.types import to_arrow_schema

    base = to_arrow_schema(joined.schema, timezone="UTC")
    return pa.schema([*base, pa.field("asked_a_", pa.bool_()), pa.field("asked_b_", pa.bool_()),
                      pa.field("direction", pa.string()), pa.field("severity", pa.string()), pa.field("effect", pa.string())])

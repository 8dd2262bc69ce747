"""The SparkSession the audit runs on, with the settings this project found to work (shared/clients-spark-traces.md §1).

Loopback driver address (``SPARK_LOCAL_IP``), the workers' Python = this interpreter, no UI, few shuffle partitions
(audit tables are small next to the trace), Arrow for the Python exchange, timestamps as UTC microseconds in Parquet,
and the JVM flags that cut its start-up (C1 only, serial GC). Java 17 or 21 must be on PATH (scripts/ensure-java).
"""

from __future__ import annotations

import os
import sys
from typing import Any

JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_conf(master: str, shuffle_partitions: int = 8) -> dict[str, str]:
    return {
        "spark.master": master,
        "spark.app.name": "kafka-shim-audit",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": JVM_FLAGS,
        "spark.executor.extraJavaOptions": JVM_FLAGS,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }


def prepare_environment() -> None:
    """Environment the JVM reads before it starts (the conf above is too late for the driver's own JVM flags)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-java-options '{JVM_FLAGS}' pyspark-shell")


def get_spark(master: str = "local[2]", shuffle_partitions: int = 8) -> Any:
    """A SparkSession for the audit (the running one when there is one: tests share a session)."""
    prepare_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in spark_conf(master, shuffle_partitions).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark

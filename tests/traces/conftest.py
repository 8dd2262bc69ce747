"""Fixtures shared by the trace tests."""

from __future__ import annotations

import pytest


# -- audit-core: one SparkSession (local[2]) for every Spark test of the audit ----------------------------------------
@pytest.fixture(scope="session")
def spark_session():
    """Spark with the audit's own settings (traces/audit/spark_session.py); stopped at the end of the session."""
    from kafka_shim.traces.audit.spark_session import get_spark

    spark = get_spark("local[2]", shuffle_partitions=4)
    yield spark
    spark.stop()

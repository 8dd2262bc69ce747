"""Fixtures shared by the trace tests: the real-Kafka corpus (tests/traces/real_kafka_corpus.py) and one
SparkSession, each made once per session."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.traces.real_kafka_corpus import Corpus, CorpusUnavailable, build, load


@pytest.fixture(scope="session")
def real_kafka_corpus() -> Iterator[Corpus]:
    """A workload of real clients against Kafka 3.9 as a packet capture, a request log and an authorizer log.

    KAFKA_SHIM_TRACE_CORPUS=DIR reuses a corpus made before with ``tests/traces/real_kafka_corpus.py DIR``. The
    corpus is made in its own temporary directory, not pytest's numbered ones: other pytest sessions on the machine
    prune those while this session still reads it."""
    reuse = os.environ.get("KAFKA_SHIM_TRACE_CORPUS")
    if reuse and (Path(reuse) / "corpus.json").exists():
        yield load(Path(reuse))
        return
    directory = Path(tempfile.mkdtemp(prefix="kafka-shim-corpus-"))
    try:
        try:
            corpus = build(directory)
        except CorpusUnavailable as exc:
            pytest.skip(f"the real-Kafka trace corpus cannot be made here: {exc}")
        yield corpus
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def spark_session():
    """Spark (local[2]) with the audit's own settings (traces/audit/spark_session.py); stopped at the end."""
    from kafka_shim.traces.audit.spark_session import get_spark

    spark = get_spark("local[2]", shuffle_partitions=4)
    yield spark
    spark.stop()

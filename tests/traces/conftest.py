"""Fixtures of the trace tests: the real-Kafka corpus, made once per session (tests/traces/real_kafka_corpus.py)."""

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

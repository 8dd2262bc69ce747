"""Fixtures of the trace tests: the real-Kafka corpus, made once per session (tests/traces/real_kafka_corpus.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.traces.real_kafka_corpus import Corpus, CorpusUnavailable, build, load


@pytest.fixture(scope="session")
def real_kafka_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """A workload of real clients against Kafka 3.9 as a packet capture, a request log and an authorizer log.

    KAFKA_SHIM_TRACE_CORPUS=DIR reuses a corpus made before with ``tests/traces/real_kafka_corpus.py DIR``."""
    reuse = os.environ.get("KAFKA_SHIM_TRACE_CORPUS")
    if reuse and (Path(reuse) / "corpus.json").exists():
        return load(Path(reuse))
    try:
        return build(tmp_path_factory.mktemp("real-kafka-corpus"))
    except CorpusUnavailable as exc:
        pytest.skip(f"the real-Kafka trace corpus cannot be made here: {exc}")

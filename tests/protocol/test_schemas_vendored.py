"""schemas/ is Kafka's files, unchanged, and pyproject.toml says which Kafka they are."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from kafka_shim.protocol.schema import SCHEMA_DIR, api_index, schema_files

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "kafka-message-schemas"


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/kafka-message-schemas is not beside this checkout")
def test_vendored_files_are_byte_identical_to_the_source() -> None:
    vendored = {p.name: p.read_bytes() for p in SCHEMA_DIR.iterdir() if p.is_file()}
    source = {p.name: p.read_bytes() for p in SHARED.iterdir() if p.is_file()}
    assert vendored == source


def test_pyproject_records_the_kafka_release() -> None:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["kafka-shim"]["schemas"]
    readme = (SCHEMA_DIR / "README.md").read_text()
    assert table["kafka-version"] in readme
    assert table["commit"] in readme
    assert (SCHEMA_DIR / "LICENSE").is_file() and (SCHEMA_DIR / "NOTICE").is_file()


def test_every_api_has_a_request_and_a_response() -> None:
    names = set(schema_files())
    assert {"RequestHeader", "ResponseHeader"} <= names
    assert len(api_index()) == 88
    for request, response in api_index().values():
        assert request in names and response in names

"""ApiKey and ErrorCode: Kafka's vocabulary, checked against the vendored schemas and against its users."""

from __future__ import annotations

import ast
from pathlib import Path

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.schema import load_json, schema_files, snake_case

ROOT = Path(__file__).resolve().parents[2]
# The packages installed as kafka_shim.*: every reference to ErrorCode/ApiKey in them must name a member.
SOURCE_PACKAGES = ("protocol", "authorizer", "shim", "traces")


def _schema_api_keys() -> dict[int, str]:
    """apiKey -> ApiKeys' UPPER_SNAKE name of the API, from every request schema."""
    keys: dict[int, str] = {}
    for name, path in schema_files().items():
        doc = load_json(path)
        if doc["type"] == "request":
            keys[doc["apiKey"]] = snake_case(name.removesuffix("Request")).upper()
    return keys


def test_api_key_matches_the_schemas_both_ways() -> None:
    # Every schema's key is a member named after its message (LeaderAndIsrRequest -> LEADER_AND_ISR), and no member
    # names a key the schemas lack.
    assert {member.value: member.name for member in ApiKey} == _schema_api_keys()


def test_every_response_schema_has_the_key_of_its_request() -> None:
    for name, path in schema_files().items():
        doc = load_json(path)
        if doc["type"] == "response":
            assert ApiKey(doc["apiKey"]).name == snake_case(name.removesuffix("Response")).upper()


def test_error_codes_are_unique_and_cover_kafka_3_9() -> None:
    values = [member.value for member in ErrorCode]
    assert len(values) == len(set(values)), "an alias would hide a code's name"
    # Kafka 3.9.0 defines every code from -1 to 127 without a gap.
    assert sorted(values) == list(range(-1, 128))


def test_error_codes_keep_errors_java_names() -> None:
    # Spot checks of names that differ from their exception class or changed over Kafka's history.
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert ErrorCode.INVALID_TOPIC_EXCEPTION == 17
    assert ErrorCode.KAFKA_STORAGE_ERROR == 56
    assert ErrorCode.UNSUPPORTED_COMPRESSION_TYPE == 76
    assert ErrorCode.TRANSACTION_ABORTABLE == 120
    assert ErrorCode.VOTER_NOT_FOUND == 127


def _member_references(enum_name: str) -> dict[str, list[str]]:
    """``Enum.MEMBER`` attribute uses in the source packages: member name -> where it is used."""
    found: dict[str, list[str]] = {}
    for package in SOURCE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == enum_name:
                    found.setdefault(node.attr, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_codes_the_broker_uses_exist() -> None:
    for enum in (ErrorCode, ApiKey):
        used = _member_references(enum.__name__)
        assert used, f"no use of {enum.__name__} found: the scan is looking in the wrong place"
        missing = {name: where for name, where in used.items() if name not in enum.__members__ and not hasattr(enum, name)}
        assert not missing, f"{enum.__name__} has no member for {missing}"

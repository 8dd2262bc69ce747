"""security.sasl.scram_admin: the SCRAM admin work on plain values, without the wire (Kafka's answers are pinned
over TCP in tests/shim/handlers/test_scram_credentials.py and live in tests/differential/test_scram_admin.py)."""

from __future__ import annotations

from pathlib import Path

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.security.sasl import scram_admin
from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore
from kafka_shim.shim.security.sasl.scram_admin import Change, Deletion

SHA256, SHA512 = 1, 2


def change(user: str, mechanism: int = SHA256, iterations: int = 4096, salted_password: bytes = b"k" * 32) -> Change:
    return Change(user, mechanism, iterations, b"salt", salted_password)


def rows(results: list[scram_admin.UserResult]) -> list[tuple]:
    return [(r.user, r.error_code, r.error_message) for r in results]


def test_alter_then_describe(tmp_path: Path) -> None:
    store = ScramCredentialStore.open(tmp_path)
    assert rows(scram_admin.alter(store, [], [change("carol"), change("dave", SHA512, 8192)], principal="User:admin")) == [
        ("carol", ErrorCode.NONE, None), ("dave", ErrorCode.NONE, None)]
    described = {r.user: r.credentials for r in scram_admin.describe(store, None)}
    assert described == {"carol": ((SHA256, 4096),), "dave": ((SHA512, 8192),)}
    # The store wrote the changes through: a store reopened on the directory sees them.
    assert ScramCredentialStore.open(tmp_path).describe() == {"carol": {"SCRAM-SHA-256": 4096}, "dave": {"SCRAM-SHA-512": 8192}}


def test_a_user_named_twice_fails_whole_and_nothing_of_it_is_applied() -> None:
    store = ScramCredentialStore.open(None)
    results = scram_admin.alter(store, [], [change("erin"), change("erin", SHA512)], principal="User:admin")
    assert rows(results) == [("erin", ErrorCode.DUPLICATE_RESOURCE, scram_admin.ALTERED_TWICE)]
    assert store.describe() == {}


def test_each_invalid_change_gets_kafkas_error() -> None:
    store = ScramCredentialStore.open(None)
    results = scram_admin.alter(
        store,
        [Deletion("ghost", SHA256)],
        [change(""), change("m", mechanism=9), change("few", iterations=1), change("many", iterations=10**7), change("empty", salted_password=b"")],
        principal="User:admin",
    )
    assert sorted(rows(results)) == sorted([
        ("ghost", ErrorCode.RESOURCE_NOT_FOUND, scram_admin.DELETE_MISSING),
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, scram_admin.EMPTY_USERNAME),
        ("m", ErrorCode.UNSUPPORTED_SASL_MECHANISM, scram_admin.UNKNOWN_MECHANISM),
        ("few", ErrorCode.UNACCEPTABLE_CREDENTIAL, scram_admin.TOO_FEW_ITERATIONS),
        ("many", ErrorCode.UNACCEPTABLE_CREDENTIAL, scram_admin.TOO_MANY_ITERATIONS),
        ("empty", ErrorCode.UNKNOWN_SERVER_ERROR, None),
    ])
    assert store.describe() == {}


def test_describe_names_duplicates_and_unknown_users() -> None:
    store = ScramCredentialStore.open(None)
    scram_admin.alter(store, [], [change("carol")], principal="User:admin")
    results = scram_admin.describe(store, ["carol", "zed", "carol"])
    assert sorted(rows(results)) == sorted([
        ("carol", ErrorCode.DUPLICATE_RESOURCE, scram_admin.DESCRIBE_DUPLICATE_USER + "carol"),
        ("zed", ErrorCode.RESOURCE_NOT_FOUND, scram_admin.DESCRIBE_USER_THAT_DOES_NOT_EXIST + "zed"),
    ])

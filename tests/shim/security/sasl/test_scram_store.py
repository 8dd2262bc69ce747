"""ScramCredentialStore: lookups, changes, the file in the data directory, and what wins at start-up."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.security.sasl import SaslSettings, ScramCredentialStore, ScramStoreError, Upsertion
from kafka_shim.shim.security.sasl.credentials import FILE_NAME, open_scram_store
from kafka_shim.shim.security.sasl.scram_math import SCRAM_SHA_256, SCRAM_SHA_512, ScramCredential

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def settings(users: dict[str, str], mechanisms: str = "SCRAM-SHA-256,SCRAM-SHA-512") -> SaslSettings:
    jaas = f"{SCRAM} required " + " ".join(f'user_{u}="{p}"' for u, p in users.items()) + ";"
    props = {"sasl.enabled.mechanisms": mechanisms}
    for mechanism in mechanisms.split(","):
        props[f"listener.name.sasl_plaintext.{mechanism.lower()}.sasl.jaas.config"] = jaas
    return SaslSettings.from_properties(props, ["SASL_PLAINTEXT"])


def salted(password: str, salt: bytes = b"salt", iterations: int = 4096, mechanism=SCRAM_SHA_256) -> Upsertion:
    return Upsertion("", mechanism.name, salt, mechanism.salted_password(password, salt, iterations), iterations)


def upsert(store: ScramCredentialStore, user: str, password: str, mechanism=SCRAM_SHA_256, iterations: int = 4096) -> None:
    up = salted(password, iterations=iterations, mechanism=mechanism)
    store.upsert(user, mechanism.name, salt=up.salt, salted_password=up.salted_password, iterations=iterations)


def test_jaas_users_get_salted_credentials_for_each_mechanism() -> None:
    store = ScramCredentialStore.open(None, settings({"alice": "alice-secret", "bob": "bob-secret"}))
    assert store.describe() == {"alice": {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096},
                                "bob": {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}}
    alice = store.lookup("alice", "SCRAM-SHA-512")
    assert alice is not None and alice.matches_password(SCRAM_SHA_512, "alice-secret")
    assert not alice.matches_password(SCRAM_SHA_512, "bob-secret")
    # A random salt per credential, Kafka's form: the bytes of a base-36 number.
    assert alice.salt != store.lookup("alice", "SCRAM-SHA-256").salt
    assert alice.salt.isalnum() and alice.salt == alice.salt.lower()
    assert "alice-secret" not in repr(alice) and repr(alice.salt) not in repr(alice)


def test_upsert_lookup_delete() -> None:
    store = ScramCredentialStore()
    upsert(store, "carol", "carol-secret", iterations=8192)
    credential = store.lookup("carol", "SCRAM-SHA-256")
    assert credential == ScramCredential.derive(SCRAM_SHA_256, "carol-secret", 8192, b"salt")
    assert store.lookup("carol", "SCRAM-SHA-512") is None
    assert store.delete("carol", "SCRAM-SHA-256") is True
    assert store.delete("carol", "SCRAM-SHA-256") is False
    assert store.lookup("carol", "SCRAM-SHA-256") is None and store.describe() == {} and len(store) == 0


def test_users_keep_their_first_insertion_order_and_go_last_when_re_added() -> None:
    store = ScramCredentialStore()
    for user in ("c", "a", "b"):
        upsert(store, user, "pw")
    upsert(store, "c", "new-pw")
    assert store.users("SCRAM-SHA-256") == ["c", "a", "b"]
    store.delete("c", "SCRAM-SHA-256")
    upsert(store, "c", "pw")
    assert store.users("SCRAM-SHA-256") == ["a", "b", "c"]


def test_changes_survive_a_restart(tmp_path: Path) -> None:
    store = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}))
    upsert(store, "carol", "carol-secret")
    store.delete("alice", "SCRAM-SHA-512")
    again = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}))
    assert again.describe() == {"alice": {"SCRAM-SHA-256": 4096}, "carol": {"SCRAM-SHA-256": 4096}}
    assert again.lookup("carol", "SCRAM-SHA-256") == store.lookup("carol", "SCRAM-SHA-256")
    # The JAAS user keeps the same salt across restarts (its credential is reused, not derived again).
    assert again.lookup("alice", "SCRAM-SHA-256") == store.lookup("alice", "SCRAM-SHA-256")


def test_a_run_time_change_beats_the_jaas_password(tmp_path: Path) -> None:
    store = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}))
    upsert(store, "alice", "changed-at-run-time")
    again = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}))
    assert again.lookup("alice", "SCRAM-SHA-256").matches_password(SCRAM_SHA_256, "changed-at-run-time")
    assert again.lookup("alice", "SCRAM-SHA-512").matches_password(SCRAM_SHA_512, "alice-secret")


def test_a_jaas_password_change_is_picked_up_and_a_removed_jaas_user_goes(tmp_path: Path) -> None:
    ScramCredentialStore.open(tmp_path, settings({"alice": "old", "bob": "bob-secret"}))
    again = ScramCredentialStore.open(tmp_path, settings({"alice": "new"}))
    assert again.lookup("alice", "SCRAM-SHA-256").matches_password(SCRAM_SHA_256, "new")
    assert again.lookup("bob", "SCRAM-SHA-256") is None
    assert ScramCredentialStore.open(tmp_path, settings({"alice": "new"})).describe() == again.describe()


def test_a_run_time_deletion_of_a_jaas_user_stays_deleted_until_set_again(tmp_path: Path) -> None:
    store = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}, "SCRAM-SHA-256"))
    store.delete("alice", "SCRAM-SHA-256")
    again = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}, "SCRAM-SHA-256"))
    assert again.lookup("alice", "SCRAM-SHA-256") is None
    upsert(again, "alice", "back")
    third = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}, "SCRAM-SHA-256"))
    assert third.lookup("alice", "SCRAM-SHA-256").matches_password(SCRAM_SHA_256, "back")


def test_the_file_holds_no_password_and_is_private(tmp_path: Path) -> None:
    store = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}))
    upsert(store, "carol", "carol-secret")
    path = tmp_path / FILE_NAME
    text = path.read_text()
    assert "alice-secret" not in text and "carol-secret" not in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [FILE_NAME]  # no temporary file left behind


def test_rewrites_replace_the_file_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}))
    path = tmp_path / FILE_NAME
    before = path.read_bytes()
    calls = []
    real_replace, real_fsync = os.replace, os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(("fsync", stat.S_ISDIR(os.fstat(fd).st_mode))) or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: calls.append(("replace", Path(b).name)) or real_replace(a, b))
    upsert(store, "carol", "carol-secret")
    # The new content is flushed to disk before the rename, and the directory entry after it.
    assert calls == [("fsync", False), ("replace", FILE_NAME), ("fsync", True)]

    def crash(a, b):
        raise OSError(28, "No space left on device")

    after_carol = path.read_bytes()
    assert after_carol != before
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(ScramStoreError, match=f"cannot write the SCRAM credential file {path}"):
        upsert(store, "dave", "dave-secret")
    # A failed write leaves the old file whole, no temporary file, and the store unchanged.
    assert path.read_bytes() == after_carol
    assert [p.name for p in tmp_path.iterdir()] == [FILE_NAME]
    assert store.lookup("dave", "SCRAM-SHA-256") is None


@pytest.mark.parametrize("content", [
    "not json",
    "[]",
    '{"version": 2, "credentials": []}',
    '{"version": 1}',
    '{"version": 1, "credentials": [{"user": "a", "mechanism": "SCRAM-SHA-1", "source": "api", "deleted": true}]}',
    '{"version": 1, "credentials": [{"user": "a", "mechanism": "SCRAM-SHA-256", "source": "api", "salt": "!!", '
    '"stored_key": "", "server_key": "", "iterations": 4096}]}',
])
def test_a_corrupt_file_stops_start_up_naming_the_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / FILE_NAME
    path.write_text(content)
    with pytest.raises(ConfigError) as raised:
        ScramCredentialStore.open(tmp_path, settings({"alice": "alice-secret"}))
    assert str(path) in str(raised.value) and "corrupt" in str(raised.value)
    assert path.read_text() == content  # left as it was, for the operator to inspect


def test_the_file_is_created_in_a_missing_data_directory(tmp_path: Path) -> None:
    ScramCredentialStore.open(tmp_path / "a" / "b", settings({"alice": "alice-secret"}))
    document = json.loads((tmp_path / "a" / "b" / FILE_NAME).read_text())
    assert {(c["user"], c["mechanism"], c["source"]) for c in document["credentials"]} == {
        ("alice", "SCRAM-SHA-256", "jaas"), ("alice", "SCRAM-SHA-512", "jaas")}


def test_memory_only_without_a_data_directory(tmp_path: Path) -> None:
    store = ScramCredentialStore.open(None, settings({"alice": "alice-secret"}))
    upsert(store, "carol", "carol-secret")
    assert store.path is None and list(tmp_path.iterdir()) == []


def test_open_scram_store_reads_the_broker_config(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "log.dirs": f"{tmp_path / 'one'},{tmp_path / 'two'}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": f'{SCRAM} required user_alice="alice-secret";',
    })
    store = open_scram_store(config)
    assert store.describe() == {"alice": {"SCRAM-SHA-512": 4096}}
    assert store.path == tmp_path / "one" / FILE_NAME and store.path.exists()

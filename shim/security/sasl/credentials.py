"""SCRAM credentials per (user, mechanism), as Kafka keeps them in its metadata: salt, StoredKey, ServerKey, iterations.

With a data directory they live in ``kafka-shim-scram-credentials.json`` there, rewritten atomically (temporary
file, fsync, rename, directory fsync) on every change, so AlterUserScramCredentials survives a restart.

What wins at start-up when the file and the JAAS users (``user_<name>`` in the SCRAM listeners' JAAS) disagree:
a credential set or deleted at run time (AlterUserScramCredentials) always wins, and a deletion is remembered
so that a JAAS user deleted at run time stays deleted; the broker logs ``scram_jaas_user_overridden`` for each
JAAS user it leaves alone for that reason. Credentials that came from the JAAS follow the JAAS: a user whose
JAAS password changed gets a new credential, and one removed from the JAAS is removed.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.security.sasl.scram_math import MECHANISMS, ScramCredential

if TYPE_CHECKING:
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.security.sasl.settings import SaslSettings

log = get_logger("kafka_shim.sasl.credentials")

FILE_NAME = "kafka-shim-scram-credentials.json"
FORMAT_VERSION = 1
JAAS = "jaas"  # derived from a JAAS user_<name> option at start-up
API = "api"  # set or deleted by AlterUserScramCredentials


class ScramStoreError(ConfigError):
    """The credential file cannot be read or written; the message names the file and what to do."""


@dataclass(frozen=True)
class Upsertion:
    user: str
    mechanism: str  # "SCRAM-SHA-256"
    salt: bytes
    salted_password: bytes
    iterations: int


@dataclass
class _Record:
    credential: ScramCredential | None  # None: deleted at run time (a tombstone)
    source: str


class ScramCredentialStore:
    """Lookups for the SCRAM servers, changes and descriptions for the admin APIs. Not thread-safe: use it from
    the broker's event loop."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        # Delegation tokens' credentials (the broker sets it): (token id, mechanism) -> (credential, owner name,
        # expiry ms) or None. Kept beside the users' credentials as Kafka's ScramServerCallbackHandler holds both.
        self.token_credentials: Callable[[str, str], tuple[ScramCredential, str, int] | None] | None = None
        # mechanism -> user -> record; dicts keep first-insertion order, which Kafka's answers depend on.
        self._records: dict[str, dict[str, _Record]] = {m: {} for m in MECHANISMS}

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def open(cls, data_dir: Path | None, settings: SaslSettings | None = None) -> ScramCredentialStore:
        """The store for this broker: the file in ``data_dir`` (if any) reconciled with the JAAS users."""
        store = cls(Path(data_dir) / FILE_NAME if data_dir is not None else None)
        before: dict[str, dict[str, _Record]] = {m: {} for m in MECHANISMS}
        if store.path is not None and store.path.exists():
            store._load()
            before = {m: dict(users) for m, users in store._records.items()}
        store._reconcile(settings.scram_users() if settings is not None else [])
        if store.path is not None and store._records != before:
            store._write()
        return store

    def _reconcile(self, jaas_users: Iterable[tuple[str, str, str]]) -> None:
        wanted = {(user, mechanism): password for user, mechanism, password in jaas_users}
        for mechanism, users in self._records.items():
            for user in [u for u, r in users.items() if r.source == JAAS and (u, mechanism) not in wanted]:
                del users[user]
        for (user, mechanism), password in wanted.items():
            records = self._records[mechanism]
            record = records.get(user)
            scram = MECHANISMS[mechanism]
            if record is not None and record.source == API:
                log.info("scram_jaas_user_overridden", user=user, mechanism=mechanism,
                         reason="deleted at run time" if record.credential is None else "set at run time",
                         hint="AlterUserScramCredentials changes win over the JAAS user_<name> option")
                continue
            if record is not None and record.credential is not None and record.credential.matches_password(scram, password):
                continue
            records[user] = _Record(ScramCredential.derive(scram, password), JAAS)

    def jaas_users(self) -> dict[str, dict[str, _Record]]:
        """The credentials the JAAS configuration made, as they are now: what a broker reset brings back (with
        :meth:`reset_to`, sparing the key derivations, which are most of an SASL broker's reset)."""
        return {m: {u: r for u, r in users.items() if r.source == JAAS} for m, users in self._records.items()}

    def reset_to(self, jaas_users: dict[str, dict[str, _Record]]) -> None:
        """Only these credentials (from :meth:`jaas_users` of an in-memory store), in their order."""
        self._records = {m: dict(users) for m, users in jaas_users.items()}

    def replace_with(self, other: ScramCredentialStore) -> None:
        """Take ``other``'s users (a broker reset: the listeners keep this store, so it changes in place)."""
        self.path = other.path
        self._records = other._records

    # -- reading ----------------------------------------------------------------------------
    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        record = self._records.get(mechanism, {}).get(user)
        return record.credential if record is not None else None

    def token_credential(self, token_id: str, mechanism: str) -> tuple[ScramCredential, str, int] | None:
        return self.token_credentials(token_id, mechanism) if self.token_credentials is not None else None

    def users(self, mechanism: str) -> list[str]:
        """Users with a credential for ``mechanism``, in the order they first got one."""
        return [u for u, r in self._records.get(mechanism, {}).items() if r.credential is not None]

    def describe(self) -> dict[str, dict[str, int]]:
        """user -> {mechanism: iterations} for every user with at least one credential."""
        out: dict[str, dict[str, int]] = {}
        for mechanism, users in self._records.items():
            for user, record in users.items():
                if record.credential is not None:
                    out.setdefault(user, {})[mechanism] = record.credential.iterations
        return out

    def __len__(self) -> int:
        return sum(1 for users in self._records.values() for r in users.values() if r.credential is not None)

    # -- changing ---------------------------------------------------------------------------
    def alter(self, deletions: Iterable[tuple[str, str]] = (), upsertions: Iterable[Upsertion] = ()) -> None:
        """Apply one request's changes together, written once (Kafka applies a request's records atomically)."""
        staged = {m: dict(users) for m, users in self._records.items()}
        for user, mechanism in deletions:
            # The tombstone goes last, and a later upsertion goes last again, as a removed and re-added key does
            # in Kafka's maps (describe's order follows it).
            staged[_known(mechanism)].pop(user, None)
            staged[mechanism][user] = _Record(None, API)
        for up in upsertions:
            scram = MECHANISMS[_known(up.mechanism)]
            credential = ScramCredential.from_salted_password(scram, up.salt, up.salted_password, up.iterations)
            users = staged[up.mechanism]
            if up.user in users and users[up.user].credential is None:
                del users[up.user]
            users[up.user] = _Record(credential, API)
        previous, self._records = self._records, staged
        try:
            self._write()
        except BaseException:
            self._records = previous
            raise

    def upsert(self, user: str, mechanism: str, *, salt: bytes, salted_password: bytes, iterations: int) -> None:
        self.alter(upsertions=[Upsertion(user, mechanism, salt, salted_password, iterations)])

    def delete(self, user: str, mechanism: str) -> bool:
        """Remove one credential; False if there was none."""
        if self.lookup(user, mechanism) is None:
            return False
        self.alter(deletions=[(user, mechanism)])
        return True

    # -- the file ---------------------------------------------------------------------------
    def _load(self) -> None:
        assert self.path is not None
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
                raise ValueError(f"expected a JSON object with \"version\": {FORMAT_VERSION}")
            for item in document["credentials"]:
                mechanism, user, source = item["mechanism"], item["user"], item["source"]
                if mechanism not in MECHANISMS or source not in (JAAS, API) or not isinstance(user, str):
                    raise ValueError(f"bad entry for user {user!r}")
                credential = None
                if not item.get("deleted", False):
                    credential = ScramCredential(_b64(item["salt"]), _b64(item["stored_key"]), _b64(item["server_key"]),
                                                 int(item["iterations"]))
                self._records[mechanism][user] = _Record(credential, source)
        except OSError as exc:
            raise ScramStoreError(f"cannot read the SCRAM credential file {self.path}: {exc.strerror or exc}") from None
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise ScramStoreError(
                f"the SCRAM credential file {self.path} is corrupt ({type(exc).__name__}: {exc}); restore it from a backup, "
                "or delete it to start again from the JAAS users (credentials set at run time are then lost)") from None

    def _write(self) -> None:
        if self.path is None:
            return
        entries = []
        for mechanism, users in self._records.items():
            for user, record in users.items():
                entry: dict[str, object] = {"user": user, "mechanism": mechanism, "source": record.source}
                if record.credential is None:
                    entry["deleted"] = True
                else:
                    c = record.credential
                    entry.update(salt=_text(c.salt), stored_key=_text(c.stored_key), server_key=_text(c.server_key),
                                 iterations=c.iterations)
                entries.append(entry)
        data = json.dumps({"version": FORMAT_VERSION, "credentials": entries}, indent=1).encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, data)
        except OSError as exc:
            raise ScramStoreError(f"cannot write the SCRAM credential file {self.path}: {exc.strerror or exc}") from None


def open_scram_store(config: BrokerConfig) -> ScramCredentialStore:
    """The broker's store: in the first ``log.dirs`` entry (memory only without one), with the JAAS users."""
    from kafka_shim.shim.security.sasl.settings import SaslSettings

    settings = SaslSettings.from_properties(config.raw, [lst.name for lst in config.listeners])
    return ScramCredentialStore.open(config.log_dirs[0] if config.log_dirs else None, settings)


def _known(mechanism: str) -> str:
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
    return mechanism


def _b64(text: object) -> bytes:
    if not isinstance(text, str):
        raise ValueError("a key is not a base64 string")
    return base64.b64decode(text, validate=True)


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file, never a mix."""
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:  # mkstemp creates it 0600: the keys are secrets
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)

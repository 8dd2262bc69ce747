"""Delegation tokens (KIP-48) as a Kafka 3.9 KRaft cluster keeps them: DelegationTokenControlManager's decisions,
DelegationTokenCache's lookups, and the SCRAM credentials a token authenticates with.

- Enabled only when ``delegation.token.secret.key`` (or the older ``delegation.token.master.key``) is set; otherwise
  every create, renew, expire and describe answers DELEGATION_TOKEN_AUTH_DISABLED (61).
- A token's HMAC is HmacSHA512 of its id (a random UUID) keyed by the secret's UTF-8 bytes; its password for
  ``tokenauth=true`` SCRAM logins is that HMAC in base64, with SCRAM-SHA-256 and -512 credentials derived at 4096
  iterations, as DelegationTokenManager.prepareScramCredentials does.
- Create: the max lifetime is ``delegation.token.max.lifetime.ms`` (7 days), or less if the request asks for less;
  the expiry is now + ``delegation.token.expiry.time.ms`` (1 day), capped by the max. Renewers must be of type User
  (INVALID_PRINCIPAL_TYPE, 67).
- Renew and expire find the token by HMAC (DELEGATION_TOKEN_NOT_FOUND, 62), allow only its owner or a renewer
  (DELEGATION_TOKEN_OWNER_MISMATCH, 63) and refuse an expired token (DELEGATION_TOKEN_EXPIRED, 66): renew checks expiry
  before the caller, expire the caller first, and a negative expiry period expires the token at once (removes it).
- Timestamps are the clock plus a period in Java's wrapping long arithmetic, as the controller computes them: an expire
  period near Long.MAX_VALUE gives a negative expiry, so the token is expired at once (renew then answers 66).
- Every ``delegation.token.expiry.check.interval.ms`` (1 h) tokens past their expiry or max timestamp are removed.

With a data directory the tokens live in ``kafka-shim-delegation-tokens.json`` there (rewritten atomically on each
change, as the SCRAM credentials are), so they survive a restart as Kafka's metadata log keeps them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Protocol

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.java_long import java_long
from kafka_shim.shim.javacompat.kafka_uuid import kafka_uuid_string, random_uuid
from kafka_shim.shim.security.sasl.credentials import atomic_write
from kafka_shim.shim.security.sasl.scram_math import MECHANISMS, ScramCredential

log = get_logger("kafka_shim.delegation_tokens")

FILE_NAME = "kafka-shim-delegation-tokens.json"
DEFAULT_MAX_LIFETIME_MS = 604_800_000  # delegation.token.max.lifetime.ms
DEFAULT_EXPIRY_TIME_MS = 86_400_000  # delegation.token.expiry.time.ms
DEFAULT_CHECK_INTERVAL_MS = 3_600_000  # delegation.token.expiry.check.interval.ms
USER_TYPE = "User"


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer: ...


@dataclass(frozen=True)
class TokenSettings:
    secret_key: str | None = None
    max_lifetime_ms: int = DEFAULT_MAX_LIFETIME_MS
    expiry_time_ms: int = DEFAULT_EXPIRY_TIME_MS
    check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> TokenSettings:
        secret = properties.get("delegation.token.secret.key") or properties.get("delegation.token.master.key") or None

        def number(key: str, default: int) -> int:
            text = properties.get(key, "").strip()
            try:
                return int(text) if text else default
            except ValueError:
                log.warning("delegation_token_setting_unreadable", key=key, value=text, used=default,
                            hint=f"set {key} to a number of milliseconds")
                return default

        return cls(secret, number("delegation.token.max.lifetime.ms", DEFAULT_MAX_LIFETIME_MS),
                   number("delegation.token.expiry.time.ms", DEFAULT_EXPIRY_TIME_MS),
                   number("delegation.token.expiry.check.interval.ms", DEFAULT_CHECK_INTERVAL_MS))


@dataclass(frozen=True)
class Token:
    """TokenInformation plus its HMAC. Principals are ``Type:name`` strings."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int
    hmac: bytes = field(repr=False)

    def owner_or_renewer(self, principal: str) -> bool:
        return principal in (self.owner, self.requester) or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms


@dataclass(frozen=True)
class Created:
    error: int
    token: Token | None = None


def principal_type(principal: str) -> str:
    return principal.split(":", 1)[0]


def principal_name(principal: str) -> str:
    return principal.split(":", 1)[1] if ":" in principal else principal


class DelegationTokens:
    """Every live token, by id and by HMAC. Used on the event loop only."""

    def __init__(self, settings: TokenSettings, now_ms: Callable[[], int], path: Path | None = None) -> None:
        self.settings = settings
        self.now_ms = now_ms
        self.path = path
        self._tokens: dict[str, Token] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._credentials: dict[str, dict[str, ScramCredential]] = {}  # token id -> mechanism -> credential
        self._sweep: Timer | None = None
        if path is not None and path.exists():
            self._load()

    @property
    def enabled(self) -> bool:
        return bool(self.settings.secret_key)

    # -- the controller's decisions ----------------------------------------------------------------------------------
    def create(self, owner: str, requester: str, renewers: Iterable[str], max_lifetime_ms: int) -> Created:
        if not self.enabled:
            return Created(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        renewers = tuple(renewers)
        if any(principal_type(r) != USER_TYPE for r in renewers):
            return Created(ErrorCode.INVALID_PRINCIPAL_TYPE)
        now = self.now_ms()
        lifetime = self.settings.max_lifetime_ms
        if max_lifetime_ms > 0:
            lifetime = min(lifetime, max_lifetime_ms)
        max_ms = java_long(now + lifetime)
        token_id = kafka_uuid_string(random_uuid())  # DelegationTokenControlManager: Uuid.randomUuid().toString()
        token = Token(token_id, owner, requester, renewers, now, max_ms, min(max_ms, java_long(now + self.settings.expiry_time_ms)),
                      self._hmac(token_id))
        self._put(token)
        log.info("delegation_token_created", token_id=token_id, owner=owner, requester=requester)
        return Created(ErrorCode.NONE, token)

    def renew(self, principal: str, token_hmac: bytes, period_ms: int) -> tuple[int, int]:
        """(error, new expiry timestamp); 0 as the timestamp on errors, as the controller's answer leaves it."""
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0
        token = self.by_hmac(token_hmac)
        if token is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        now = self.now_ms()
        if token.expired(now):
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        if not (token.owner == principal or principal in token.renewers):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        period = self.settings.expiry_time_ms if period_ms <= 0 else min(self.settings.expiry_time_ms, period_ms)
        expiry = min(token.max_ms, java_long(now + period))
        self._put(replace(token, expiry_ms=expiry))
        return ErrorCode.NONE, expiry

    def expire(self, principal: str, token_hmac: bytes, period_ms: int) -> tuple[int, int]:
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0
        token = self.by_hmac(token_hmac)
        if token is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        if not (token.owner == principal or principal in token.renewers):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        now = self.now_ms()
        if period_ms < 0:
            self._remove(token.token_id)
            return ErrorCode.NONE, now
        if token.expired(now):
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        expiry = min(token.max_ms, java_long(now + period_ms))
        self._put(replace(token, expiry_ms=expiry))
        return ErrorCode.NONE, expiry

    def remove_expired(self) -> list[str]:
        """The periodic sweep: ids of the tokens removed."""
        now = self.now_ms()
        gone = [t.token_id for t in self._tokens.values() if t.expired(now)]
        for token_id in gone:
            log.info("delegation_token_expired", token_id=token_id, owner=self._tokens[token_id].owner)
            self._remove(token_id)
        return gone

    def start(self, scheduler: Scheduler) -> None:
        """Sweep expired tokens every ``delegation.token.expiry.check.interval.ms`` (the controller's periodic task)."""
        def sweep() -> None:
            self.remove_expired()
            self._sweep = scheduler.call_later(self.settings.check_interval_ms, sweep)

        self.close()
        self._sweep = scheduler.call_later(self.settings.check_interval_ms, sweep)

    def close(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None

    # -- lookups -----------------------------------------------------------------------------------------------------
    def tokens(self) -> list[Token]:
        return list(self._tokens.values())

    def by_hmac(self, token_hmac: bytes) -> Token | None:
        token_id = self._by_hmac.get(bytes(token_hmac))
        return self._tokens.get(token_id) if token_id is not None else None

    def credential(self, token_id: str, mechanism: str) -> tuple[ScramCredential, Token] | None:
        """The SCRAM credential a ``tokenauth=true`` login as ``token_id`` must prove, with its token."""
        token = self._tokens.get(token_id)
        if token is None:
            return None
        per_mechanism = self._credentials.get(token_id)
        if per_mechanism is None:
            password = base64.b64encode(token.hmac).decode("ascii")
            per_mechanism = {name: ScramCredential.derive(m, password, m.min_iterations) for name, m in MECHANISMS.items()}
            self._credentials[token_id] = per_mechanism
        credential = per_mechanism.get(mechanism)
        return (credential, token) if credential is not None else None

    # -- storage -----------------------------------------------------------------------------------------------------
    def _hmac(self, token_id: str) -> bytes:
        assert self.settings.secret_key is not None
        return hmac.new(self.settings.secret_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()

    def _put(self, token: Token) -> None:
        self._tokens[token.token_id] = token
        self._by_hmac[token.hmac] = token.token_id
        self._write()

    def _remove(self, token_id: str) -> None:
        token = self._tokens.pop(token_id, None)
        if token is not None:
            self._by_hmac.pop(token.hmac, None)
            self._credentials.pop(token_id, None)
            self._write()

    def _write(self) -> None:
        if self.path is None:
            return
        records = [{**asdict(t), "renewers": list(t.renewers), "hmac": base64.b64encode(t.hmac).decode("ascii")}
                   for t in self._tokens.values()]
        atomic_write(self.path, json.dumps({"version": 1, "tokens": records}, indent=1).encode("utf-8"))

    def _load(self) -> None:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_text("utf-8"))
            tokens = [Token(**{**r, "renewers": tuple(r["renewers"]), "hmac": base64.b64decode(r["hmac"])})
                      for r in data["tokens"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            from kafka_shim.shim.config.broker_config import ConfigError

            raise ConfigError(f"cannot read the delegation tokens in {self.path}: {exc}; restore the file from a "
                              "backup, or move it away to start without the tokens") from None
        for token in tokens:
            self._tokens[token.token_id] = token
            self._by_hmac[token.hmac] = token.token_id


def open_tokens(properties: dict[str, str], data_dir: Path | None, now_ms: Callable[[], int]) -> DelegationTokens:
    """The broker's tokens: in the first ``log.dirs`` entry when there is one, else in memory."""
    return DelegationTokens(TokenSettings.from_properties(properties), now_ms,
                            Path(data_dir) / FILE_NAME if data_dir is not None else None)

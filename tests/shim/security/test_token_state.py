"""shim.security.tokens without a socket: Kafka 3.9's lifetimes, checks and their order, the sweep, the HMAC and the
SCRAM credentials a token logs in with, and the file that keeps tokens across a restart."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.security.sasl.scram_math import MECHANISMS
from kafka_shim.shim.security.tokens import DelegationTokens, TokenSettings

HOUR, DAY = 3_600_000, 86_400_000


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def tokens(path: Path | None = None, clock: Clock | None = None, **settings) -> DelegationTokens:
    return DelegationTokens(TokenSettings(secret_key="s3cret", **settings), clock or Clock(), path)


def test_disabled_without_a_secret() -> None:
    off = DelegationTokens(TokenSettings(), Clock())
    assert off.create("User:a", "User:a", [], -1).error == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert off.renew("User:a", b"x", 1) == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)
    assert off.expire("User:a", b"x", 1) == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)


def test_lifetimes_and_the_hmac() -> None:
    clock = Clock()
    t = tokens(clock=clock)
    default = t.create("User:a", "User:a", ["User:b"], -1).token
    assert (default.max_ms - default.issue_ms, default.expiry_ms - default.issue_ms) == (7 * DAY, DAY)
    short = t.create("User:a", "User:a", [], HOUR).token
    assert (short.max_ms - short.issue_ms, short.expiry_ms - short.issue_ms) == (HOUR, HOUR)  # the expiry capped by the max
    longer = t.create("User:a", "User:a", [], 30 * DAY).token
    assert longer.max_ms - longer.issue_ms == 7 * DAY  # never past the broker's maximum
    assert default.hmac == hmac.new(b"s3cret", default.token_id.encode(), hashlib.sha512).digest()
    assert t.create("User:a", "User:a", ["Group:g"], -1).error == ErrorCode.INVALID_PRINCIPAL_TYPE


def test_renew_and_expire_checks_in_kafkas_order() -> None:
    clock = Clock()
    t = tokens(clock=clock)
    token = t.create("User:owner", "User:requester", ["User:renewer"], -1).token
    assert t.renew("User:x", b"unknown", HOUR) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
    assert t.renew("User:requester", token.hmac, HOUR) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    clock.now += HOUR
    assert t.renew("User:renewer", token.hmac, 10 * DAY) == (ErrorCode.NONE, clock.now + DAY)  # capped by the expiry time
    assert t.expire("User:owner", token.hmac, HOUR) == (ErrorCode.NONE, clock.now + HOUR)
    clock.now += 2 * HOUR  # past its expiry
    assert t.renew("User:x", token.hmac, HOUR) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)  # expiry before the caller
    assert t.expire("User:x", token.hmac, HOUR) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)  # the caller first
    assert t.expire("User:owner", token.hmac, HOUR) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
    assert t.remove_expired() == [token.token_id] and t.tokens() == []


def test_expire_now_removes_the_token_and_its_login() -> None:
    clock = Clock()
    t = tokens(clock=clock)
    token = t.create("User:a", "User:a", [], -1).token
    assert t.credential(token.token_id, "SCRAM-SHA-512") is not None
    assert t.expire("User:a", token.hmac, -1) == (ErrorCode.NONE, clock.now)
    assert t.by_hmac(token.hmac) is None and t.credential(token.token_id, "SCRAM-SHA-512") is None


def test_the_login_credential_is_derived_from_the_hmac_in_base64() -> None:
    t = tokens()
    token = t.create("User:a", "User:a", [], -1).token
    credential, found = t.credential(token.token_id, "SCRAM-SHA-256")
    assert found == token and credential.iterations == 4096
    assert credential.matches_password(MECHANISMS["SCRAM-SHA-256"], base64.b64encode(token.hmac).decode())


def test_tokens_survive_a_restart_in_their_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    first = tokens(path)
    kept = first.create("User:a", "User:b", ["User:c"], -1).token
    gone = first.create("User:a", "User:a", [], -1).token
    first.expire("User:a", gone.hmac, -1)
    again = tokens(path)
    assert again.tokens() == [kept] and again.by_hmac(kept.hmac) == kept

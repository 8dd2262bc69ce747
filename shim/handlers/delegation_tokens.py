"""CreateDelegationToken (key 38, v0-3), RenewDelegationToken (39, v0-2), ExpireDelegationToken (40, v0-2) and
DescribeDelegationToken (41, v0-3), as a Kafka 3.9 KRaft broker answers them (KafkaApis.handleCreateTokenRequest and
the others, the controller's DelegationTokenControlManager; the decisions are shim.security.tokens').

Behaviour.

- Every token request on a PLAINTEXT listener, on an SSL listener without a client certificate (ANONYMOUS), or from a
  principal that logged in with a token answers DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (64), with -1 timestamps.
- Create: a token for another owner (v3 ``owner_principal_*``) needs CREATE_TOKENS on USER <owner>, else 65; renewers
  must be Users (67); then, at the controller, 61 while ``delegation.token.secret.key`` is unset (timestamps 0, as
  its answer leaves them). The answer names the owner (as the request spelled it) and (v3) the requester. An owner
  name with a null owner type answers UNKNOWN_SERVER_ERROR for ANONYMOUS before any other check (Kafka's principal
  cannot be built).
- Renew / expire: 61, 62 unknown HMAC, 66 expired, 63 neither owner nor renewer (see shim.security.tokens for the
  order); the new expiry timestamp, 0 on errors.
- Describe: 61 while tokens are disabled; an empty owner list answers no tokens; otherwise each token whose owner,
  requester or a renewer is among the owners asked for (all tokens for a null list) and that the requester owns,
  requested or renews, or has DESCRIBE on (DELEGATION_TOKEN <id>), or DESCRIBE_TOKENS on USER <owner>; listed in
  the order of Kafka's token cache (a ConcurrentHashMap by token id).

Version notes. v2+ are flexible; CreateDelegationToken v3 and DescribeDelegationToken v3 carry the owner for whom
and the requester by whom a token was created (KIP-373).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    CreateDelegationTokenResponse,
    DescribeDelegationTokenResponse,
    ExpireDelegationTokenResponse,
    RenewDelegationTokenResponse,
)
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import java_hash_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import ANONYMOUS, RequestContext
from kafka_shim.shim.security.tokens import DelegationTokens, Token, principal_name, principal_type

_CREATE_FOR_OTHERS = check(ApiKey.CREATE_DELEGATION_TOKEN, "owner")
_DESCRIBE_TOKEN = check(ApiKey.DESCRIBE_DELEGATION_TOKEN, "tokens")
_DESCRIBE_OWNERS_TOKENS = check(ApiKey.DESCRIBE_DELEGATION_TOKEN, "owners")
ERROR_TIMESTAMP = -1  # DelegationTokenManager.ErrorTimestamp: the broker's own refusals


def token_requests_allowed(ctx: RequestContext) -> bool:
    """KafkaApis.allowTokenRequests: only SASL-authenticated (or 2-way TLS) principals that did not use a token."""
    protocol = ctx.listener.security_protocol
    if ctx.token_authenticated or protocol == "PLAINTEXT":
        return False
    return not (protocol == "SSL" and ctx.principal == ANONYMOUS)


# -- CreateDelegationToken -----------------------------------------------------------------------------------------

def _created(version: int, owner: str, requester: str, code: int, token: Token | None = None,
             timestamp: int = ERROR_TIMESTAMP, owner_parts: tuple[str, str] | None = None) -> CreateDelegationTokenResponse:
    named = version >= 3  # CreateDelegationTokenResponse.prepareResponse names the requester from v3
    # The answer names the owner as the request did (a type may hold a ':'); only the stored "Type:name" string is
    # split again at its first ':' when a token is described or logged in with.
    owner_type, owner_name = owner_parts or (principal_type(owner), principal_name(owner))
    return CreateDelegationTokenResponse(
        error_code=code, principal_type=owner_type, principal_name=owner_name,
        token_requester_principal_type=principal_type(requester) if named else "",
        token_requester_principal_name=principal_name(requester) if named else "",
        issue_timestamp_ms=token.issue_ms if token else timestamp, expiry_timestamp_ms=token.expiry_ms if token else timestamp,
        max_timestamp_ms=token.max_ms if token else timestamp, token_id=token.token_id if token else "",
        hmac=token.hmac if token else b"", throttle_time_ms=0)


def create_error_response(request: messages.CreateDelegationTokenRequest, code: int, message: str | None,
                          version: int = 3) -> CreateDelegationTokenResponse:
    return _created(version, ANONYMOUS, ANONYMOUS, code)


def renew_error_response(request: messages.RenewDelegationTokenRequest, code: int, message: str | None) -> RenewDelegationTokenResponse:
    return RenewDelegationTokenResponse(error_code=code, throttle_time_ms=0)


def expire_error_response(request: messages.ExpireDelegationTokenRequest, code: int, message: str | None) -> ExpireDelegationTokenResponse:
    return ExpireDelegationTokenResponse(error_code=code, throttle_time_ms=0)


def describe_error_response(request: messages.DescribeDelegationTokenRequest, code: int, message: str | None) -> DescribeDelegationTokenResponse:
    return DescribeDelegationTokenResponse(error_code=code, tokens=[], throttle_time_ms=0)


@handles(ApiKey.CREATE_DELEGATION_TOKEN, 0, 3, error_response=create_error_response)
def create_delegation_token(ctx: RequestContext, request: messages.CreateDelegationTokenRequest) -> CreateDelegationTokenResponse:
    requester = ctx.principal
    owner, parts = requester, None
    if request.owner_principal_name:
        if request.owner_principal_type is None:
            # Kafka builds the owner's principal before any check, and a null type makes that throw: the request's
            # generic error answer (UNKNOWN_SERVER_ERROR, ANONYMOUS), even on a connection refused token requests.
            return create_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None, ctx.api_version)
        parts = (request.owner_principal_type, request.owner_principal_name)
        owner = f"{parts[0]}:{parts[1]}"
    renewers = [f"{r.principal_type}:{r.principal_name}" for r in request.renewers]
    if not token_requests_allowed(ctx):
        return _created(ctx.api_version, owner, requester, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner_parts=parts)
    if owner != requester and not allowed(ctx, _CREATE_FOR_OTHERS, owner):
        return _created(ctx.api_version, owner, requester, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner_parts=parts)
    if any(principal_type(r) != "User" for r in renewers):
        return _created(ctx.api_version, owner, requester, ErrorCode.INVALID_PRINCIPAL_TYPE, owner_parts=parts)
    tokens = ctx.services.tokens
    if tokens is None or not tokens.enabled:
        return _created(ctx.api_version, owner, requester, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, timestamp=0,
                        owner_parts=parts)
    result = tokens.create(owner, requester, renewers, request.max_lifetime_ms)
    return _created(ctx.api_version, owner, requester, result.error, result.token, timestamp=0, owner_parts=parts)


# -- RenewDelegationToken / ExpireDelegationToken ------------------------------------------------------------------

@handles(ApiKey.RENEW_DELEGATION_TOKEN, 0, 2, error_response=renew_error_response)
def renew_delegation_token(ctx: RequestContext, request: messages.RenewDelegationTokenRequest) -> RenewDelegationTokenResponse:
    return _change_expiry(ctx, RenewDelegationTokenResponse, lambda tokens: tokens.renew(
        ctx.principal, bytes(request.hmac), request.renew_period_ms))


@handles(ApiKey.EXPIRE_DELEGATION_TOKEN, 0, 2, error_response=expire_error_response)
def expire_delegation_token(ctx: RequestContext, request: messages.ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse:
    return _change_expiry(ctx, ExpireDelegationTokenResponse, lambda tokens: tokens.expire(
        ctx.principal, bytes(request.hmac), request.expiry_time_period_ms))


def _change_expiry(ctx: RequestContext, response: type, change: Callable[[DelegationTokens], tuple[int, int]]) -> Any:
    """Renew and Expire alike: refused where token requests are not allowed (an error timestamp), or with tokens
    disabled (the schema's default timestamp, as Kafka leaves it); else the token state's code and new expiry."""
    if not token_requests_allowed(ctx):
        return response(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry_timestamp_ms=ERROR_TIMESTAMP, throttle_time_ms=0)
    tokens = ctx.services.tokens
    if tokens is None:
        return response(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, throttle_time_ms=0)
    code, expiry = change(tokens)
    return response(error_code=code, expiry_timestamp_ms=expiry, throttle_time_ms=0)


# -- DescribeDelegationToken ---------------------------------------------------------------------------------------

@handles(ApiKey.DESCRIBE_DELEGATION_TOKEN, 0, 3, error_response=describe_error_response)
def describe_delegation_token(ctx: RequestContext, request: messages.DescribeDelegationTokenRequest) -> DescribeDelegationTokenResponse:
    def answer(code: int, described: list[Token] = ()) -> DescribeDelegationTokenResponse:
        return DescribeDelegationTokenResponse(error_code=code, tokens=[_described(t, ctx.api_version) for t in described],
                                               throttle_time_ms=0)

    if not token_requests_allowed(ctx):
        return answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    tokens = ctx.services.tokens
    if tokens is None or not tokens.enabled:
        return answer(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
    owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]
    if owners == []:
        return answer(ErrorCode.NONE)
    by_id = {t.token_id: t for t in tokens.tokens()}
    cache_order = [by_id[i] for i in java_hash_map_order(by_id, java_string_hash)]
    return answer(ErrorCode.NONE, [t for t in cache_order if _eligible(ctx, owners, t)])


def _eligible(ctx: RequestContext, owners: list[str] | None, token: Token) -> bool:
    """DelegationTokenManager.filterToken."""
    if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
        return False
    if token.owner_or_renewer(ctx.principal):
        return True
    return allowed(ctx, _DESCRIBE_TOKEN, token.token_id) or allowed(ctx, _DESCRIBE_OWNERS_TOKENS, token.owner)


def _described(token: Token, version: int) -> DescribeDelegationTokenResponse.DescribedDelegationToken:
    named = version >= 3
    return DescribeDelegationTokenResponse.DescribedDelegationToken(
        principal_type=principal_type(token.owner), principal_name=principal_name(token.owner),
        token_requester_principal_type=principal_type(token.requester) if named else "",
        token_requester_principal_name=principal_name(token.requester) if named else "", issue_timestamp=token.issue_ms,
        expiry_timestamp=token.expiry_ms, max_timestamp=token.max_ms, token_id=token.token_id, hmac=token.hmac,
        renewers=[DescribeDelegationTokenResponse.DescribedDelegationTokenRenewer(
            principal_type=principal_type(r), principal_name=principal_name(r)) for r in token.renewers])

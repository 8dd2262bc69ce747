"""DescribeUserScramCredentials (50), v0, and AlterUserScramCredentials (51), v0, as a Kafka 3.9 KRaft broker answers.

Behaviour. Describe is answered by the broker from its metadata image (ScramImage.describe); Alter is forwarded
to the controller (ControllerApis, ScramControlManager.alterCredentials). Each first asks the check declared in
authorizer.api_checks (DESCRIBE, resp. ALTER, on the cluster) and without it answers Kafka's getErrorResponse
with 31 for every user. Both build their results by iterating Java HashMaps, so kafka-shim reproduces that
order (javacompat.java_hash). Credentials live in the broker's SCRAM store (``services.scram``), which the
Broker always opens, also without SASL listeners, because Kafka always has a SCRAM image.

Version notes. Only v0 exists (KIP-554).
"""

from __future__ import annotations

import structlog
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafka_shim.shim.handlers import CloseConnection, handles
from kafka_shim.shim.javacompat.java_hash import JavaHashMap, java_order, java_sorted
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore, ScramStoreError, Upsertion
from kafka_shim.shim.security.sasl.scram_math import BY_TYPE, MAX_ITERATIONS, MECHANISMS

log = structlog.get_logger("kafka_shim.scram_credentials")

DESCRIBE_DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
DESCRIBE_USER_THAT_DOES_NOT_EXIST = "Attempt to describe a user credential that does not exist: "
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
EMPTY_USERNAME = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"
TOO_FEW_ITERATIONS = "Too few iterations"
TOO_MANY_ITERATIONS = "Too many iterations"

_DescribeResult = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_CredentialInfo = DescribeUserScramCredentialsResponse.CredentialInfo
_AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
Error = tuple[int, str | None]


def _store(ctx: RequestContext) -> ScramCredentialStore:
    store = ctx.services.scram
    if store is None:  # the Broker always opens one; only a context built by hand can lack it
        raise RuntimeError("this broker's services carry no SCRAM credential store")
    return store


def _describe_refused(request: DescribeUserScramCredentialsRequest, code: int) -> DescribeUserScramCredentialsResponse:
    """Kafka's getErrorResponse: one row per requested user, without the user's name, and no message (ApiError
    drops a message that is the error's default text)."""
    if request.users is None:
        # Kafka's error response walks the request's user list and fails on a null one, so the request is
        # never answered; closing is the honest equivalent.
        raise CloseConnection("DescribeUserScramCredentials with a null user list, not authorized: Kafka never answers it")
    rows = [_DescribeResult(user="", error_code=code, error_message=None) for _ in request.users]
    return DescribeUserScramCredentialsResponse(error_code=code, error_message=None, results=rows)


def _alter_refused(request: AlterUserScramCredentialsRequest, code: int, message: str | None) -> AlterUserScramCredentialsResponse:
    """Kafka's getErrorResponse: every user named anywhere in the request, once, in String order."""
    users = {d.name for d in request.deletions} | {u.name for u in request.upsertions}
    return AlterUserScramCredentialsResponse(results=[
        _AlterResult(user=user, error_code=code, error_message=message) for user in java_sorted(users)
    ])


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
def describe_user_scram_credentials(ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    refused = refused_whole(ctx, request)
    if refused is not None:
        return _describe_refused(request, refused.error_code)
    store = _store(ctx)
    unique: JavaHashMap[bool] = JavaHashMap()  # user -> asked for more than once
    if not request.users:
        for mechanism in MECHANISMS:
            for user in java_order(store.users(mechanism)):
                unique.put(user, False)
    else:
        for entry in request.users:
            unique.put(entry.name, entry.name in unique)
    described = store.describe()
    results = []
    for user, duplicate in unique.items():
        if duplicate:
            results.append(_DescribeResult(user=user, error_code=ErrorCode.DUPLICATE_RESOURCE, error_message=DESCRIBE_DUPLICATE_USER + user))
        elif user in described:
            infos = [_CredentialInfo(mechanism=MECHANISMS[m].type, iterations=it) for m, it in described[user].items()]
            results.append(_DescribeResult(user=user, error_code=ErrorCode.NONE, error_message="", credential_infos=infos))
        else:
            results.append(_DescribeResult(user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                                           error_message=DESCRIBE_USER_THAT_DOES_NOT_EXIST + user))
    return DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, error_message="", results=results)


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
def alter_user_scram_credentials(ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    refused = refused_whole(ctx, request)
    if refused is not None:
        return _alter_refused(request, refused.error_code, controller_not_authorized_message(ctx))
    store = _store(ctx)
    deletions: JavaHashMap[AlterUserScramCredentialsRequest.ScramCredentialDeletion] = JavaHashMap()
    upsertions: JavaHashMap[AlterUserScramCredentialsRequest.ScramCredentialUpsertion] = JavaHashMap()
    errors: JavaHashMap[Error] = JavaHashMap()
    # ScramControlManager.alterCredentials, step by step: a user is the unit, whatever the mechanism.
    for deletion in request.deletions:
        if deletion.name in errors:
            continue
        if deletion.name in deletions:
            deletions.remove(deletion.name)
            errors.put(deletion.name, (ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE))
            continue
        error = _deletion_error(store, deletion)
        if error is not None:
            errors.put(deletion.name, error)
        else:
            deletions.put(deletion.name, deletion)
    for upsertion in request.upsertions:
        if upsertion.name in errors:
            continue
        if upsertion.name in deletions or upsertion.name in upsertions:
            deletions.remove(upsertion.name)
            upsertions.remove(upsertion.name)
            errors.put(upsertion.name, (ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE))
            continue
        error = _upsertion_error(upsertion)
        if error is not None:
            errors.put(upsertion.name, error)
        else:
            upsertions.put(upsertion.name, upsertion)
    results = [_AlterResult(user=d.name, error_code=ErrorCode.NONE, error_message=None) for d in deletions.values()]
    changes = []
    for up in upsertions.values():
        if not up.salted_password:
            # Kafka derives the keys with an HMAC keyed by the salted password; Java refuses an empty key, and the
            # resulting IllegalArgumentException becomes ErrorCode.UNKNOWN_SERVER_ERROR without a message.
            errors.put(up.name, (ErrorCode.UNKNOWN_SERVER_ERROR, None))
            continue
        changes.append(Upsertion(up.name, BY_TYPE[up.mechanism].name, bytes(up.salt), bytes(up.salted_password), up.iterations))
        results.append(_AlterResult(user=up.name, error_code=ErrorCode.NONE, error_message=None))
    removals = [(d.name, BY_TYPE[d.mechanism].name) for d in deletions.values()]
    if removals or changes:
        try:
            store.alter(removals, changes)
        except ScramStoreError as exc:
            # Nothing was applied; like a controller that cannot write its log, answer every change with an error.
            log.error("scram_credentials_not_saved", error=str(exc))
            results = [_AlterResult(user=r.user, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None) for r in results]
        else:
            log.info("scram_credentials_altered", principal=ctx.principal, deleted=removals,
                     upserted=[(c.user, c.mechanism, c.iterations) for c in changes])
    results += [_AlterResult(user=user, error_code=code, error_message=message) for user, (code, message) in errors.items()]
    return AlterUserScramCredentialsResponse(results=results)


def _name_and_mechanism_error(name: str, mechanism: int) -> Error | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USERNAME
    if mechanism not in BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM
    return None


def _deletion_error(store: ScramCredentialStore, deletion: AlterUserScramCredentialsRequest.ScramCredentialDeletion) -> Error | None:
    error = _name_and_mechanism_error(deletion.name, deletion.mechanism)
    if error is None and store.lookup(deletion.name, BY_TYPE[deletion.mechanism].name) is None:
        error = ErrorCode.RESOURCE_NOT_FOUND, DELETE_MISSING
    return error


def _upsertion_error(upsertion: AlterUserScramCredentialsRequest.ScramCredentialUpsertion) -> Error | None:
    error = _name_and_mechanism_error(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < BY_TYPE[upsertion.mechanism].min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_ITERATIONS
    return None


def controller_not_authorized_message(ctx: RequestContext) -> str:
    """Kafka's ClusterAuthorizationException text as the controller words it for a forwarded request, "Request <the
    request, as Scala prints it> is not authorized.", with kafka-shim's connection in place of Kafka's processor and
    buffer details (the broker's own wording is requests.authz.not_authorized_message)."""
    listener = ctx.listener
    return (f"Request Request(processor=0, connectionId={ctx.client_host}:{ctx.client_port}, "
            f"session=Session({ctx.principal},/{ctx.client_host}), listenerName=ListenerName({listener.name}), "
            f"securityProtocol={listener.security_protocol}, envelope=None) is not authorized.")

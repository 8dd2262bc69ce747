"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), as a Kafka 3.9 KRaft broker answers them.

Describe is answered by the broker from its metadata image (ScramImage.describe); Alter is forwarded to the
controller (ControllerApis, ScramControlManager.alterCredentials). Both build their results by iterating Java
HashMaps, so kafka-shim reproduces that order (shim.sasl.java_order). Credentials live in
``ctx.services.scram`` (shim.security.sasl.credentials.ScramCredentialStore).
"""

from __future__ import annotations

import structlog
from kafka_shim.authorizer import AclOperation, ResourceType
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafka_shim.shim.handlers import CloseConnection, handles
from kafka_shim.shim.javacompat.java_hash import JavaHashMap, java_order, java_sorted
from kafka_shim.shim.requests.authz import authorize
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore, ScramStoreError, Upsertion
from kafka_shim.shim.security.sasl.scram_math import BY_TYPE, MAX_ITERATIONS, MECHANISMS

log = structlog.get_logger("kafka_shim.scram_credentials")

CLUSTER_NAME = "kafka-cluster"

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


def credential_store(ctx: RequestContext) -> ScramCredentialStore:
    """The broker's store (the broker opens one at start, also without SASL listeners)."""
    store = ctx.services.scram
    assert store is not None, "the broker opens the SCRAM store when it starts"
    return store


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
def describe_user_scram_credentials(ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        if request.users is None:
            # Kafka's error response walks the request's user list and fails on a null one, so the request is
            # never answered; closing is the honest equivalent.
            raise CloseConnection("DescribeUserScramCredentials with a null user list, not authorized: Kafka never answers it")
        # Kafka's getErrorResponse: one row per requested user, without the user's name, and no message
        # (ApiError drops a message that is the error's default text).
        rows = [_DescribeResult(user="", error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None) for _ in request.users]
        return DescribeUserScramCredentialsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, results=rows)
    store = credential_store(ctx)
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
    if not authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        # Kafka's getErrorResponse: every user named anywhere in the request, once, in String order.
        users = {d.name for d in request.deletions} | {u.name for u in request.upsertions}
        message = not_authorized_message(ctx)
        return AlterUserScramCredentialsResponse(results=[
            _AlterResult(user=user, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=message) for user in java_sorted(users)
        ])
    store = credential_store(ctx)
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


def not_authorized_message(ctx: RequestContext) -> str:
    """Kafka's ClusterAuthorizationException text, "Request <the request, as Scala prints it> is not authorized.",
    with kafka-shim's connection in place of Kafka's processor and buffer details."""
    listener = ctx.listener
    return (f"Request Request(processor=0, connectionId={ctx.client_host}:{ctx.client_port}, "
            f"session=Session({ctx.principal},/{ctx.client_host}), listenerName=ListenerName({listener.name}), "
            f"securityProtocol={listener.security_protocol}, envelope=None) is not authorized.")

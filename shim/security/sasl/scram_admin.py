"""SCRAM credential administration over the broker's store, as Kafka 3.9 does it for the admin APIs 50 and 51.

Describe follows the broker's metadata image (ScramImage.describe); alter follows the controller
(ScramControlManager.alterCredentials): a user is the unit, whatever the mechanism, and a user named twice in
one request fails as a whole. Both build their results by iterating Java HashMaps, so the order is Java's
(javacompat.java_hash). Inputs and outputs are plain values (mechanisms as their wire type codes); the
DescribeUserScramCredentials / AlterUserScramCredentials handlers translate the wire messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.java_hash import JavaHashMap, java_order
from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore, ScramStoreError, Upsertion
from kafka_shim.shim.security.sasl.scram_math import BY_TYPE, MAX_ITERATIONS, MECHANISMS

log = get_logger("kafka_shim.scram_credentials")

# Kafka's texts (ScramImage, ScramControlManager).
DESCRIBE_DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
DESCRIBE_USER_THAT_DOES_NOT_EXIST = "Attempt to describe a user credential that does not exist: "
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
EMPTY_USERNAME = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"
TOO_FEW_ITERATIONS = "Too few iterations"
TOO_MANY_ITERATIONS = "Too many iterations"

Error = tuple[int, str | None]


@dataclass(frozen=True, slots=True)
class Deletion:
    user: str
    mechanism: int  # wire type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512


@dataclass(frozen=True, slots=True)
class Change:
    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True)
class UserResult:
    user: str
    error_code: int
    error_message: str | None
    credentials: tuple[tuple[int, int], ...] = ()  # (mechanism wire type, iterations), described users only


def describe(store: ScramCredentialStore, users: Sequence[str] | None) -> list[UserResult]:
    """One result per distinct user asked for (every user with a credential when ``users`` is empty or None)."""
    unique: JavaHashMap[bool] = JavaHashMap()  # user -> asked for more than once
    if not users:
        for mechanism in MECHANISMS:
            for user in java_order(store.users(mechanism)):
                unique.put(user, False)
    else:
        for user in users:
            unique.put(user, user in unique)
    described = store.describe()
    results = []
    for user, duplicate in unique.items():
        if duplicate:
            results.append(UserResult(user, ErrorCode.DUPLICATE_RESOURCE, DESCRIBE_DUPLICATE_USER + user))
        elif user in described:
            infos = tuple((MECHANISMS[m].type, it) for m, it in described[user].items())
            results.append(UserResult(user, ErrorCode.NONE, "", infos))
        else:
            results.append(UserResult(user, ErrorCode.RESOURCE_NOT_FOUND, DESCRIBE_USER_THAT_DOES_NOT_EXIST + user))
    return results


def alter(store: ScramCredentialStore, deletions: Sequence[Deletion], changes: Sequence[Change], *, principal: str) -> list[UserResult]:
    """Validate and apply one request's changes together; one result per user, in Kafka's order."""
    deleting: JavaHashMap[Deletion] = JavaHashMap()
    upserting: JavaHashMap[Change] = JavaHashMap()
    errors: JavaHashMap[Error] = JavaHashMap()
    # ScramControlManager.alterCredentials, step by step: a user is the unit, whatever the mechanism.
    for deletion in deletions:
        if deletion.user in errors:
            continue
        if deletion.user in deleting:
            deleting.remove(deletion.user)
            errors.put(deletion.user, (ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE))
            continue
        error = _deletion_error(store, deletion)
        if error is not None:
            errors.put(deletion.user, error)
        else:
            deleting.put(deletion.user, deletion)
    for change in changes:
        if change.user in errors:
            continue
        if change.user in deleting or change.user in upserting:
            deleting.remove(change.user)
            upserting.remove(change.user)
            errors.put(change.user, (ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE))
            continue
        error = _change_error(change)
        if error is not None:
            errors.put(change.user, error)
        else:
            upserting.put(change.user, change)
    results = [UserResult(d.user, ErrorCode.NONE, None) for d in deleting.values()]
    upsertions = []
    for up in upserting.values():
        if not up.salted_password:
            # Kafka derives the keys with an HMAC keyed by the salted password; Java refuses an empty key, and the
            # resulting IllegalArgumentException becomes ErrorCode.UNKNOWN_SERVER_ERROR without a message.
            errors.put(up.user, (ErrorCode.UNKNOWN_SERVER_ERROR, None))
            continue
        upsertions.append(Upsertion(up.user, BY_TYPE[up.mechanism].name, up.salt, up.salted_password, up.iterations))
        results.append(UserResult(up.user, ErrorCode.NONE, None))
    removals = [(d.user, BY_TYPE[d.mechanism].name) for d in deleting.values()]
    if removals or upsertions:
        try:
            store.alter(removals, upsertions)
        except ScramStoreError as exc:
            # Nothing was applied; like a controller that cannot write its log, answer every change with an error.
            log.error("scram_credentials_not_saved", error=str(exc))
            results = [UserResult(r.user, ErrorCode.UNKNOWN_SERVER_ERROR, None) for r in results]
        else:
            log.info("scram_credentials_altered", principal=principal, deleted=removals,
                     upserted=[(c.user, c.mechanism, c.iterations) for c in upsertions])
    results += [UserResult(user, code, message) for user, (code, message) in errors.items()]
    return results


def _name_and_mechanism_error(user: str, mechanism: int) -> Error | None:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USERNAME
    if mechanism not in BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM
    return None


def _deletion_error(store: ScramCredentialStore, deletion: Deletion) -> Error | None:
    error = _name_and_mechanism_error(deletion.user, deletion.mechanism)
    if error is None and store.lookup(deletion.user, BY_TYPE[deletion.mechanism].name) is None:
        error = ErrorCode.RESOURCE_NOT_FOUND, DELETE_MISSING
    return error


def _change_error(change: Change) -> Error | None:
    error = _name_and_mechanism_error(change.user, change.mechanism)
    if error is not None:
        return error
    if change.iterations < BY_TYPE[change.mechanism].min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS
    if change.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_ITERATIONS
    return None

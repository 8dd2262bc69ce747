"""DescribeUserScramCredentials (50), v0, and AlterUserScramCredentials (51), v0, as a Kafka 3.9 KRaft broker answers.

Behaviour. Each first asks the check declared in authorizer.api_checks (DESCRIBE, resp. ALTER, on the cluster)
and without it answers Kafka's getErrorResponse with 31 for every user. Describe is answered from the broker's
metadata image (ScramImage.describe); Alter is forwarded to the controller (ControllerApis,
ScramControlManager.alterCredentials). The work, and Kafka's result order, is security.sasl.scram_admin's over
the broker's SCRAM store (``services.scram``), which the Broker always opens, also without SASL listeners,
because Kafka always has a SCRAM image. This module translates the wire messages.

Version notes. Only v0 exists (KIP-554).
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import AlterUserScramCredentialsResponse, DescribeUserScramCredentialsResponse
from kafka_shim.shim.handlers import CloseConnection, handles
from kafka_shim.shim.javacompat.utf16 import java_sorted
from kafka_shim.shim.requests.authz import refused_whole, session_text
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.security.sasl import scram_admin
from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore

_DescribeResult = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_CredentialInfo = DescribeUserScramCredentialsResponse.CredentialInfo
_AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


def _store(ctx: RequestContext) -> ScramCredentialStore:
    store = ctx.services.scram
    if store is None:  # the Broker always opens one; only a context built by hand can lack it
        raise RuntimeError("this broker's services carry no SCRAM credential store")
    return store


def _describe_refused(request: messages.DescribeUserScramCredentialsRequest, code: int,
                      without_rows: bool = False) -> DescribeUserScramCredentialsResponse:
    """Kafka's getErrorResponse: one row per requested user, without the user's name, and no message (ApiError
    drops a message that is the error's default text). ``without_rows``: an emulated release before 3.2, which
    answered the top-level code alone (api_checks.releases)."""
    if without_rows:
        return DescribeUserScramCredentialsResponse(error_code=code, error_message=None, results=[])
    if request.users is None:
        # Kafka's error response walks the request's user list and fails on a null one, so the request is
        # never answered; closing is the honest equivalent.
        raise CloseConnection("DescribeUserScramCredentials with a null user list, not authorized: Kafka never answers it")
    rows = [_DescribeResult(user="", error_code=code, error_message=None) for _ in request.users]
    return DescribeUserScramCredentialsResponse(error_code=code, error_message=None, results=rows)


def _alter_refused(request: messages.AlterUserScramCredentialsRequest, code: int, message: str | None) -> AlterUserScramCredentialsResponse:
    """Kafka's getErrorResponse: every user named anywhere in the request, once, in String order."""
    users = {d.name for d in request.deletions} | {u.name for u in request.upsertions}
    return AlterUserScramCredentialsResponse(results=[
        _AlterResult(user=user, error_code=code, error_message=message) for user in java_sorted(users)
    ])


def describe_error_response(request: messages.DescribeUserScramCredentialsRequest, code: int,
                            message: str | None) -> DescribeUserScramCredentialsResponse | None:
    """DescribeUserScramCredentialsRequest.getErrorResponse (None: a null user list, which Kafka never answers)."""
    if request.users is None:
        return None
    rows = [_DescribeResult(user="", error_code=code, error_message=message) for _ in request.users]
    return DescribeUserScramCredentialsResponse(error_code=code, error_message=message, results=rows)


def alter_error_response(request: messages.AlterUserScramCredentialsRequest, code: int,
                         message: str | None) -> AlterUserScramCredentialsResponse:
    """AlterUserScramCredentialsRequest.getErrorResponse."""
    return _alter_refused(request, code, message)


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, error_response=describe_error_response)
def describe_user_scram_credentials(ctx: RequestContext,
                                    request: messages.DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    refused = refused_whole(ctx, request)
    if refused is not None:
        return _describe_refused(request, refused.error_code, ctx.services.release_rules.describe_scram_refused_without_rows)
    users = [u.name for u in request.users] if request.users is not None else None
    results = [
        _DescribeResult(user=r.user, error_code=r.error_code, error_message=r.error_message,
                        credential_infos=[_CredentialInfo(mechanism=m, iterations=it) for m, it in r.credentials])
        for r in scram_admin.describe(_store(ctx), users)
    ]
    return DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, error_message="", results=results)


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, error_response=alter_error_response)
def alter_user_scram_credentials(ctx: RequestContext,
                                 request: messages.AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    refused = refused_whole(ctx, request)
    if refused is not None:
        return _alter_refused(request, refused.error_code, controller_not_authorized_message(ctx))
    deletions = [scram_admin.Deletion(d.name, d.mechanism) for d in request.deletions]
    changes = [scram_admin.Change(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password)) for u in request.upsertions]
    results = scram_admin.alter(_store(ctx), deletions, changes, principal=ctx.principal)
    return AlterUserScramCredentialsResponse(results=[
        _AlterResult(user=r.user, error_code=r.error_code, error_message=r.error_message) for r in results
    ])


def controller_not_authorized_message(ctx: RequestContext) -> str:
    """Kafka's ClusterAuthorizationException text as the controller words it for a forwarded request, "Request <the
    request, as Scala prints it> is not authorized.", with kafka-shim's connection in place of Kafka's processor and
    buffer details (the broker's own wording is requests.authz.not_authorized_message)."""
    listener = ctx.listener
    return (f"Request Request(processor=0, connectionId={ctx.client_host}:{ctx.client_port}, "
            f"session={session_text(ctx)}, listenerName=ListenerName({listener.name}), "
            f"securityProtocol={listener.security_protocol}, envelope=None) is not authorized.")

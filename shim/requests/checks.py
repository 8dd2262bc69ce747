"""Handlers ask authorizer.api_checks what a request needs and put the questions to the authorizer here.

No handler is registered in this module; it holds the few helpers the handlers share.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_shim.authorizer.api_checks import Check, Mode, declaration, distinct_names
from kafka_shim.shim.requests import authz
from kafka_shim.shim.requests.context import RequestContext


def check(api_key: int, key: str) -> Check:
    """The declared check ``key`` of an API (KeyError names the declared ones)."""
    decl = declaration(api_key)
    if decl is None:
        raise KeyError(f"api key {api_key} declares no ACL checks")
    return decl.check(key)


def allowed(ctx: RequestContext, c: Check, name: str, ref_count: int = 1) -> bool:
    """One declared action, asked with the check's logging flags (always allowed without an authorizer)."""
    return authz.authorize(ctx, c.operation, c.resource_type, name, ref_count=ref_count,
                           log_if_allowed=c.log_if_allowed, log_if_denied=c.log_if_denied)


def shortcut_allowed(ctx: RequestContext, c: Check) -> bool:
    """Whether the check's shortcut (e.g. CREATE on CLUSTER) grants it whole; False when it has none."""
    s = c.shortcut
    if s is None:
        return False
    return authz.authorize(ctx, s.operation, s.resource_type, s.name, log_if_allowed=c.log_if_allowed, log_if_denied=s.log_if_denied)


def allowed_names(ctx: RequestContext, c: Check, names: Iterable[str]) -> set[str]:
    """The distinct names the check allows, each asked once with its number of occurrences as ref count."""
    if shortcut_allowed(ctx, c):
        return set(names)
    return {name for name, count in distinct_names(names) if allowed(ctx, c, name, count)}


def refused_whole(ctx: RequestContext, request: object) -> Check | None:
    """The first AUTHORIZE_OR_THROW check of the request's API that it fails, or None when all pass."""
    decl = declaration(ctx.api_key)
    for c in decl.checks if decl is not None else ():
        if c.mode is not Mode.AUTHORIZE_OR_THROW or not c.applies_to(request, ctx.api_version) or shortcut_allowed(ctx, c):
            continue
        for name, count in distinct_names(c.names(request, ctx.api_version) or []):
            if not allowed(ctx, c, name, count):
                return c
    return None


def not_authorized_message(ctx: RequestContext) -> str:
    """Kafka's ClusterAuthorizationException text, which quotes the request's connection as Kafka renders it."""
    host, port = ctx.services.endpoints.advertised(ctx.listener.name)
    client = f"{ctx.client_host}:{ctx.client_port}"
    return (f"Request Request(processor=0, connectionId={host}:{port}-{client}-0, session=Session({ctx.principal},/{ctx.client_host}), "
            f"listenerName=ListenerName({ctx.listener.name}), securityProtocol={ctx.listener.security_protocol}, "
            f"buffer=null, envelope=None) is not authorized.")

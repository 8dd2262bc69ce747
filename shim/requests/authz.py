"""The one route from a handler to the authorizer: it asks only what authorizer.api_checks declares.

A handler names a declared check (``check(ApiKey.METADATA, "describe")``) and asks it here, so the broker and a
trace auditor reading ``api_checks.requirements()`` see the same questions: the same operation, resource type,
shortcut and logging flags. Each question carries the request's principal, client address and API name, as
Kafka's AuthHelper asks it. With no authorizer configured every check passes and bitfields are the full
supported set, as in Kafka.

While a trace is being captured (``ctx.decisions`` is a list, see shim.tap) every question is also recorded there,
in the order asked, as a plain tuple in ``shim.tap.TappedDecision``'s field order (cheapest to build, and what the
capture hands its writer process as it is): each ``authorize`` with the rule that decided, as the audit log's text
(whether or not Kafka would audit-log it), each KIP-679 ``authorizeByResourceType`` and each KIP-430 bitfield computed. Without an
authorizer nothing is recorded: Kafka makes no decisions then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kafka_shim.authorizer import SUPPORTED_BITS, AclOperation, ResourceType
from kafka_shim.authorizer.api_checks import Bitfield, Check, Mode, declaration, distinct_names
from kafka_shim.authorizer.api_checks.releases import TOPIC_DESCRIBE_BEFORE_1_0
from kafka_shim.authorizer.engine import MATCHING_ACL_UNRESOLVED
from kafka_shim.protocol.framing import api_name
from kafka_shim.shim.javacompat.hash_orders import scala_immutable_map_order, scala_mutable_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.requests.context import RequestContext


def check(api_key: int, key: str) -> Check:
    """The declared check ``key`` of an API (KeyError names the declared ones)."""
    decl = declaration(api_key)
    if decl is None:
        raise KeyError(f"api key {api_key} declares no ACL checks")
    return decl.check(key)


def allowed(ctx: RequestContext, c: Check, name: str, ref_count: int = 1) -> bool:
    """One declared action, asked with the check's logging flags (always allowed without an authorizer)."""
    return _authorize(ctx, c.operation, c.resource_type, name, ref_count=ref_count,
                      log_if_allowed=c.log_if_allowed, log_if_denied=c.log_if_denied)


def shortcut_allowed(ctx: RequestContext, c: Check) -> bool:
    """Whether the check's shortcut (e.g. CREATE on CLUSTER) grants it whole; False when it has none."""
    s = c.shortcut
    if s is None:
        return False
    return _authorize(ctx, s.operation, s.resource_type, s.name, log_if_allowed=c.log_if_allowed, log_if_denied=s.log_if_denied)


def allowed_names(ctx: RequestContext, c: Check, names: Iterable[str]) -> set[str]:
    """The names the check allows: all when its shortcut (e.g. CREATE on CLUSTER) does, else ``filter_by_authorized``."""
    if ctx.services.authorizer is None or shortcut_allowed(ctx, c):
        return set(names)
    return filter_by_authorized(ctx, c, names)


def filter_by_authorized(ctx: RequestContext, c: Check, names: Iterable[str]) -> set[str]:
    """Kafka's AuthHelper.filterByAuthorized: the distinct names the check allows, each asked once with its number of
    occurrences as ref count, in the order Kafka asks them (``kafka_ask_order``)."""
    if ctx.services.authorizer is None:
        return set(names)
    return {name for name, count in kafka_ask_order(names) if allowed(ctx, c, name, count)}


def allowed_each(ctx: RequestContext, c: Check, names: Iterable[str]) -> set[str]:
    """The names the check allows, asked one by one in the order given (for APIs where Kafka loops over a listing
    itself, such as ListGroups, rather than calling filterByAuthorized)."""
    if ctx.services.authorizer is None or shortcut_allowed(ctx, c):
        return set(names)
    return {name for name in dict.fromkeys(names) if allowed(ctx, c, name)}


def kafka_ask_order(names: Iterable[str]) -> list[tuple[str, int]]:
    """(name, occurrences) in the order filterByAuthorized asks: it counts the names into a Scala mutable.HashMap
    (groupMapReduce) and converts that into an immutable Map before asking, so the order depends on the names' hashes
    and not on the request's order; the authorizer log and a captured trace list the decisions in it."""
    counted = distinct_names(names)
    if len(counted) < 2:
        return counted
    counts = dict(counted)
    order = scala_immutable_map_order(scala_mutable_map_order(counts, java_string_hash), java_string_hash)
    return [(name, counts[name]) for name in order]


def hidden_topics(ctx: RequestContext, names: Iterable[str], exists: Callable[[str], bool] | None = None) -> set[str]:
    """KAFKA-5547: on an emulated release before 1.0, the topics answered as UNKNOWN_TOPIC_OR_PARTITION before their
    operation is asked: those the principal may not DESCRIBE and, given ``exists``, those that do not exist. Empty
    for 1.0 and later, which ask the operation first (29) and existence second (3)."""
    if not ctx.services.release_rules.topics_hidden_as_unknown:
        return set()
    asked = list(names)
    describable = allowed_names(ctx, TOPIC_DESCRIBE_BEFORE_1_0, asked)
    return {name for name in asked if name not in describable or (exists is not None and not exists(name))}


def allowed_on_any(ctx: RequestContext, c: Check) -> bool:
    """KIP-679, for a check declared ``any_resource``: may the principal do it on at least one resource of the type?"""
    if not c.any_resource:
        raise ValueError(f"check {c.key!r} is not declared any_resource")
    az = ctx.services.authorizer
    if az is None:
        return True
    allowed = az.authorize_by_resource_type(ctx.principal, ctx.client_host, c.operation, c.resource_type, request=api_name(ctx.api_key))
    if ctx.decisions is not None:
        ctx.decisions.append(("by_resource_type", int(c.operation), int(c.resource_type), None, allowed, None, None, None))
    return allowed


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


def authorized_operations(ctx: RequestContext, bits: Bitfield, name: str) -> int:
    """A declared KIP-430 bitfield for the request's principal; every supported bit when no authorizer is configured."""
    az = ctx.services.authorizer
    if az is None:
        return SUPPORTED_BITS.get(int(bits.resource_type), 0)
    operations = az.authorized_operations(ctx.principal, ctx.client_host, bits.resource_type, name)
    if ctx.decisions is not None:
        ctx.decisions.append(("authorized_operations", None, int(bits.resource_type), name, None, None, None, operations))
    return operations


def bitfield(api_key: int, resource_type: ResourceType) -> Bitfield:
    """The bitfield an API declares for a resource type (KeyError when it declares none)."""
    decl = declaration(api_key)
    for bits in decl.bitfields if decl is not None else ():
        if bits.resource_type == resource_type:
            return bits
    raise KeyError(f"api key {api_key} declares no {resource_type.name} bitfield")


def not_authorized_message(ctx: RequestContext) -> str:
    """Kafka's ClusterAuthorizationException text, which quotes the request's connection as Kafka renders it."""
    host, port = ctx.services.endpoints.advertised(ctx.listener.name)
    client = f"{ctx.client_host}:{ctx.client_port}"
    return (f"Request Request(processor=0, connectionId={host}:{port}-{client}-0, session={session_text(ctx)}, "
            f"listenerName=ListenerName({ctx.listener.name}), securityProtocol={ctx.listener.security_protocol}, "
            f"buffer=null, envelope=None) is not authorized.")


def session_text(ctx: RequestContext) -> str:
    """The request's session as Kafka 3.9 prints it: org.apache.kafka.network.Session has no toString of its own, so
    Java prints its class and identity hash (arbitrary; here a hash of the principal and the client's address)."""
    identity = hash((ctx.principal, ctx.client_host, ctx.client_port)) & 0x7FFFFFFF
    return f"org.apache.kafka.network.Session@{identity:x}"


def _authorize(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str, *, ref_count: int = 1,
               log_if_allowed: bool = True, log_if_denied: bool = True) -> bool:
    """Kafka's allow/deny for one action by the request's principal (audit-logged as Kafka logs it)."""
    az = ctx.services.authorizer
    if az is None:
        return True
    allowed = az.authorize(ctx.principal, ctx.client_host, operation, resource_type, name, request=api_name(ctx.api_key),
                           resource_ref_count=ref_count, log_if_allowed=log_if_allowed, log_if_denied=log_if_denied)
    if ctx.decisions is not None:
        op, rtype = int(operation), int(resource_type)
        rule = az.last_rule
        if type(rule) is not str or rule == MATCHING_ACL_UNRESOLVED:  # the ACL's text: remembered per generation
            rule = az.decision_rule_text(ctx.principal, ctx.client_host, op, rtype, name, allowed)
        ctx.decisions.append(("authorize", op, rtype, name, allowed, rule, ref_count, None))
    metrics = ctx.services.metrics
    if metrics is not None:
        metrics.authorized(allowed)
    return allowed

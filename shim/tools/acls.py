"""``kafka-shim acls``: Kafka's kafka-acls.sh (kafka.admin.AclCommand of Kafka 3.9) over the project's own codec.

The flags, their defaults and expansions, the validation messages and the output layout are AclCommand's; the
command talks to any broker (kafka-shim or Apache Kafka) with CreateAcls, DescribeAcls and DeleteAcls at the
highest version both sides support. What differs on purpose: errors go to stderr without a Java stack trace, a
broker that cannot be reached fails at once instead of after the admin client's 60 s, and where kafka-acls.sh
prints a Java hash set (whose order comes from identity hash codes and changes between JVMs) the order here is
the broker's, or the order in which the flags were given.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

import structlog
from kafka_shim.authorizer import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka_shim.protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kafka_shim.shim.client.auth import BrokerError, ClientError, ClientSecurity, Session, client_security, connect, request
from kafka_shim.shim.config.broker_config import ConfigError

log = structlog.get_logger("kafka_shim.acls_cli")

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
OUR_VERSIONS = (0, 3)
CLUSTER_FILTER = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
ANY_ENTRY = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)
WILDCARD_HOST = "*"

# AclCommand's "only supports operations" lists, in the order Kafka 3.9 prints them (a Scala set's order, fixed
# for these sets, observed with kafka-acls.sh).
VALID_OPERATIONS_TEXT = {
    ResourceType.TOPIC: "Read, All, AlterConfigs, DescribeConfigs, Delete, Write, Alter, Create, Describe",
    ResourceType.GROUP: "Read, Delete, Describe, All",
    ResourceType.CLUSTER: "All, AlterConfigs, DescribeConfigs, IdempotentWrite, Alter, ClusterAction, Create, Describe",
    ResourceType.TRANSACTIONAL_ID: "Write, Describe, All",
    ResourceType.DELEGATION_TOKEN: "Describe, All",
    ResourceType.USER: "DescribeTokens, CreateTokens, All",
}
NO_RESOURCE = ("You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
               "or --delegation-token <Delegation Token ID>")
NO_PRINCIPAL = "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
HINT = "Run 'kafka-shim acls --help' for the options."


class UsageError(Exception):
    """kafka-acls.sh's printUsageAndExit: a mistake in the flags."""


class CommandError(Exception):
    """kafka-acls.sh's "Error while executing ACL command: ..."."""


# -- flags ----------------------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit 2; kafka-acls.sh exits 1 on any flag mistake
        raise UsageError(message)


def build_parser(prog: str = "kafka-shim acls") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="Add, remove and list ACLs on any Kafka broker, as Kafka's kafka-acls.sh does.",
                epilog="Names are Kafka's, case-insensitive: --operation Read|Write|Create|Delete|Alter|Describe|"
                       "ClusterAction|DescribeConfigs|AlterConfigs|IdempotentWrite|CreateTokens|DescribeTokens|All.")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]", help="the broker(s) to talk to (required)")
    p.add_argument("--command-config", metavar="FILE",
                   help="Kafka client properties: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*")
    actions = p.add_argument_group("actions (exactly one)")
    actions.add_argument("--add", action="store_true", help="add ACLs")
    actions.add_argument("--remove", action="store_true", help="remove ACLs (asks first, unless --force)")
    actions.add_argument("--list", action="store_true", help="list ACLs (of the given resources, or all)")
    res = p.add_argument_group("resources")
    res.add_argument("--topic", action="append", metavar="TOPIC", help="a topic; '*' means all topics")
    res.add_argument("--group", action="append", metavar="GROUP", help="a consumer group; '*' means all groups")
    res.add_argument("--cluster", action="store_true", help="the cluster (kafka-cluster)")
    res.add_argument("--transactional-id", action="append", metavar="ID", help="a transactional id; '*' means all")
    res.add_argument("--delegation-token", action="append", metavar="TOKEN", help="a delegation token id; '*' means all")
    res.add_argument("--user-principal", action="append", metavar="PRINCIPAL", help="a user principal, as a resource")
    res.add_argument("--resource-pattern-type", metavar="literal|prefixed|any|match",
                     help="literal (the default) or prefixed when adding; any or match also when listing or removing")
    acl = p.add_argument_group("ACL entries")
    acl.add_argument("--operation", action="append", metavar="OP", help="the operation allowed or denied (default: All)")
    acl.add_argument("--allow-principal", action="append", metavar="TYPE:NAME", help="e.g. User:alice; User:* means all users")
    acl.add_argument("--deny-principal", action="append", metavar="TYPE:NAME", help="DENY takes precedence over ALLOW")
    acl.add_argument("--allow-host", action="append", metavar="HOST", help="host of --allow-principal (default: *)")
    acl.add_argument("--deny-host", action="append", metavar="HOST", help="host of --deny-principal (default: *)")
    acl.add_argument("--principal", action="append", nargs="?", metavar="TYPE:NAME", help="--list only this principal's ACLs")
    conv = p.add_argument_group("conveniences")
    conv.add_argument("--producer", action="store_true", help="WRITE, DESCRIBE, CREATE on topics; WRITE, DESCRIBE on transactional ids")
    conv.add_argument("--consumer", action="store_true", help="READ, DESCRIBE on topics; READ on groups")
    conv.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    conv.add_argument("--force", action="store_true", help="do not ask before removing")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse and check the flags as AclCommandOptions.checkArgs does; UsageError with Kafka's message."""
    ns = build_parser().parse_args(argv)
    ns.pattern_type = _pattern_type(ns.resource_pattern_type)
    check_args(ns)
    return ns


def _pattern_type(text: str | None) -> PatternType:
    if text is None:
        return PatternType.LITERAL
    # joptsimple's EnumConverter: the constant's name, any case.
    for member in PatternType:
        if member.name == text.upper() and member != PatternType.UNKNOWN:
            return member
    raise UsageError(f"Cannot parse argument '{text}' of option resource-pattern-type; use one of any, match, literal, prefixed")


_LIST_EXCLUDES = ("producer", "consumer", "allow_host", "allow_principal", "deny_host", "deny_principal")
_ROLE_EXCLUDES = ("operation", "deny_principal", "deny_host")


def _given(ns: argparse.Namespace, name: str) -> bool:
    value = getattr(ns, name)
    return bool(value) if isinstance(value, bool) else value is not None


def _flag(name: str) -> str:
    return "[" + name.replace("_", "-") + "]"


def check_args(ns: argparse.Namespace) -> None:
    if not ns.bootstrap_server:
        raise UsageError("Missing required argument \"[bootstrap-server]\" (kafka-shim acls talks to a broker; "
                         "--authorizer is not supported)")
    if sum((ns.add, ns.remove, ns.list)) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    for used, excluded in (("list", _LIST_EXCLUDES), ("producer", _ROLE_EXCLUDES), ("consumer", _ROLE_EXCLUDES)):
        if _given(ns, used):
            for other in excluded:
                if _given(ns, other):
                    raise UsageError(f'Option "{_flag(used)}" can\'t be used with option "{_flag(other)}"')
    if ns.principal is not None and not ns.list:
        raise UsageError("The --principal option is only available if --list is set")
    if ns.producer and not ns.topic:
        raise UsageError("With --producer you must specify a --topic")
    if ns.idempotent and not ns.producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if ns.consumer and (not ns.topic or not ns.group or (not ns.producer and (ns.cluster or ns.transactional_id))):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id "
                         "option should be specified.")


# -- what the flags mean (AclCommand's getResourceFilter, getAcl and friends) ----------------------------------------


def resource_filters(ns: argparse.Namespace, die_if_none: bool = True) -> list[ResourcePatternFilter]:
    """The resources named by the flags, as filters with --resource-pattern-type, in flag order."""
    pt = ns.pattern_type
    found: list[ResourcePatternFilter] = []
    found += [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pt) for t in ns.topic or ()]
    # As in Kafka, --cluster (and --idempotent) count only with the literal pattern type.
    if pt == PatternType.LITERAL and (ns.cluster or ns.idempotent):
        found.append(CLUSTER_FILTER)
    found += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), pt) for g in ns.group or ()]
    # Kafka trims every resource name but transactional ids.
    found += [ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pt) for t in ns.transactional_id or ()]
    found += [ResourcePatternFilter(ResourceType.DELEGATION_TOKEN, d.strip(), pt) for d in ns.delegation_token or ()]
    found += [ResourcePatternFilter(ResourceType.USER, u.strip(), pt) for u in ns.user_principal or ()]
    if not found and die_if_none:
        raise UsageError(NO_RESOURCE)
    return list(dict.fromkeys(found))


def parse_principal(text: str) -> str:
    """Kafka's SecurityUtils.parseKafkaPrincipal, as text: ``Type:name``."""
    text = text.strip() if text is not None else ""
    kind, sep, name = text.partition(":")
    if not text or not sep:
        raise CommandError(f"expected a string in format principalType:principalName but got {text}")
    return f"{kind}:{name}"


def parse_operation(text: str) -> AclOperation:
    """Kafka's SecurityUtils.operation: the PascalCase name (``IdempotentWrite``) in any case, else UNKNOWN."""
    key = text.strip().upper()
    for member in AclOperation:
        if member.display_name.upper() == key:
            return member
    return AclOperation.UNKNOWN


def _principals(values: list[str] | None) -> list[str]:
    return list(dict.fromkeys(parse_principal(v) for v in values or ()))


def _hosts(hosts: list[str] | None, principals: list[str] | None) -> list[str]:
    if hosts:
        return list(dict.fromkeys(h.strip() for h in hosts))
    return [WILDCARD_HOST] if principals else []


def entries_for(ns: argparse.Namespace, operations: Iterable[AclOperation]) -> list[AccessControlEntry]:
    """Every (principal, operation, host) for ALLOW, then for DENY (AclCommand.getAcl)."""
    operations = list(dict.fromkeys(operations))
    out: list[AccessControlEntry] = []
    for principals, hosts, permission in (
        (_principals(ns.allow_principal), _hosts(ns.allow_host, ns.allow_principal), AclPermissionType.ALLOW),
        (_principals(ns.deny_principal), _hosts(ns.deny_host, ns.deny_principal), AclPermissionType.DENY),
    ):
        if not hosts or not principals:
            continue
        for principal in principals:
            for op in operations:
                for host in hosts:
                    try:
                        out.append(AccessControlEntry(principal, host, op, permission))
                    except ValueError as exc:  # operation ANY: Kafka's AccessControlEntry refuses it the same way
                        raise CommandError(str(exc)) from None
    return list(dict.fromkeys(out))


def filter_to_acls(ns: argparse.Namespace) -> dict[ResourcePatternFilter, list[AccessControlEntry]]:
    """AclCommand.getResourceFilterToAcls: --producer / --consumer expansions, else the flags as given."""
    plan: dict[ResourcePatternFilter, list[AccessControlEntry]] = {}
    if not ns.producer and not ns.consumer:
        entries = entries_for(ns, [parse_operation(op) for op in ns.operation or ["All"]])
        plan.update({f: entries for f in resource_filters(ns)})
    if ns.producer:
        filters = resource_filters(ns)
        topic_acls = entries_for(ns, (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE))
        txn_acls = entries_for(ns, (AclOperation.WRITE, AclOperation.DESCRIBE))
        plan.update({f: topic_acls for f in filters if f.resource_type == ResourceType.TOPIC})
        plan.update({f: txn_acls for f in filters if f.resource_type == ResourceType.TRANSACTIONAL_ID})
        if ns.idempotent:
            plan[CLUSTER_FILTER] = entries_for(ns, (AclOperation.IDEMPOTENT_WRITE,))
    if ns.consumer:
        filters = resource_filters(ns)
        topic_acls = entries_for(ns, (AclOperation.READ, AclOperation.DESCRIBE))
        group_acls = entries_for(ns, (AclOperation.READ,))
        for f in filters:
            extra = topic_acls if f.resource_type == ResourceType.TOPIC else group_acls if f.resource_type == ResourceType.GROUP else None
            if extra is not None:
                plan[f] = list(dict.fromkeys([*extra, *plan.get(f, [])]))
    _validate_operations(plan)
    return plan


def _validate_operations(plan: dict[ResourcePatternFilter, list[AccessControlEntry]]) -> None:
    for f, entries in plan.items():
        valid = SUPPORTED_OPERATIONS.get(f.resource_type, frozenset()) | {AclOperation.ALL}
        if any(e.operation not in valid for e in entries):
            raise UsageError(f"ResourceType {f.resource_type.name} only supports operations {VALID_OPERATIONS_TEXT[f.resource_type]}")


def resource_to_acls(ns: argparse.Namespace) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """AclCommand.getResourceToAcls: what --add creates, per resource pattern."""
    if not ns.pattern_type.is_specific:
        raise UsageError(f"A '--resource-pattern-type' value of '{ns.pattern_type.name}' is not valid when adding acls.")
    plan = {ResourcePattern(f.resource_type, f.name, f.pattern_type): entries for f, entries in filter_to_acls(ns).items()}
    if any(not entries for entries in plan.values()):
        raise UsageError(NO_PRINCIPAL)
    return plan


# -- Kafka's text (AclCommand's println layout, Java toString of the ACL classes) ----------------------------------


def format_entry(e: AccessControlEntry) -> str:
    return f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, permissionType={e.permission_type.name})"


def format_filter(f: ResourcePatternFilter) -> str:
    name = "<any>" if f.name is None else f.name
    return f"ResourcePattern(resourceType={f.resource_type.name}, name={name}, patternType={f.pattern_type.name})"


def _entry_lines(entries: Iterable[AccessControlEntry]) -> str:
    return "\n".join("\t" + format_entry(e) for e in entries)


def format_adding(pattern: ResourcePattern, entries: list[AccessControlEntry]) -> str:
    return f"Adding ACLs for resource `{pattern}`: \n {_entry_lines(entries)} \n\n"


def format_current(pattern: ResourcePattern, entries: list[AccessControlEntry]) -> str:
    return f"Current ACLs for resource `{pattern}`: \n {_entry_lines(entries)} \n\n"


def format_listing(bindings: list[AclBinding], principals: list[str]) -> str:
    """``--list`` output: one block per resource pattern, in the broker's order; per principal with --principal."""
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        entries = grouped.setdefault(b.pattern, [])
        if b.entry not in entries:
            entries.append(b.entry)
    if not principals:
        return "".join(format_current(p, entries) for p, entries in grouped.items())
    out = []
    for principal in principals:
        out.append(f"ACLs for principal `{principal}`\n")
        for p, entries in grouped.items():
            mine = [e for e in entries if e.principal == principal]
            if mine:
                out.append(format_current(p, mine))
    return "".join(out)


# -- the wire --------------------------------------------------------------------------------------------------------


@dataclass
class AclClient:
    """CreateAcls / DescribeAcls / DeleteAcls on one session, at the negotiated versions."""

    session: Session
    timeout: float

    async def describe(self, f: AclBindingFilter) -> list[AclBinding]:
        version = self.session.version(DESCRIBE_ACLS, OUR_VERSIONS, "DescribeAcls")
        pf, ef = f.pattern_filter, f.entry_filter
        body = DescribeAclsRequest(
            resource_type_filter=pf.resource_type, resource_name_filter=pf.name,
            pattern_type_filter=_v0_filter_pattern(pf.pattern_type, version), principal_filter=ef.principal,
            host_filter=ef.host, operation=ef.operation, permission_type=ef.permission_type)
        response = await request(self.session, DESCRIBE_ACLS, version, body, self.timeout, "DescribeAcls")
        if response.error_code:
            raise BrokerError(response.error_code, response.error_message)
        return [_binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
                for r in response.resources for a in r.acls]

    async def create(self, bindings: list[AclBinding]) -> None:
        version = self.session.version(CREATE_ACLS, OUR_VERSIONS, "CreateAcls")
        if version == 0 and any(b.pattern.pattern_type != PatternType.LITERAL for b in bindings):
            raise ClientError("Version 0 only supports literal resource pattern types (the broker is older than Kafka 2.0)")
        body = CreateAclsRequest(creations=[
            CreateAclsRequest.AclCreation(
                resource_type=b.pattern.resource_type, resource_name=b.pattern.name, resource_pattern_type=b.pattern.pattern_type,
                principal=b.entry.principal, host=b.entry.host, operation=b.entry.operation,
                permission_type=b.entry.permission_type)
            for b in bindings])
        response = await request(self.session, CREATE_ACLS, version, body, self.timeout, "CreateAcls")
        for result in response.results:
            if result.error_code:
                raise BrokerError(result.error_code, result.error_message)

    async def delete(self, filters: list[AclBindingFilter]) -> int:
        version = self.session.version(DELETE_ACLS, OUR_VERSIONS, "DeleteAcls")
        body = DeleteAclsRequest(filters=[
            DeleteAclsRequest.DeleteAclsFilter(
                resource_type_filter=f.pattern_filter.resource_type, resource_name_filter=f.pattern_filter.name,
                pattern_type_filter=_v0_filter_pattern(f.pattern_filter.pattern_type, version),
                principal_filter=f.entry_filter.principal, host_filter=f.entry_filter.host,
                operation=f.entry_filter.operation, permission_type=f.entry_filter.permission_type)
            for f in filters])
        response = await request(self.session, DELETE_ACLS, version, body, self.timeout, "DeleteAcls")
        deleted = 0
        for result in response.filter_results:
            if result.error_code:
                raise BrokerError(result.error_code, result.error_message)
            for match in result.matching_acls:
                if match.error_code:
                    raise BrokerError(match.error_code, match.error_message)
                deleted += 1
        return deleted


def _v0_filter_pattern(pattern_type: PatternType, version: int) -> PatternType:
    """v0 has no pattern type: ANY is sent as its default LITERAL, as Kafka's client does; others cannot be sent."""
    if version > 0:
        return pattern_type
    if pattern_type in (PatternType.ANY, PatternType.LITERAL):
        return PatternType.LITERAL
    raise ClientError("Version 0 only supports literal resource pattern types (the broker is older than Kafka 2.0)")


def _binding(rtype: int, name: str, ptype: int, principal: str, host: str, op: int, perm: int) -> AclBinding:
    try:
        return AclBinding(ResourcePattern(ResourceType.from_code(rtype), name, PatternType.from_code(ptype)),
                          AccessControlEntry(principal, host, AclOperation.from_code(op), AclPermissionType.from_code(perm)))
    except ValueError as exc:
        raise ClientError(f"the broker described an ACL that cannot exist ({exc})") from None


# -- the command ----------------------------------------------------------------------------------------------------


@dataclass
class Streams:
    out: TextIO
    err: TextIO
    stdin: TextIO


async def run(ns: argparse.Namespace, security: ClientSecurity, timeout: float, streams: Streams) -> None:
    """Carry out --add, --remove or --list; UsageError / CommandError / ClientError on failure.

    The flags are worked out before connecting, so a mistake in them never needs a broker.
    """
    if ns.add:
        plan = resource_to_acls(ns)
        work = lambda client: _add(client, plan, streams)  # noqa: E731
    elif ns.remove:
        filter_plan = filter_to_acls(ns)
        work = lambda client: _remove_all(client, ns, filter_plan, streams)  # noqa: E731
    else:
        filters = resource_filters(ns, die_if_none=False)
        principals = list(dict.fromkeys(parse_principal(p) for p in ns.principal or () if p is not None))
        work = lambda client: _list(client, filters, principals, streams)  # noqa: E731
    session = await connect(ns.bootstrap_server, security, timeout=timeout)
    try:
        await work(AclClient(session, timeout))
    finally:
        await session.close()


async def _add(client: AclClient, plan: dict[ResourcePattern, list[AccessControlEntry]], streams: Streams) -> None:
    # One CreateAcls per resource, each announced first, as kafka-acls.sh does.
    for pattern, entries in plan.items():
        streams.out.write(format_adding(pattern, entries))
        streams.out.flush()
        await client.create([AclBinding(pattern, e) for e in entries])


async def _list(client: AclClient, filters: list[ResourcePatternFilter], principals: list[str], streams: Streams) -> None:
    if not filters:
        filters = [ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY)]
    bindings: list[AclBinding] = []
    for f in filters:
        bindings += await client.describe(AclBindingFilter(f, ANY_ENTRY))
    streams.out.write(format_listing(bindings, principals))


async def _remove_all(client: AclClient, ns: argparse.Namespace, plan: dict[ResourcePatternFilter, list[AccessControlEntry]],
                      streams: Streams) -> None:
    for f, entries in plan.items():
        await _remove(client, ns, f, entries, streams)


async def _remove(client: AclClient, ns: argparse.Namespace, f: ResourcePatternFilter, entries: list[AccessControlEntry],
                  streams: Streams) -> None:
    if not entries:
        question = f"Are you sure you want to delete all ACLs for resource filter `{format_filter(f)}`? (y/n)"
        filters = [AclBindingFilter(f, ANY_ENTRY)]
    else:
        question = (f"Are you sure you want to remove ACLs: \n {_entry_lines(entries)} \n from resource filter "
                    f"`{format_filter(f)}`? (y/n)")
        filters = [AclBindingFilter(f, AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type)) for e in entries]
    if not ns.force:
        streams.out.write(question + "\n")
        streams.out.flush()
        answer = streams.stdin.readline()
        if not answer:
            raise CommandError("no answer on standard input to the question above; answer y, or pass --force to remove "
                               "without asking")
        if answer.rstrip("\r\n").lower() != "y":
            return
    deleted = await client.delete(filters)
    log.debug("acls_deleted", filter=format_filter(f), deleted=deleted)


def _load_command_config(path: str | None) -> tuple[ClientSecurity, float]:
    from kafka_shim.shim.config.properties import load_properties

    props: dict[str, str] = {}
    if path:
        try:
            props = load_properties(path)
        except OSError as exc:
            raise CommandError(f"cannot read --command-config {path}: {exc.strerror or exc}") from None
    try:
        security = client_security(props, f"--command-config {path}")
        timeout_ms = int(props.get("request.timeout.ms", "30000"))
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    except ValueError:
        raise CommandError(f"--command-config {path}: request.timeout.ms must be a number of milliseconds") from None
    return security, timeout_ms / 1000


def main(argv: list[str] | None = None, streams: Streams | None = None) -> int:
    """``kafka-shim acls ...``: 0 on success, 1 with a message on stderr otherwise (as kafka-acls.sh)."""
    streams = streams or Streams(sys.stdout, sys.stderr, sys.stdin)
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        ns = parse_args(argv)
        security, timeout = _load_command_config(ns.command_config)
        asyncio.run(run(ns, security, timeout, streams))
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except UsageError as exc:
        streams.err.write(f"{exc}\n{HINT}\n")
        return 1
    except (CommandError, ClientError) as exc:
        streams.err.write(f"Error while executing ACL command: {exc}\n")
        return 1
    except KeyboardInterrupt:
        streams.err.write("Interrupted.\n")
        return 1
    return 0


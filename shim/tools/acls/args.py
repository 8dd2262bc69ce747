"""The flags of ``kafka-shim acls``: kafka-acls.sh's names, and AclOptions.checkArgs's checks and messages."""

from __future__ import annotations

import argparse

from kafka_shim.authorizer import PatternType
from kafka_shim.shim.tools.acls.errors import UsageError


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

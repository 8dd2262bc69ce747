"""Carrying out ``kafka-shim acls``: flags, then the plan, then the broker, then kafka-acls.sh's output and exit code."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from typing import TextIO

from kafka_shim.authorizer import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka_shim.shim.client.auth import connect
from kafka_shim.shim.client.config import ClientSecurity, client_security
from kafka_shim.shim.client.errors import ClientError
from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.tools.acls.admin import AclClient
from kafka_shim.shim.tools.acls.args import parse_args
from kafka_shim.shim.tools.acls.errors import CommandError, UsageError
from kafka_shim.shim.tools.acls.output import format_adding, format_filter, format_listing, format_remove_question
from kafka_shim.shim.tools.acls.plan import ANY_ENTRY, filter_to_acls, parse_principal, resource_filters, resource_to_acls

log = get_logger("kafka_shim.acls_cli")

HINT = "Run 'kafka-shim acls --help' for the options."


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
        filters = [AclBindingFilter(f, ANY_ENTRY)]
    else:
        filters = [AclBindingFilter(f, AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type)) for e in entries]
    if not ns.force:
        streams.out.write(format_remove_question(f, entries) + "\n")
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

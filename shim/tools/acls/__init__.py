"""``kafka-shim acls``: Kafka's kafka-acls.sh (kafka.admin.AclCommand of Kafka 3.9) over the project's own codec.

The flags, their defaults and expansions, the validation messages and the output layout are AclCommand's; the
command talks to any broker (kafka-shim or Apache Kafka) with CreateAcls, DescribeAcls and DeleteAcls at the
highest version both sides support. What differs on purpose: errors go to stderr without a Java stack trace, a
broker that cannot be reached fails at once instead of after the admin client's 60 s, and where kafka-acls.sh
prints a Java hash set (whose order comes from identity hash codes and changes between JVMs) the order here is
the broker's, or the order in which the flags were given.

The package, in the order of the work: args (the flags and their checks), plan (what they mean: the ACLs to add,
the filters to list or remove), admin (the three ACL APIs on a client session), output (Kafka's text), and
command (``main``, which runs them and turns failures into kafka-acls.sh's messages and exit code).
"""

from kafka_shim.shim.tools.acls.admin import AclClient
from kafka_shim.shim.tools.acls.args import build_parser, check_args, parse_args
from kafka_shim.shim.tools.acls.command import Streams, main, run
from kafka_shim.shim.tools.acls.errors import CommandError, UsageError
from kafka_shim.shim.tools.acls.output import format_listing
from kafka_shim.shim.tools.acls.plan import (
    entries_for,
    filter_to_acls,
    parse_operation,
    parse_principal,
    resource_filters,
    resource_to_acls,
)

__all__ = [
    "AclClient",
    "CommandError",
    "Streams",
    "UsageError",
    "build_parser",
    "check_args",
    "entries_for",
    "filter_to_acls",
    "format_listing",
    "main",
    "parse_args",
    "parse_operation",
    "parse_principal",
    "resource_filters",
    "resource_to_acls",
    "run",
]

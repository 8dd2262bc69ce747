"""What each Kafka API asks the authorizer, declared once (Kafka 3.9's KafkaApis / AuthHelper / AclApis).

The broker's handlers ask this module which actions a request needs instead of hard-coding operations, and a
trace auditor asks it the same question about a captured request:

    requirements(api_key, version, request) -> [Requirement(operation, resource_type, name, mode, error_code, ...)]

Requests are read duck-typed through their snake_case attributes (the decoded objects of ``protocol.messages``
or anything shaped alike), so this module imports nothing from the wire or the broker.

Modes, as Kafka applies them:

* ``AUTHORIZE_OR_THROW``: a denial fails the whole request; every error slot carries ``error_code``.
* ``FILTER_WITH_ERROR``: checked once per distinct name (ref count = occurrences); denied items get ``error_code``.
* ``SILENT_FILTER``: denied items are left out of the answer, no error.
* ``GATE``: decides a value, never an error (e.g. cluster authorized operations become 0 without DESCRIBE).
* ``BITFIELD``: the KIP-430 authorized-operations probes, one unlogged check per supported operation.

A check may carry a ``shortcut``: one action that, when allowed, grants the whole check without asking per
name (Kafka's "CREATE on CLUSTER, else CREATE on each TOPIC"). Shortcuts are asked with logIfDenied=false.

The package: ``model`` (the types and the readers that pull names out of a request), ``table`` (Kafka 3.9's
declarations), ``requirements`` (the auditor's question) and ``releases`` (where other releases' rule changes go).
Import from the package; the names below are its public surface.
"""

from kafka_shim.authorizer.api_checks.model import (
    CONFIG_BROKER,
    CONFIG_BROKER_LOGGER,
    CONFIG_CLIENT_METRICS,
    CONFIG_TOPIC,
    EVERY,
    ApiChecks,
    Bitfield,
    ById,
    Check,
    Condition,
    Mode,
    Name,
    Names,
    Requirement,
    Shortcut,
    field,
    metadata_all_topics,
)
from kafka_shim.authorizer.api_checks.requirements import distinct_names, requirements
from kafka_shim.authorizer.api_checks.table import DECLARATIONS, declaration

__all__ = [
    "CONFIG_BROKER",
    "CONFIG_BROKER_LOGGER",
    "CONFIG_CLIENT_METRICS",
    "CONFIG_TOPIC",
    "DECLARATIONS",
    "EVERY",
    "ApiChecks",
    "Bitfield",
    "ById",
    "Check",
    "Condition",
    "Mode",
    "Name",
    "Names",
    "Requirement",
    "Shortcut",
    "declaration",
    "distinct_names",
    "field",
    "metadata_all_topics",
    "requirements",
]

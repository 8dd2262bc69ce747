"""The tables the ACL audit writes and its parts exchange (pyarrow schemas; Spark DataFrames use the same columns).

The contract between the audit's halves: ``decide*`` / ``whatif`` / ``releases`` (decisions, flips, broker
differences, release differences) and ``usage`` / ``least_privilege`` / ``report`` (ACL usage, least privilege,
the HTML report), and the stable layout of ``kafka-shim audit --out DIR`` documented in ``traces/AUDIT.md``.

Names follow Kafka: operations are AclOperation names (``READ``, ``IDEMPOTENT_WRITE``), resource types
ResourceType names (``TOPIC``, ``CLUSTER``), rules the text Kafka's authorizer log writes (``SuperUser``,
``DefaultAllow``, ``DefaultDeny``, ``MatchingAcl(acl=StandardAcl(...))``). ACLs are named by ``acl_key``.
Columns are only ever added at the end.
"""

from __future__ import annotations

import pyarrow as pa

from kafka_shim.authorizer.model import AclBinding

TIME = pa.timestamp("us", tz="UTC")

# Kinds of question (actions.kind / decisions.kind).
KIND_AUTHORIZE = "authorize"  # Authorizer.authorize of one action on one named resource
KIND_BY_RESOURCE_TYPE = "by_resource_type"  # KIP-679 authorizeByResourceType: allowed on any resource of the type
KIND_AUTHORIZED_OPERATIONS = "authorized_operations"  # one operation's bit of a KIP-430 bitfield
KIND_SHORTCUT = "shortcut"  # an action that, allowed, makes the check's per-name questions unnecessary
KINDS = (KIND_AUTHORIZE, KIND_BY_RESOURCE_TYPE, KIND_AUTHORIZED_OPERATIONS, KIND_SHORTCUT)
# A question's gate of the form AFTER + check: asked only where that check allowed the same name (decide.flow)
GATE_AFTER = "after:"

SEVERITY_HARD = "hard"  # the client sees an error code (AUTHORIZE_OR_THROW, FILTER_WITH_ERROR)
SEVERITY_SOFT = "soft"  # the client sees less (SILENT_FILTER, GATE) or another bit (BITFIELD)


def acl_key(binding: AclBinding) -> str:
    """One stable text key per ACL: ``TOPIC:PREFIXED:team42.|User:alice|*|WRITE|ALLOW``.

    Fields are joined with ``|`` as they are; a principal or name holding ``|`` stays readable but the key is
    then not split back unambiguously (it is a key, not a serialisation).
    """
    p, e = binding.pattern, binding.entry
    return (f"{p.resource_type.name}:{p.pattern_type.name}:{p.name}|{e.principal}|{e.host}|"
            f"{e.operation.name}|{e.permission_type.name}")


# One row per distinct question the authorizer is asked (the unit the usage and least-privilege parts work on).
ACTIONS = pa.schema([
    pa.field("principal", pa.string()),
    pa.field("host", pa.string()),
    pa.field("operation", pa.string()),
    pa.field("resource_type", pa.string()),
    pa.field("resource_name", pa.string()),  # null: by_resource_type (any resource of the type)
    pa.field("requests", pa.int64()),  # how many requests asked it
    pa.field("first_time", TIME),
    pa.field("last_time", TIME),
    pa.field("allowed_a", pa.bool_()),
    pa.field("rule_a", pa.string()),
    pa.field("acl_a", pa.string()),  # acl_key of the deciding ACL; null for SuperUser / DefaultAllow / DefaultDeny
    pa.field("allowed_b", pa.bool_()),  # the *_b columns are null without --what-if
    pa.field("rule_b", pa.string()),
    pa.field("acl_b", pa.string()),
    pa.field("hard", pa.bool_()),  # a denial of this question is an error some client sees
    pa.field("kind", pa.string()),
])

# The key the actions are distinct on (and decisions join back on).
ACTION_KEY = ("principal", "host", "operation", "resource_type", "resource_name", "kind")

# One row per request and question, in the request's order of questions.
DECISIONS = pa.schema([
    pa.field("request_index", pa.int64()),  # (file number << 32) + the row in its file: stable between engines and runs
    pa.field("time", TIME),
    pa.field("source", pa.string()),
    pa.field("connection_id", pa.string()),
    pa.field("principal", pa.string()),
    pa.field("host", pa.string()),  # the trace's client_host
    pa.field("client_id", pa.string()),
    pa.field("api_key", pa.int16()),
    pa.field("api_version", pa.int16()),
    pa.field("request_name", pa.string()),  # Kafka's API name: Produce, Metadata, ...
    pa.field("correlation_id", pa.int32()),
    pa.field("seq", pa.int32()),  # the question's position within the request
    pa.field("check", pa.string()),  # the api_checks Check key ("describe", "create", ...; "bitfield")
    pa.field("mode", pa.string()),  # api_checks Mode value: authorize-or-throw, filter-with-error, silent-filter, gate, bitfield
    pa.field("kind", pa.string()),
    pa.field("operation", pa.string()),
    pa.field("resource_type", pa.string()),
    pa.field("resource_name", pa.string()),  # null: every resource of the type / by_resource_type / known only by id
    pa.field("resource_id", pa.string()),  # a topic id (UUID text) when the request named the topic only by id
    pa.field("ref_count", pa.int32()),
    pa.field("hard", pa.bool_()),
    pa.field("error_code", pa.int16()),  # the code a denial gives the client (0 for soft modes)
    pa.field("error", pa.string()),  # its Kafka name (TOPIC_AUTHORIZATION_FAILED, ...)
    pa.field("asked_a", pa.bool_()),  # false: a shortcut allowed under A made the broker skip this question
    pa.field("allowed_a", pa.bool_()),
    pa.field("rule_a", pa.string()),
    pa.field("acl_a", pa.string()),
    pa.field("asked_b", pa.bool_()),  # the *_b columns are null without --what-if
    pa.field("allowed_b", pa.bool_()),
    pa.field("rule_b", pa.string()),
    pa.field("acl_b", pa.string()),
])

# decisions rows whose outcome the client sees differently under A and B.
FLIPS = pa.schema([
    *DECISIONS,
    pa.field("direction", pa.string()),  # allow_to_deny | deny_to_allow
    pa.field("severity", pa.string()),  # hard | soft
    pa.field("effect", pa.string()),  # what the client sees under B, e.g. "Produce: TOPIC_AUTHORIZATION_FAILED (29) for orders"
])

# One question the broker answered for one request: the key both the broker's recorded answers and their
# differences from the audit carry.
BROKER_QUESTION = [
    pa.field("request_index", pa.int64()),
    pa.field("time", TIME),
    pa.field("principal", pa.string()),
    pa.field("host", pa.string()),
    pa.field("request_name", pa.string()),
    pa.field("correlation_id", pa.int32()),
    pa.field("kind", pa.string()),  # authorize (shortcuts included: the broker does not tell them apart) | by_resource_type | authorized_operations
    pa.field("operation", pa.string()),
    pa.field("resource_type", pa.string()),
    pa.field("resource_name", pa.string()),
]

# Every difference between what the broker decided (the trace's own decisions) and what the audit decides under A.
BROKER_DIFF = pa.schema([
    *BROKER_QUESTION,
    pa.field("difference", pa.string()),  # decision (both asked, answers differ) | only_broker | only_audit
    pa.field("broker_allowed", pa.bool_()),
    pa.field("broker_rule", pa.string()),
    pa.field("audit_allowed", pa.bool_()),
    pa.field("audit_rule", pa.string()),
])

# Requests an older release's rules decide differently from Kafka 3.9's (under ACL set A).
RELEASE_DIFF = pa.schema([
    pa.field("request_index", pa.int64()),
    pa.field("time", TIME),
    pa.field("principal", pa.string()),
    pa.field("host", pa.string()),
    pa.field("request_name", pa.string()),
    pa.field("api_version", pa.int16()),
    pa.field("correlation_id", pa.int32()),
    pa.field("release", pa.string()),  # the older release compared with, e.g. "2.8"
    pa.field("rule_change", pa.string()),  # what changed and where: "KIP-679 (2.8): ..."
    pa.field("allowed_39", pa.bool_()),
    pa.field("allowed_old", pa.bool_()),
    pa.field("question_39", pa.string()),  # "IDEMPOTENT_WRITE on CLUSTER:kafka-cluster or WRITE on any TOPIC"
    pa.field("question_old", pa.string()),
])

# Requests the audit could not judge (undecodable frame, unknown API version, an API without declared checks).
PROBLEMS = pa.schema([
    pa.field("request_index", pa.int64()),  # null for whole-file problems (a truncated Parquet file)
    pa.field("time", TIME),
    pa.field("api_key", pa.int16()),
    pa.field("api_version", pa.int16()),
    pa.field("problem", pa.string()),  # unreadable_file | decode_error | unknown_version | no_checks_declared | no_request_bytes
    pa.field("detail", pa.string()),
])


def empty(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()

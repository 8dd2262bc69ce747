"""The vocabulary of the declarations: check modes, checks, shortcuts, bitfields, requirements, and the readers
that pull resource names and conditions out of a request.

Readers take ``(request, version)`` and read the request duck-typed through its snake_case attributes, so this
module imports nothing from the wire or the broker. Readers named for one API (``metadata_*``, ``key_type_is``,
``find_coordinator_keys``) hold the rules its broker handler follows too.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kafka_shim.authorizer.model import CLUSTER_NAME, AclOperation, ResourceType
from kafka_shim.protocol.codes import ErrorCode


class Mode(enum.Enum):
    AUTHORIZE_OR_THROW = "authorize-or-throw"
    FILTER_WITH_ERROR = "filter-with-error"
    SILENT_FILTER = "silent-filter"
    GATE = "gate"
    BITFIELD = "bitfield"


@dataclass(frozen=True, slots=True)
class ById:
    """A resource named in the request only by id (topic ids); the broker resolves the name."""

    id: uuid.UUID


EVERY = None  # a names function returning EVERY means "every existing resource of the type" (e.g. all-topics Metadata)
Name = str | ById
Names = Callable[[Any, int], Iterable[Name] | None]
Condition = Callable[[Any, int], bool]


@dataclass(frozen=True, slots=True)
class Shortcut:
    """An action that, when allowed, satisfies the whole check it belongs to."""

    operation: AclOperation
    resource_type: ResourceType = ResourceType.CLUSTER
    name: str = CLUSTER_NAME
    log_if_denied: bool = False


@dataclass(frozen=True, slots=True)
class Check:
    key: str  # a handler's handle on this check ("describe", "create", ...)
    operation: AclOperation
    resource_type: ResourceType
    names: Names
    mode: Mode
    error_code: int = ErrorCode.NONE
    log_if_allowed: bool = True
    log_if_denied: bool = True
    shortcut: Shortcut | None = None
    applies: Condition | None = None  # None: always asked
    any_resource: bool = False  # KIP-679: "allowed on at least one resource of the type" (InitProducerId)
    # Asked only for the names the check with this key allowed (its shortcut only when one is left). Depends on the
    # ACLs: an auditor replays it with the answers.
    after: str | None = None
    # The names the broker's answer (the decoded response body, at the request's version) shows to exist: the check
    # is never asked for them, under any ACLs (Metadata's auto-creation: only missing topics).
    existing: Callable[[Any, int], Iterable[str]] | None = None
    note: str = ""

    def applies_to(self, request: Any, version: int) -> bool:
        return self.applies is None or bool(self.applies(request, version))


@dataclass(frozen=True, slots=True)
class Bitfield:
    """A KIP-430 authorized-operations field, computed for ``names`` when ``applies`` holds (after ``gate``, if any)."""

    resource_type: ResourceType
    names: Names
    applies: Condition | None = None
    gate: str | None = None  # key of the GATE check that must pass first; when it fails the field is 0
    # Computed only for the names the check with this key allowed (Kafka fills the field of the entries it answers
    # without error; the others keep the schema's default).
    after: str | None = None


@dataclass(frozen=True, slots=True)
class ApiChecks:
    api_key: int
    name: str
    checks: tuple[Check, ...] = ()
    bitfields: tuple[Bitfield, ...] = ()
    no_authorizer_error: int | None = None  # the ACL APIs answer ErrorCode.SECURITY_DISABLED when no authorizer is configured
    note: str = ""

    def check(self, key: str) -> Check:
        for c in self.checks:
            if c.key == key:
                return c
        raise KeyError(f"{self.name} declares no check {key!r}; it declares {[c.key for c in self.checks]}")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One action a request needs, as an auditor sees it."""

    operation: AclOperation
    resource_type: ResourceType
    name: str | None  # None: every existing resource of the type, or a resource known only by id
    mode: Mode
    error_code: int
    log_if_denied: bool = True
    log_if_allowed: bool = True
    ref_count: int = 1
    check: str = ""  # the Check.key it comes from
    is_shortcut: bool = False  # allowed: the other requirements of the same check are satisfied
    any_resource: bool = False
    resource_id: uuid.UUID | None = None
    after: str | None = None  # Check.after


# -- names, read from the request ------------------------------------------------------------------------------------
def field(*path: str) -> Names:
    """Names found by walking attributes (lists are flattened; missing or null values contribute nothing)."""

    def names(request: Any, version: int) -> list[Name]:
        level = [request]
        for attr in path:
            nxt: list[Any] = []
            for obj in level:
                value = getattr(obj, attr, None)
                if value is None:
                    continue
                if isinstance(value, list):
                    nxt.extend(v for v in value if v is not None)
                else:
                    nxt.append(value)
            level = nxt
        return level

    return names


def cluster_names(request: Any, version: int) -> list[Name]:
    return [CLUSTER_NAME]


def every_resource(request: Any, version: int) -> None:
    return EVERY


def has_field(attr: str) -> Condition:
    return lambda request, version: getattr(request, attr, None) is not None


def flag_set(attr: str) -> Condition:
    return lambda request, version: bool(getattr(request, attr, False))


def in_versions(lo: int, hi: int = 1 << 15) -> Condition:
    return lambda request, version: lo <= version <= hi


def topic_names_or_ids(names_attr: str, id_attr: str, *outer: str) -> Names:
    """Topic names, or ById for entries that carry only a topic id (Fetch v13+, DeleteTopics v6, Metadata v12)."""

    def names(request: Any, version: int) -> list[Name]:
        out: list[Name] = []
        for entry in field(*outer)(request, version) if outer else []:
            name = getattr(entry, names_attr, None)
            topic_id = getattr(entry, id_attr, None)
            # A version that names topics by id decodes the absent name as "" (Fetch v13+): the id is the name then.
            if name:
                out.append(name)
            elif topic_id is not None and topic_id != _ZERO:
                out.append(ById(topic_id))
            elif name is not None:
                out.append(name)
        return out

    return names


def config_names(resource_types: set[int], to_cluster: bool) -> Names:
    """DescribeConfigs/AlterConfigs: resource names of the given config resource types (or the cluster for them)."""

    def names(request: Any, version: int) -> list[Name]:
        found = [r for r in getattr(request, "resources", None) or [] if getattr(r, "resource_type", None) in resource_types]
        return [CLUSTER_NAME] * len(found) if to_cluster else [r.resource_name for r in found]

    return names


def owner_principal(request: Any, version: int) -> list[Name]:
    kind, name = getattr(request, "owner_principal_type", None), getattr(request, "owner_principal_name", None)
    return [f"{kind}:{name}"] if kind is not None and name is not None else []


def is_follower(request: Any, version: int) -> bool:
    state = getattr(request, "replica_state", None)
    replica = state.replica_id if state is not None and version >= 15 else getattr(request, "replica_id", -1)
    return replica is not None and replica >= 0


def key_type_is(kind: int) -> Condition:
    return lambda request, version: (getattr(request, "key_type", 0) if version >= 1 else 0) == kind


def find_coordinator_keys(request: Any, version: int) -> list[Name]:
    return list(getattr(request, "coordinator_keys", None) or []) if version >= 4 else [getattr(request, "key", "")]


# ConfigResource.Type codes (3.9 has no GROUP config resource).
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS = 2, 4, 8, 16


# -- Metadata (key 3), the rules the broker's handler follows ---------------------------------------------------------
def metadata_all_topics(request: Any, version: int) -> bool:
    """Kafka's isAllTopics: a null topic list, or an empty one at v0."""
    topics = getattr(request, "topics", None)
    return topics is None or (version == 0 and not topics)


def metadata_uses_ids(request: Any, version: int) -> bool:
    return version >= 12 and any(getattr(t, "topic_id", None) not in (None, _ZERO) for t in getattr(request, "topics", None) or [])


_ZERO = uuid.UUID(int=0)


def metadata_explicit(request: Any, version: int) -> bool:
    return not metadata_all_topics(request, version)


def metadata_topics(request: Any, version: int) -> list[Name]:
    if metadata_uses_ids(request, version):
        # With any topic id present, Kafka resolves the ids and ignores the names.
        return [ById(t.topic_id) for t in request.topics if t.topic_id not in (None, _ZERO)]
    return [t.name for t in request.topics or [] if t.name is not None]


def metadata_may_create(request: Any, version: int) -> bool:
    # v0-3 always ask for auto-creation; the broker also needs auto.create.topics.enable and the topic to be missing.
    return metadata_explicit(request, version) and not metadata_uses_ids(request, version) and (
        version < 4 or bool(getattr(request, "allow_auto_topic_creation", True)))


def metadata_existing_topics(response: Any, version: int) -> list[str]:
    """The topics a Metadata answer lists without a topic-level error: they existed."""
    return [t.name for t in getattr(response, "topics", None) or () if t.error_code == 0 and t.name is not None]


def metadata_cluster_ops(request: Any, version: int) -> bool:
    return 8 <= version <= 10 and bool(getattr(request, "include_cluster_authorized_operations", False))


def metadata_topic_ops(request: Any, version: int) -> bool:
    return version >= 8 and bool(getattr(request, "include_topic_authorized_operations", False))


# -- OffsetFetch (key 9) ----------------------------------------------------------------------------------------------
def offset_fetch_all_partitions(request: Any, version: int) -> bool:
    """A group of the request asks for all its partitions (null topics: v2-7 the request's, v8+ a group's)."""
    if version >= 8:
        return any(group.topics is None for group in getattr(request, "groups", None) or [])
    return version >= 2 and getattr(request, "topics", None) is None

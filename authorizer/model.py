"""Kafka's ACL model: enums with their wire codes, patterns, entries, bindings and filters.

Constructors take Kafka's Java argument order. Filters match as Kafka's
ResourcePatternFilter / AccessControlEntryFilter do (see the README).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from functools import cache

CLUSTER_NAME = "kafka-cluster"
WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
# The principal of a client that has not authenticated (PLAINTEXT, TLS without a certificate, SASL before it completes).
ANONYMOUS = "User:ANONYMOUS"
WILDCARD_HOST = "*"


class _KafkaEnum(IntEnum):
    @classmethod
    def from_code(cls, code: int):
        """Kafka's fromCode: an unknown code is UNKNOWN, never an error."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN

    @classmethod
    def from_string(cls, text: str):
        """Case-insensitive, accepting Kafka's PascalCase display names (IdempotentWrite) too."""
        return _names_of(cls).get(text.strip().upper(), cls.UNKNOWN)

    @property
    def display_name(self) -> str:
        """Kafka's PascalCase form (SecurityUtils): Topic, TransactionalId, IdempotentWrite, Allow."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @property
    def is_unknown(self) -> bool:
        return self.name == "UNKNOWN"


@cache
def _names_of(cls: type[_KafkaEnum]) -> dict[str, _KafkaEnum]:
    """Each member by its name and by its name without underscores, the first member in order winning a clash:
    a 100k-ACL listing parses four names per ACL, and walking the members' ``name`` properties each time was
    two thirds of parsing it."""
    names: dict[str, _KafkaEnum] = {}
    for member in cls:
        names.setdefault(member.name, member)
        names.setdefault(member.name.replace("_", ""), member)
    return names


class ResourceType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @classmethod
    def from_string(cls, text: str) -> PatternType:
        # Unlike the other three enums, Kafka's PatternType.fromString is case-sensitive.
        return cls.__members__.get(text, cls.UNKNOWN)

    @property
    def is_specific(self) -> bool:
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# The operations each resource type supports, as Kafka 3.9 defines them (AclEntry.supportedOperations);
# authorized_operations reports only these. GROUP is 3.9's set (trunk added the config operations).
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER,
                                   AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE}),
    ResourceType.CLUSTER: frozenset({AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION,
                                     AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE}),
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.WRITE, AclOperation.DESCRIBE}),
    ResourceType.DELEGATION_TOKEN: frozenset({AclOperation.DESCRIBE}),
    ResourceType.USER: frozenset({AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS}),
}


def bitfield(operations: frozenset[AclOperation] | set[AclOperation]) -> int:
    """Kafka's authorized-operations int32: bit ``1 << code`` per operation."""
    bits = 0
    for op in operations:
        bits |= 1 << op
    return bits


SUPPORTED_BITS: dict[ResourceType, int] = {rtype: bitfield(ops) for rtype, ops in SUPPORTED_OPERATIONS.items()}


class InvalidPrincipal(ValueError):
    pass


def parse_principal(text: str) -> tuple[str, str]:
    """Kafka's parseKafkaPrincipal: everything up to the first ':' is the type, the rest the name."""
    if not text:
        raise InvalidPrincipal("principal must not be empty; use Type:name, e.g. User:alice")
    kind, sep, name = text.partition(":")
    if not sep:
        raise InvalidPrincipal(f"principal {text!r} has no ':'; use Type:name, e.g. User:alice")
    return kind, name


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __post_init__(self) -> None:
        # Kafka's ResourcePattern constructor refuses the filter-only values.
        if self.resource_type == ResourceType.ANY:
            raise ValueError("resourceType must not be ANY")
        if self.pattern_type in (PatternType.ANY, PatternType.MATCH):
            raise ValueError(f"patternType must not be {self.pattern_type.name}")
        if self.name is None:
            raise ValueError("name must not be null")

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, patternType={self.pattern_type.name})"


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        if self.operation == AclOperation.ANY:
            raise ValueError("operation must not be ANY")
        if self.permission_type == AclPermissionType.ANY:
            raise ValueError("permissionType must not be ANY")
        if self.principal is None or self.host is None:
            raise ValueError("principal and host must not be null")


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Bindings are set members and dict keys throughout the index: hash once.
        object.__setattr__(self, "_hash", hash((self.pattern, self.entry)))

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        e = self.entry
        return (f"(pattern={self.pattern}, entry=(principal={e.principal}, host={e.host}, "
                f"operation={e.operation.name}, permissionType={e.permission_type.name}))")


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type == PatternType.ANY or self.pattern_type == pattern.pattern_type:
            return self.name == pattern.name
        if self.pattern_type == PatternType.MATCH:
            if pattern.pattern_type == PatternType.LITERAL:
                return pattern.name == self.name or pattern.name == WILDCARD_RESOURCE
            if pattern.pattern_type == PatternType.PREFIXED:
                return self.name.startswith(pattern.name)
        return False


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def matches(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type == AclPermissionType.ANY or self.permission_type == entry.permission_type))


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    @property
    def is_unknown(self) -> bool:
        """A filter with an UNKNOWN field matches nothing (Kafka's isUnknown)."""
        p, e = self.pattern_filter, self.entry_filter
        return p.resource_type.is_unknown or p.pattern_type.is_unknown or e.operation.is_unknown or e.permission_type.is_unknown


MATCH_ANY_RESOURCE = ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY)
MATCH_ANY_ENTRY = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)
MATCH_ANY = AclBindingFilter(MATCH_ANY_RESOURCE, MATCH_ANY_ENTRY)


# validate_new_acl runs per ACL created or loaded: enum members read once (each ``ResourceType.CLUSTER`` is a
# descriptor call, ~0.2 µs)
_CLUSTER = ResourceType.CLUSTER
_INVALID_TYPES = frozenset({ResourceType.UNKNOWN, ResourceType.ANY})
_STORED_PATTERNS = frozenset({PatternType.LITERAL, PatternType.PREFIXED})
_INVALID_OPERATIONS = frozenset({AclOperation.UNKNOWN, AclOperation.ANY})
_STORED_PERMISSIONS = frozenset({AclPermissionType.ALLOW, AclPermissionType.DENY})


def validate_new_acl(binding: AclBinding) -> str | None:
    """Why Kafka would refuse to store this ACL (AclControlManager.validateNewAcl), or None.

    Returns Kafka's INVALID_REQUEST message.
    """
    p, e = binding.pattern, binding.entry
    if p.resource_type == _CLUSTER and p.name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    if not p.name:
        return "Invalid empty resource name"
    if p.resource_type in _INVALID_TYPES:
        return f"Invalid resourceType {p.resource_type.name}"
    if p.pattern_type not in _STORED_PATTERNS:
        return f"Invalid patternType {p.pattern_type.name}"
    if e.operation in _INVALID_OPERATIONS:
        return f"Invalid operation {e.operation.name}"
    if e.permission_type not in _STORED_PERMISSIONS:
        return f"Invalid permissionType {e.permission_type.name}"
    # No principal check: Kafka 3.9 stores `alice` or `` (KAFKA-18051 refuses them after 3.9); see acl_walk.
    return None

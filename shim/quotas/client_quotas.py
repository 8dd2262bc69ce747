"""Client quota configuration as Kafka 3.9's KRaft controller keeps it (ClientQuotaControlManager) and its brokers
describe it (ClientQuotasImage.describe): entities of user / client-id / ip names (None: the default entity) with
their quota values. Plain state; the wire is shim/handlers/client_quotas.py.

Kafka's answers iterate Java HashMaps (of entities, of an entity's types, of an alteration's keys); the orders and
the entity texts in messages ("ClientQuotaEntity(entries={user=alice})") are computed as those maps would give them.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.javacompat.hash_orders import java_hash_map_order
from kafka_shim.shim.javacompat.java_hash import JavaHashMap, java_order, java_string_hash

USER, CLIENT_ID, IP = "user", "client-id", "ip"
LONG, INT, DOUBLE = "LONG", "INT", "DOUBLE"
USER_AND_CLIENT_KEYS = {"producer_byte_rate": LONG, "consumer_byte_rate": LONG, "request_percentage": DOUBLE,
                        "controller_mutation_rate": DOUBLE}
IP_KEYS = {"connection_creation_rate": INT}
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
FILE_NAME = "kafka-shim-client-quotas.json"
_MASK = 0xFFFFFFFF

Entity = tuple[tuple[str, str | None], ...]  # (type, name) pairs, as the request's HashMap holds them


class QuotaRequestError(Exception):
    """A request-level refusal (DescribeClientQuotas' InvalidRequestException / UnsupportedVersionException)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Alteration:
    entity: Entity
    ops: Sequence[tuple[str, float | None]]  # (key, value); None removes the key


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The request's entity data as AlterClientQuotasRequest.entries() builds its ``new HashMap<>(size)`` (a repeated
    type: the last name wins), in that map's iteration order."""
    listed = list(pairs)
    names: JavaHashMap[str | None] = JavaHashMap(len(listed))
    for entity_type, name in listed:
        names.put(entity_type, name)
    return tuple(names.items())


def _map_order(keys: Sequence[object], hash_code, initial_capacity: int) -> list:
    """The order a ``java.util.HashMap`` created with ``initial_capacity`` and filled with ``keys`` (put, in this
    order) iterates them: by bucket of the final table, then by insertion."""
    capacity = 1 << max(initial_capacity - 1, 0).bit_length()
    for count in range(1, len(keys) + 1):
        if count > capacity * 3 // 4:
            capacity *= 2
    mask = capacity - 1

    def bucket(key) -> int:
        h = hash_code(key) & _MASK
        return (h ^ (h >> 16)) & mask

    position = {key: index for index, key in enumerate(keys)}
    return sorted(keys, key=lambda k: (bucket(k), position[k]))


def entity_text(entity: Entity) -> str:
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity) + "})"


def _entity_hash(entity: Entity) -> int:
    """Objects.hash(entries): 31 + the map's hashCode (the sum of key.hashCode ^ value.hashCode)."""
    total = sum(java_string_hash(t) ^ (java_string_hash(n) if n is not None else 0) for t, n in entity)
    return (31 + total) & _MASK


def _canonical(entity: Entity) -> frozenset[tuple[str, str | None]]:
    return frozenset(entity)


class ClientQuotas:
    def __init__(self, data_dir: Path | None = None) -> None:
        self.version = 0  # bumped by every applied alteration
        self._file = data_dir / FILE_NAME if data_dir is not None else None
        # The broker's ClientQuotasImage: entities in its HashMap's order, each with its quotas in their map's order.
        self._entities: dict[frozenset[tuple[str, str | None]], tuple[Entity, dict[str, float]]] = {}
        if self._file is not None and self._file.exists():
            for item in json.loads(self._file.read_text(encoding="utf-8")):
                entity = tuple((t, n) for t, n in item["entity"])
                self._entities[_canonical(entity)] = (entity, {k: float(v) for k, v in item["quotas"].items()})

    @property
    def has_any(self) -> bool:
        return bool(self._entities)

    def value(self, entity: Iterable[tuple[str, str | None]], key: str) -> float | None:
        """The quota ``key`` configured for exactly this entity, or None."""
        found = self._entities.get(frozenset(entity))
        return found[1].get(key) if found is not None else None

    # -- AlterClientQuotas (ClientQuotaControlManager.alterClientQuotas) -----------------------------------------------
    def alter(self, alterations: Sequence[Alteration], validate_only: bool) -> list[tuple[Entity, int, str | None]]:
        """Each entity's (error code, message), in the order Kafka's result HashMap gives them; applied unless
        ``validate_only``. As in Kafka, a repeated key or entity answers "Ignoring duplicate entity", and an entity
        named twice keeps the first one's changes."""
        results: dict[frozenset, tuple[Entity, int, str | None]] = {}
        changes: list[tuple[Entity, dict[str, float | None]]] = []
        for alteration in alterations:
            key = _canonical(alteration.entity)
            wanted: dict[str, float | None] = {}
            for op_key, value in alteration.ops:
                if op_key in wanted:
                    results[key] = (alteration.entity, ErrorCode.INVALID_REQUEST,
                                    f"Duplicate quota key {op_key} not updating quota for this entity {entity_text(alteration.entity)}")
                else:
                    wanted[op_key] = value
            if key in results:
                results[key] = (alteration.entity, ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {entity_text(alteration.entity)}")
                continue
            error = self._check(alteration.entity, wanted, len(alteration.ops))
            results[key] = (alteration.entity, *error) if error else (alteration.entity, ErrorCode.NONE, None)
            if not error:
                changes.append((alteration.entity, wanted))
        if not validate_only and changes:
            self._apply(changes)
            self.version += 1  # the meters' cached resolutions are stale
            self._save()
        order = java_hash_map_order(list(results), lambda k: _entity_hash(results[k][0]))
        return [results[k] for k in order]

    def _check(self, entity: Entity, wanted: dict[str, float | None], op_count: int) -> tuple[int, str] | None:
        if not entity:
            return ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity"
        types = dict(entity)
        for entity_type, name in entity:
            if entity_type not in (USER, CLIENT_ID, IP):
                return ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}"
            if name == "":
                return ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported"
        if IP in types:
            if USER in types or CLIENT_ID in types:
                # Kafka's message lacks the space between "should" and "not".
                return ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
            if not _valid_ip_entity(types[IP]):
                return ErrorCode.INVALID_REQUEST, f"{types[IP]} is not a valid IP or resolvable host."
            keys = IP_KEYS
        else:
            keys = USER_AND_CLIENT_KEYS
        # The first refused value is reported, in the order of the controller's ``new HashMap<>(ops.size())`` of the
        # alteration's keys: a table sized for the ops, not the default one.
        for key in _map_order(list(wanted), java_string_hash, op_count):
            value = wanted[key]
            if value is None:
                continue
            problem = _value_problem(keys, key, value)
            if problem is not None:
                return ErrorCode.INVALID_REQUEST, problem
        return None

    def _apply(self, changes: list[tuple[Entity, dict[str, float | None]]]) -> None:
        """The controller's records for these alterations, replayed as a broker's ClientQuotasDelta applies them, so
        that the image keeps Kafka's map orders."""
        records: list[tuple[frozenset, Entity, str, float | None]] = []
        for entity, wanted in changes:
            key = _canonical(entity)
            current = self._entities.get(key, (entity, {}))[1]
            for name in _map_order(list(wanted), java_string_hash, len(wanted)):  # new HashMap<>(ops.size())
                value = wanted[name]
                if (value is None and name in current) or (value is not None and current.get(name) != value):
                    records.append((key, entity, name, value))
        if not records:
            return
        deltas: dict[frozenset, tuple[Entity, dict[str, float | None]]] = {}
        for key, entity, name, value in records:
            deltas.setdefault(key, (entity, {}))[1][name] = value
        delta_order = java_hash_map_order(list(deltas), lambda k: _entity_hash(deltas[k][0]), by_compute=True)
        applied: dict[frozenset, tuple[Entity, dict[str, float]]] = {}
        for key in list(self._entities) + [k for k in delta_order if k not in self._entities]:
            if key in deltas:
                quotas = _apply_quota_delta(self._entities.get(key, (None, {}))[1], deltas[key][1])
                if quotas:
                    stored = self._entities[key][0] if key in self._entities else _image_entity(deltas[key][0])
                    applied[key] = (stored, quotas)
            else:
                applied[key] = self._entities[key]
        order = _map_order(list(applied), lambda k: _entity_hash(applied[k][0]), len(self._entities))
        self._entities = {key: applied[key] for key in order}

    def _save(self) -> None:
        if self._file is None:
            return
        document = [{"entity": [list(pair) for pair in entity], "quotas": quotas} for entity, quotas in self._entities.values()]
        tmp = self._file.with_suffix(".tmp")
        tmp.write_text(json.dumps(document), encoding="utf-8")
        os.replace(tmp, self._file)

    # -- DescribeClientQuotas (ClientQuotasImage.describe) --------------------------------------------------------------
    def describe(self, components: Sequence[tuple[str, int, str | None]], strict: bool) -> list[tuple[Entity, list[tuple[str, float]]]]:
        """The matching entities with their quotas; QuotaRequestError for a filter Kafka refuses."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for entity_type, match_type, match in components:
            if entity_type == "":
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
            if entity_type in exact or entity_type in typed:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Entity type {entity_type} cannot appear more than once in the filter.")
            if entity_type not in (IP, USER, CLIENT_ID):
                raise QuotaRequestError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
            if match_type == EXACT:
                if match is None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[entity_type] = match
            elif match_type == DEFAULT:
                if match is not None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[entity_type] = None
            elif match_type == SPECIFIED:
                if match is not None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
                typed.add(entity_type)
            else:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP filter component "
                                    "should not be used with user or clientId filter component.")
        found = []
        for entity, quotas in self._entities.values():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(typed):
                continue
            if any(t not in names or names[t] != n for t, n in exact.items()) or any(t not in names for t in typed):
                continue
            found.append((entity, list(quotas.items())))
        return found


def _image_entity(entity: Entity) -> Entity:
    """ClientQuotaImage.dataToEntity: the record's entity in a default ``new HashMap<>()``."""
    names = dict(entity)
    return tuple((t, names[t]) for t in java_order(list(names)))


def _apply_quota_delta(old: dict[str, float], changes: dict[str, float | None]) -> dict[str, float]:
    """ClientQuotaDelta.apply: a ``new HashMap<>(old size)`` of the kept and changed values, then the new keys in the
    order of the delta's own (default) HashMap."""
    kept = [(name, changes.get(name, value)) for name, value in old.items() if name not in changes or changes[name] is not None]
    added = [(name, value) for name in java_order(list(changes)) if name not in old
             for value in [changes[name]] if value is not None]
    pairs = dict(kept + added)
    return {name: pairs[name] for name in _map_order(list(pairs), java_string_hash, len(old))}


def _value_problem(keys: dict[str, str], key: str, value: float) -> str | None:
    """ClientQuotaControlManager.validateQuotaKeyValue."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == DOUBLE:
        return None
    if kind == INT and value > 2**31 - 1:
        return f"Proposed value for {key} is too large for an INT."
    if kind == LONG and value > 2**63 - 1:
        return f"Proposed value for {key} is too large for a LONG."
    if abs(value % 1.0) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def _valid_ip_entity(name: str | None) -> bool:
    """InetAddress.getByName: an address literal, or a name that resolves (null: the default entity)."""
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
        return True
    except (OSError, UnicodeError):
        return False

"""Hypothesis strategies generated from the Kafka JSON schemas, shared by the codec tests.

Nothing here is hand-written per message: :func:`message_strategy` walks the
:class:`~protocol.schema.MessageSpec` of a message for one version and, for every
field present in that version, draws a value of the field's wire type (``None``
too where the field is nullable in that version). Fields absent from the version
keep the class default. In flexible versions every struct may also carry random
``unknown_tagged_fields`` whose tags do not collide with the struct's known
tagged fields in that version.

Import it as ``from tests.support.schema_strategies import ...`` (the project root is on pytest's pythonpath).
"""

from __future__ import annotations

import copy
import uuid
from functools import cache
from typing import Any

from hypothesis import strategies as st

from kafka_shim.protocol import codegen
from kafka_shim.protocol.messages import Message, Struct, message_class
from kafka_shim.protocol.primitives import ZERO_UUID
from kafka_shim.protocol.schema import FIXED_TYPES, FieldSpec, FieldType, StructSpec, message_spec, schema_files

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

MAX_STRING = 8  # characters; short keeps examples cheap
MAX_BYTES = 12
MAX_ARRAY = 3
MAX_STRUCT_ARRAY = 2  # arrays of structs nest (topics > partitions > ...): keep them smaller
MAX_UNKNOWN_TAGS = 3
MAX_TAG = 2**31 - 1  # tags are unsigned varints; Kafka keeps them to 31 bits
LONG = (125, 130)  # sizes around the one-byte/two-byte varint boundary of compact lengths
ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E)


def stretched(pieces: st.SearchStrategy[Any], min_size: int, max_size: int) -> st.SearchStrategy[Any]:
    """Long strings, bytes or lists, made cheaply by repeating a short random (non-empty) piece."""

    def stretch(args: tuple[Any, int]) -> Any:
        piece, size = args
        return (piece * size)[:size]

    return st.tuples(pieces, st.integers(min_size, max_size)).map(stretch)


def long_values(pieces: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return stretched(pieces, *LONG)


# -- which (message, version) pairs exist ----------------------------------------------------


def all_message_versions() -> list[tuple[str, int]]:
    """Every (schema name, version) in schemas/, headers included, in a stable order."""
    pairs = []
    for name in schema_files():
        valid = message_spec(name).valid_versions
        assert valid.hi is not None, f"{name} has an open-ended validVersions"
        pairs.extend((name, v) for v in range(valid.lo, valid.hi + 1))
    return pairs


def pair_id(pair: tuple[str, int]) -> str:
    """``("MetadataResponse", 12)`` -> ``"MetadataResponse-v12"`` (the pytest id)."""
    return f"{pair[0]}-v{pair[1]}"


def is_flexible(name: str, version: int) -> bool:
    return version in message_spec(name).flexible_versions


# -- classes of nested structs ---------------------------------------------------------------


def struct_class(message: str, spec: StructSpec) -> type[Struct]:
    cls = message_class(message)
    return cls if spec is message_spec(message).struct else getattr(cls, spec.name)


def default_of(message: str, f: FieldSpec) -> Any:
    """The class default of a field, built the way the generated __init__ builds it."""
    classes = {s.name: struct_class(message, s) for s in message_spec(message).struct_specs()}
    value, factory = codegen.default_value(f, classes)
    return factory() if factory is not None else value


# -- value strategies ------------------------------------------------------------------------


def uuids() -> st.SearchStrategy[uuid.UUID]:
    return st.one_of(st.just(ZERO_UUID), st.binary(min_size=16, max_size=16).map(lambda b: uuid.UUID(bytes=b)))


def primitive_strategy(primitive: str) -> st.SearchStrategy[Any]:
    if primitive in INT_RANGES:
        lo, hi = INT_RANGES[primitive]
        return st.integers(lo, hi)
    if primitive == "bool":
        return st.booleans()
    if primitive == "float64":
        return st.floats(allow_nan=False)
    if primitive == "string":
        # Mostly short; sometimes just around 127 bytes, where a compact length
        # (length + 1) stops fitting in one varint byte.
        return st.one_of(st.text(max_size=MAX_STRING), long_values(st.text(alphabet=ASCII, min_size=1, max_size=3)))
    if primitive in ("bytes", "records"):
        return st.one_of(st.binary(max_size=MAX_BYTES), long_values(st.binary(min_size=1, max_size=3)))
    if primitive == "uuid":
        return uuids()
    raise AssertionError(f"no strategy for primitive type {primitive}")


def type_strategy(message: str, t: FieldType, version: int, flexible: bool, unknown_tags: bool) -> st.SearchStrategy[Any]:
    """Values of a (non-null) field type at one version."""
    if t.kind == "primitive":
        return primitive_strategy(t.primitive)
    if t.kind == "array":
        # Array elements are never null in Kafka schemas.
        element = type_strategy(message, t.element, version, flexible, unknown_tags)
        if t.element.kind == "primitive" and t.element.primitive in FIXED_TYPES:
            # The codec special-cases arrays of fixed-width values shorter than 32
            # elements and compact counts below 128: straddle both boundaries.
            # Long ones repeat a few random elements: cheap to draw.
            return st.one_of(
                st.lists(element, max_size=MAX_ARRAY),
                stretched(st.lists(element, min_size=1, max_size=MAX_ARRAY), 30, 33),
                stretched(st.lists(element, min_size=1, max_size=MAX_ARRAY), 126, 128),
            )
        return st.lists(element, max_size=MAX_STRUCT_ARRAY)
    return struct_strategy(message, t.struct.name, version, flexible, unknown_tags)


def field_strategy(message: str, f: FieldSpec, version: int, flexible: bool, unknown_tags: bool) -> st.SearchStrategy[Any]:
    values = type_strategy(message, f.type, version, flexible, unknown_tags)
    if f.nullable_in(version):
        values = st.one_of(st.none(), values)
    return values


def unknown_tagged_fields_strategy(reserved: frozenset[int]) -> st.SearchStrategy[list[tuple[int, bytes]] | None]:
    """None, or a list of (tag, data) with distinct tags outside ``reserved``, in any order."""
    tags = st.one_of(st.integers(0, 40), st.integers(0, MAX_TAG)).filter(lambda tag: tag not in reserved)
    entries = st.lists(
        st.tuples(tags, st.one_of(st.binary(max_size=MAX_BYTES), long_values(st.binary(min_size=1, max_size=3)))),
        max_size=MAX_UNKNOWN_TAGS,
        unique_by=lambda entry: entry[0],
    )
    return st.one_of(st.none(), entries)


def struct_spec(message: str, struct_name: str) -> StructSpec:
    for spec in message_spec(message).struct_specs():
        if spec.name == struct_name:
            return spec
    raise KeyError(f"{message} has no struct {struct_name}")


@cache
def struct_strategy(
    message: str, struct_name: str, version: int, flexible: bool, unknown_tags: bool = True
) -> st.SearchStrategy[Any]:
    """Instances of one struct at one version (cached: schemas are not recursive)."""
    spec = struct_spec(message, struct_name)
    cls = struct_class(message, spec)
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in spec.fields:
        if f.present_in(version):  # absent fields keep the class default
            kwargs[f.attr] = field_strategy(message, f, version, flexible, unknown_tags)
    if flexible and unknown_tags:
        reserved = frozenset(f.tag for f in spec.fields if f.present_in(version) and f.tagged_in(version))
        kwargs["unknown_tagged_fields"] = unknown_tagged_fields_strategy(reserved)
    return st.builds(cls, **kwargs)


def message_strategy(message: str, version: int, *, unknown_tags: bool = True) -> st.SearchStrategy[Message]:
    """Random instances of a message (or header) that are valid at ``version``."""
    spec = message_spec(message)
    return struct_strategy(message, spec.struct.name, version, version in spec.flexible_versions, unknown_tags)


# -- comparing -------------------------------------------------------------------------------


def sort_unknown_tags(value: Any) -> Any:
    """A deep copy with every struct's unknown_tagged_fields sorted (by tag, then data).

    The encoder writes tagged fields in ascending tag order, so a decoded message
    has them sorted whatever order the original held them in.
    """
    value = copy.deepcopy(value)

    def visit(v: Any) -> None:
        if isinstance(v, Struct):
            if v.unknown_tagged_fields:
                v.unknown_tagged_fields = sorted(v.unknown_tagged_fields)
            for name in v._fields:
                visit(getattr(v, name))
        elif isinstance(v, list):
            for item in v:
                visit(item)

    visit(value)
    return value

"""Kafka's generated JSON form of protocol messages, read into (and written from) ``kafka_shim.protocol.messages``.

Kafka counterpart: the ``XxxJsonConverter`` classes that Kafka's message generator writes from the same schemas
(generator/.../JsonConverterGenerator.java), which the request log (kafka.network.RequestConvertToJson) uses to
render request and response bodies. Their rules, per field of the version being rendered:

- the key is the schema's field name with its first letter lower-cased (``TopicId`` -> ``topicId``);
- a field absent from the version is not written; a tagged field is written only when it differs from its default;
- int8/int16/int32/int64/uint16/uint32 and float64 are JSON numbers, bool a JSON boolean, string a JSON string;
- a uuid is Kafka's ``Uuid.toString()``: URL-safe base64 of its 16 bytes without padding (22 characters);
- bytes are Jackson's BinaryNode: standard base64 with padding;
- records: the request log renders them as ``<name>SizeInBytes`` (an int: KIP-673) instead of the field itself;
  with records serialised the field is an empty base64 string (Kafka writes ``new byte[]{}``);
- a nullable field that is null is JSON ``null``; arrays are JSON arrays; structs JSON objects.

Both directions are built by walking ``protocol.schema``'s model of every message at run time (nothing is written
per API), so every field of every version of every message is covered. Reading is lenient where Kafka's own
reader is strict only for its own safety: a key the version lacks is ignored; a mandatory key that is missing,
or a value of the wrong JSON type, raises ``KafkaJsonError`` naming the field path.

Records cannot be recovered from the log (it holds only their size): they read as ``RecordsSize``, an empty
``bytes`` that remembers the size, which ``plain()`` renders as ``null`` plus a ``<attr>_size_in_bytes`` key.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any

from kafka_shim.protocol import codegen
from kafka_shim.protocol.messages import Message, Struct
from kafka_shim.protocol.schema import FieldSpec, FieldType, StructSpec

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


class KafkaJsonError(ValueError):
    """A JSON body that does not fit the message schema at its version; the message names the field path."""


class RecordsSize(bytes):
    """Records known only by their size (Kafka's request log replaces them with ``<name>SizeInBytes``)."""

    size: int | None

    def __new__(cls, size: int | None) -> RecordsSize:
        obj = super().__new__(cls, b"")
        obj.size = size
        return obj

    def __repr__(self) -> str:
        return f"RecordsSize({self.size})"


def camel_case(name: str) -> str:
    """Kafka's JSON key for a schema field name (FieldSpec.camelCaseName: the first letter lower-cased)."""
    return name[:1].lower() + name[1:]


def uuid_to_kafka(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_kafka(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"a Kafka Uuid is 16 bytes, got {len(raw)}")
    return uuid.UUID(bytes=raw)


# ---------------------------------------------------------------------------------------------------------- reading
def read_message(cls: type[Message], node: Any, version: int) -> Message:
    """A typed message from Kafka's JSON of its body at ``version`` (KafkaJsonError when it does not fit)."""
    if version not in cls.message_spec.valid_versions:
        raise KafkaJsonError(f"{cls.__name__} has no version {version} (the schema knows {cls.message_spec.valid_versions})")
    return _read_struct(cls, cls._spec, node, version, cls.__name__)


def _struct_class(top: type[Message], spec: StructSpec) -> type:
    return top if spec.name == top._spec.name else getattr(top, spec.name)


# Per (struct, version): the fields to read, each (JSON key, attribute, type, nullable, tagged, is records), so the
# schema is walked once per struct and version rather than once per value.
_PLANS: dict[tuple[int, int], list[tuple[str, str, FieldType, bool, bool, bool]]] = {}


def _plan(spec: StructSpec, version: int) -> list[tuple[str, str, FieldType, bool, bool, bool]]:
    plan = _PLANS.get((id(spec), version))
    if plan is None:
        plan = _PLANS[(id(spec), version)] = [
            (camel_case(f.name), f.attr, f.type, f.nullable_in(version), f.tagged_in(version),
             f.type.kind == "primitive" and f.type.primitive == "records")
            for f in spec.fields if f.present_in(version)]
    return plan


def _read_struct(top: type[Message], spec: StructSpec, node: Any, version: int, path: str) -> Any:
    if not isinstance(node, dict):
        raise KafkaJsonError(f"{path}: expected a JSON object, got {_json_type(node)}")
    values: dict[str, Any] = {}
    for key, attr, ftype, nullable, tagged, records in _plan(spec, version):
        if key not in node:
            if records and key + "SizeInBytes" in node:
                size = node[key + "SizeInBytes"]
                if not isinstance(size, int) or isinstance(size, bool):
                    raise KafkaJsonError(f"{path}.{key}SizeInBytes: expected an integer, got {_json_type(size)}")
                values[attr] = RecordsSize(size)
                continue
            if tagged:
                continue  # not written: it has its default
            raise KafkaJsonError(f"{path}.{key}: missing, but the field is mandatory in version {version}")
        values[attr] = _read_value(top, ftype, nullable, node[key], version, f"{path}.{key}")
    return _struct_class(top, spec)(**values)


def _read_value(top: type[Message], t: FieldType, nullable: bool, value: Any, version: int, path: str) -> Any:
    if t.kind == "array":
        if value is None and nullable:
            return None
        if not isinstance(value, list):
            raise KafkaJsonError(f"{path}: expected a JSON array, got {_json_type(value)}")
        return [_read_value(top, t.element, False, v, version, f"{path}[{i}]") for i, v in enumerate(value)]
    if t.kind == "struct":
        if value is None and nullable:
            return None
        return _read_struct(top, t.struct, value, version, path)
    p = t.primitive
    if p in _INT_RANGES:
        if not isinstance(value, int) or isinstance(value, bool):
            raise KafkaJsonError(f"{path}: expected an integer ({p}), got {_json_type(value)}")
        lo, hi = _INT_RANGES[p]
        if not lo <= value <= hi:
            raise KafkaJsonError(f"{path}: {value} is out of range for {p}")
        return value
    if p == "bool":
        if not isinstance(value, bool):
            raise KafkaJsonError(f"{path}: expected a boolean, got {_json_type(value)}")
        return value
    if p == "float64":
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise KafkaJsonError(f"{path}: expected a number, got {_json_type(value)}")
        return float(value)
    if p == "uuid":
        if not isinstance(value, str):
            raise KafkaJsonError(f"{path}: expected a Kafka Uuid string, got {_json_type(value)}")
        try:
            return uuid_from_kafka(value)
        except (ValueError, binascii.Error) as exc:
            raise KafkaJsonError(f"{path}: {value!r} is not a Kafka Uuid ({exc})") from None
    # Variable-length: string, bytes, records, each possibly null.
    if value is None:
        if nullable:
            return None
        raise KafkaJsonError(f"{path}: null, but the field is not nullable in version {version}")
    if p == "string":
        if not isinstance(value, str):
            raise KafkaJsonError(f"{path}: expected a string, got {_json_type(value)}")
        return value
    if not isinstance(value, str):
        raise KafkaJsonError(f"{path}: expected base64 text, got {_json_type(value)}")
    try:
        raw = base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise KafkaJsonError(f"{path}: not base64 ({exc})") from None
    if p == "records" and not raw:
        return RecordsSize(None)  # Kafka's converter writes records as empty even when it serialises them
    return raw


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------------------------------------- writing
def write_message(message: Message, version: int, serialize_records: bool = False) -> dict[str, Any]:
    """Kafka's JSON of a message body at ``version``, as its XxxJsonConverter.write renders it (the request log
    passes ``serialize_records=False``)."""
    return _write_struct(type(message), message._spec, message, version, serialize_records)


def _write_struct(top: type[Message], spec: StructSpec, obj: Any, version: int, serialize_records: bool) -> dict:
    node: dict[str, Any] = {}
    classes = {s.name: _struct_class(top, s) for s in top.message_spec.struct_specs()}
    for f in spec.fields:
        if not f.present_in(version):
            continue
        value = getattr(obj, f.attr)
        if f.tagged_in(version) and _is_default(f, value, classes):
            continue
        key = camel_case(f.name)
        if f.type.kind == "primitive" and f.type.primitive == "records" and value is not None and not serialize_records:
            node[key + "SizeInBytes"] = value.size if isinstance(value, RecordsSize) else len(value)
            continue
        node[key] = _write_value(top, f.type, value, version, serialize_records)
    return node


def _is_default(f: FieldSpec, value: Any, classes: dict[str, type]) -> bool:
    default, factory = codegen.default_value(f, classes)
    return value == (factory() if factory is not None else default)


def _write_value(top: type[Message], t: FieldType, value: Any, version: int, serialize_records: bool) -> Any:
    if value is None:
        return None
    if t.kind == "array":
        return [_write_value(top, t.element, v, version, serialize_records) for v in value]
    if t.kind == "struct":
        return _write_struct(top, t.struct, value, version, serialize_records)
    p = t.primitive
    if p == "uuid":
        return uuid_to_kafka(value)
    if p == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii")
    if p == "records":
        return ""  # Kafka's converter writes an empty BinaryNode even when asked to serialise records
    if p == "float64":
        return float(value)
    return value


# ---------------------------------------------------------------------------------------------- the trace's JSON
def plain(obj: Any) -> Any:
    """A typed message as plain data for the trace's ``request_json`` / ``response_json`` (Struct.to_dict's form),
    with records known only by size as ``null`` plus ``<attr>_size_in_bytes``."""
    if isinstance(obj, Struct):
        out: dict[str, Any] = {}
        for name in obj._fields:
            value = getattr(obj, name)
            if isinstance(value, RecordsSize):
                out[name] = None
                out[f"{name}_size_in_bytes"] = value.size
            else:
                out[name] = plain(value)
        return out
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj

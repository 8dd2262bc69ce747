"""Typed message classes generated from the schemas, with their codecs.

``from kafka_shim.protocol.messages import MetadataRequest`` builds the class on first use
(so start-up does not pay for 178 schemas). Type checkers read messages.pyi instead, which
scripts/gen-message-stubs writes from the same schemas. Fields are snake_case with the
schema's defaults; nested structs are attributes of their message class, e.g.
``MetadataResponse.MetadataResponseTopic``.

    req = MetadataRequest(topics=None)
    data = req.encode(12)
    MetadataRequest.decode(data, 12) == req
"""

from __future__ import annotations

import struct
from typing import Any, ClassVar

from kafka_shim.protocol import codegen
from kafka_shim.protocol.errors import DecodeError, EncodeError, UnsupportedVersionError
from kafka_shim.protocol.primitives import Malformed
from kafka_shim.protocol.schema import MessageSpec, StructSpec, api_index, message_spec, schema_files

_MISSING: Any = object()


class Struct:
    """Base of every generated struct: slots, value equality, a readable repr."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _spec: ClassVar[StructSpec]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for name in self._fields:
            if getattr(self, name) != getattr(other, name):
                return False
        return (self.unknown_tagged_fields or None) == (other.unknown_tagged_fields or None)

    __hash__ = None  # type: ignore[assignment]  # mutable, like Kafka's generated data classes

    def __repr__(self) -> str:
        parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        if self.unknown_tagged_fields:
            parts += f", unknown_tagged_fields={self.unknown_tagged_fields!r}"
        return f"{type(self).__name__}({parts})"

    def to_dict(self) -> dict[str, Any]:
        """A plain-data view (nested structs become dicts), handy for diffs and traces."""
        return {name: _plain(getattr(self, name)) for name in self._fields}


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Message(Struct):
    """A request, response or header. Codecs are built per version on first use."""

    __slots__ = ()
    message_spec: ClassVar[MessageSpec]
    api_key: ClassVar[int | None]
    _decoders: ClassVar[dict[int, Any]]
    _encoders: ClassVar[dict[int, Any]]
    _lenient_decoders: ClassVar[dict[int, Any]]
    _traced_codecs: ClassVar[dict[tuple[int, bool], Any]]

    @classmethod
    def _check_version(cls, version: int, error: type[Exception]) -> None:
        if version not in cls.message_spec.valid_versions:
            raise error(
                f"version {version} is outside the schema's range {cls.message_spec.valid_versions}",
                message=cls.__name__,
                api_key=cls.api_key,
                version=version,
            )

    @classmethod
    def decoder(cls, version: int) -> Any:
        fn = cls._decoders.get(version)
        if fn is None:
            cls._check_version(version, DecodeError)
            fn, _ = codegen.build_decoder(cls.message_spec, version, _classes_of(cls))
            cls._decoders[version] = fn
        return fn

    @classmethod
    def encoder(cls, version: int) -> Any:
        fn = cls._encoders.get(version)
        if fn is None:
            cls._check_version(version, EncodeError)
            fn, _ = codegen.build_encoder(cls.message_spec, version, _classes_of(cls))
            cls._encoders[version] = fn
        return fn

    @classmethod
    def _traced(cls, version: int, decode: bool) -> tuple[Any, list]:
        """The field-tracing codec, built once per version and only after a failure."""
        key = (version, decode)
        traced = cls._traced_codecs.get(key)
        if traced is None:
            build = codegen.build_decoder if decode else codegen.build_encoder
            traced = cls._traced_codecs[key] = build(cls.message_spec, version, _classes_of(cls), trace=True)
        return traced

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int, offset: int = 0, *, whole: bool = False) -> Any:
        """Decode one message at ``offset``. With ``whole=True``, trailing bytes are an error."""
        msg, end = cls.decode_from(data, version, offset)
        if whole and end != len(data):
            raise DecodeError(f"{len(data) - end} unexpected bytes after the message", message=cls.__name__, api_key=cls.api_key, version=version)
        return msg

    @classmethod
    def decode_from(cls, data: bytes | bytearray | memoryview, version: int, offset: int = 0) -> tuple[Any, int]:
        """Decode one message at ``offset``; return it and the offset just past it."""
        if type(data) is not bytes:
            data = bytes(data)
        fn = cls._decoders.get(version) or cls.decoder(version)
        try:
            return fn(data, offset)
        except UnicodeDecodeError:
            pass
        except (Malformed, struct.error, IndexError, ValueError, OverflowError) as exc:
            raise cls._decode_failure(data, version, offset, exc) from None
        # Invalid UTF-8 somewhere: decode again replacing it, as Java's String constructor does.
        lenient = cls._lenient_decoders.get(version)
        if lenient is None:
            lenient, _ = codegen.build_decoder(cls.message_spec, version, _classes_of(cls), lenient_utf8=True)
            cls._lenient_decoders[version] = lenient
        try:
            return lenient(data, offset)
        except (Malformed, struct.error, IndexError, ValueError, OverflowError) as exc:
            raise cls._decode_failure(data, version, offset, exc) from None

    @classmethod
    def _decode_failure(cls, data: bytes, version: int, offset: int, exc: Exception) -> DecodeError:
        # Rerun a traced decoder to name the field; built only on this slow path.
        traced, where = cls._traced(version, decode=True)
        where[0] = None
        try:
            traced(data, offset)
        except Exception:
            pass
        reason = str(exc) if isinstance(exc, Malformed) else f"truncated or malformed data ({type(exc).__name__}: {exc})"
        return DecodeError(reason, message=cls.__name__, api_key=cls.api_key, version=version, field=where[0])

    def encode(self, version: int) -> bytes:
        out: list[bytes] = []
        self.encode_into(out, version)
        return b"".join(out)

    def encode_into(self, out: list[bytes], version: int) -> None:
        """Append the encoded chunks to ``out`` (lets framing add a header without a copy)."""
        cls = type(self)
        fn = cls._encoders.get(version) or cls.encoder(version)
        mark = len(out)
        try:
            fn(self, out)
        except (codegen.UnsupportedField, codegen.Unencodable, struct.error, TypeError, AttributeError, ValueError, OverflowError) as exc:
            del out[mark:]
            raise self._encode_failure(version, exc) from None

    def _encode_failure(self, version: int, exc: Exception) -> EncodeError:
        cls = type(self)
        traced, where = cls._traced(version, decode=False)
        where[0] = None
        try:
            traced(self, [])
        except Exception:
            pass
        kind = UnsupportedVersionError if isinstance(exc, codegen.UnsupportedField) else EncodeError
        return kind(str(exc) or type(exc).__name__, message=cls.__name__, api_key=cls.api_key, version=version, field=where[0])


_classes: dict[str, type[Message]] = {}
_struct_classes: dict[type, dict[str, type]] = {}


def _classes_of(cls: type[Message]) -> dict[str, type]:
    return _struct_classes[cls]


def _make_init(cls: type, spec: StructSpec, classes: dict[str, type], owner: str) -> None:
    ns: dict[str, Any] = {"_M": _MISSING}
    params, body = [], []
    for i, f in enumerate(spec.fields):
        value, factory = codegen.default_value(f, classes)
        if factory is None:
            ns[f"_d{i}"] = value
            params.append(f"{f.attr}=_d{i}")
            body.append(f"    self.{f.attr} = {f.attr}")
        else:
            ns[f"_f{i}"] = factory
            params.append(f"{f.attr}=_M")
            body.append(f"    self.{f.attr} = _f{i}() if {f.attr} is _M else {f.attr}")
    params.append("unknown_tagged_fields=None")
    body.append("    self.unknown_tagged_fields = unknown_tagged_fields")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    # Struct names repeat across messages (TopicData...), so the pseudo-file names the owning message too.
    qualname = spec.name if spec.name == owner else f"{owner}.{spec.name}"
    codegen.compile_generated(source, f"<kafka-shim class {qualname} __init__>", ns)
    cls.__init__ = ns["__init__"]


def message_class(name: str) -> type[Message]:
    """The class for a message schema name such as ``MetadataResponse`` or ``RequestHeader``."""
    cls = _classes.get(name)
    if cls is not None:
        return cls
    spec = message_spec(name)
    structs = spec.struct_specs()
    classes: dict[str, type] = {}
    top = structs[0]
    for s in structs:
        attrs = {
            "__slots__": (*(f.attr for f in s.fields), "unknown_tagged_fields"),
            "_fields": tuple(f.attr for f in s.fields),
            "_spec": s,
            "__module__": __name__,
        }
        if s is top:
            attrs.update(message_spec=spec, api_key=spec.api_key, _decoders={}, _encoders={}, _lenient_decoders={}, _traced_codecs={})
        classes[s.name] = type(s.name, (Message if s is top else Struct,), attrs)
    for s in structs:
        _make_init(classes[s.name], s, classes, top.name)
    cls = classes[top.name]
    for s in structs[1:]:
        setattr(cls, s.name, classes[s.name])
    _struct_classes[cls] = classes
    _classes[name] = cls
    return cls


def request_class(api_key: int) -> type[Message]:
    return message_class(api_index()[api_key][0])


def response_class(api_key: int) -> type[Message]:
    return message_class(api_index()[api_key][1])


def all_message_names() -> list[str]:
    return list(schema_files())


def __getattr__(name: str) -> type[Message]:
    if name in schema_files():
        return message_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Reading Kafka's JSON message schemas into a small typed model.

The schema files carry ``//`` comments, so they are not plain JSON. Everything
here is pure data; :mod:`protocol.codegen` turns it into code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"

# Width in bytes and struct format of every fixed-width primitive.
FIXED_TYPES: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
}
VARIABLE_TYPES = {"string", "bytes", "records", "uuid"}
PRIMITIVES = set(FIXED_TYPES) | VARIABLE_TYPES


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``hi`` of None means open-ended."""

    lo: int
    hi: int | None

    def __contains__(self, version: int) -> bool:
        return version >= self.lo and (self.hi is None or version <= self.hi)

    @property
    def empty(self) -> bool:
        return self.hi is not None and self.hi < self.lo

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return NO_VERSIONS
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        return f"{self.lo}-{self.hi}"


NO_VERSIONS = Versions(1, 0)


@dataclass
class FieldType:
    """A field's type: a primitive, an array of something, or a struct."""

    kind: str  # "primitive" | "array" | "struct"
    primitive: str | None = None
    element: FieldType | None = None
    struct: StructSpec | None = None

    def __str__(self) -> str:
        if self.kind == "array":
            return f"[]{self.element}"
        if self.kind == "struct":
            return self.struct.name
        return self.primitive


@dataclass
class FieldSpec:
    name: str
    attr: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    ignorable: bool
    default: str | None
    flexible_versions: Versions | None  # a per-field override (RequestHeader.ClientId)

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged_versions


@dataclass
class StructSpec:
    name: str
    versions: Versions
    fields: list[FieldSpec] = field(default_factory=list)


@dataclass
class MessageSpec:
    name: str
    type: str  # "request" | "response" | "header"
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    struct: StructSpec
    latest_version_unstable: bool
    listeners: tuple[str, ...]
    deprecated_versions: Versions

    @property
    def api_name(self) -> str:
        """Kafka's name for the API: the message name without Request/Response."""
        for suffix in ("Request", "Response"):
            if self.name.endswith(suffix):
                return self.name[: -len(suffix)]
        return self.name

    def struct_specs(self) -> list[StructSpec]:
        """Every struct this message defines, the top-level one first."""
        seen: dict[str, StructSpec] = {}

        def visit(spec: StructSpec) -> None:
            if spec.name in seen:
                return
            seen[spec.name] = spec
            for f in spec.fields:
                t = f.type.element if f.type.kind == "array" else f.type
                if t.kind == "struct":
                    visit(t.struct)

        visit(self.struct)
        return list(seen.values())


_COMMENT = re.compile(r"^\s*//.*$", re.M)
_CAMEL_1 = re.compile(r"(.)([A-Z][a-z]+)")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """``TopicAuthorizedOperations`` -> ``topic_authorized_operations``."""
    return _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", name)).lower()


def load_json(path: Path) -> dict:
    return json.loads(_COMMENT.sub("", path.read_text(encoding="utf-8")))


def parse_message(doc: dict) -> MessageSpec:
    valid = Versions.parse(doc["validVersions"])
    common: dict[str, dict] = {c["name"]: c for c in doc.get("commonStructs", [])}
    built: dict[str, StructSpec] = {}

    def build_struct(name: str, versions: Versions, fields: list[dict]) -> StructSpec:
        spec = StructSpec(name, versions)
        built[name] = spec
        spec.fields = [build_field(f) for f in fields]
        return spec

    def resolve_type(type_name: str, f: dict) -> FieldType:
        if type_name.startswith("[]"):
            return FieldType("array", element=resolve_type(type_name[2:], f))
        if type_name in PRIMITIVES:
            return FieldType("primitive", primitive=type_name)
        if type_name in built:
            return FieldType("struct", struct=built[type_name])
        if "fields" in f:
            versions = Versions.parse(f.get("versions"))
            return FieldType("struct", struct=build_struct(type_name, versions, f["fields"]))
        if type_name in common:
            c = common[type_name]
            return FieldType("struct", struct=build_struct(type_name, Versions.parse(c["versions"]), c["fields"]))
        raise ValueError(f"{doc['name']}: unknown type {type_name!r}")

    def build_field(f: dict) -> FieldSpec:
        flex = f.get("flexibleVersions")
        return FieldSpec(
            name=f["name"],
            attr=snake_case(f["name"]),
            type=resolve_type(f["type"], f),
            versions=Versions.parse(f.get("versions")),
            nullable_versions=Versions.parse(f.get("nullableVersions")),
            tagged_versions=Versions.parse(f.get("taggedVersions")),
            # One 3.9 schema (BrokerHeartbeatRequest) writes its tag as a string; Kafka's generator reads it as a number.
            tag=int(f["tag"]) if f.get("tag") is not None else None,
            ignorable=bool(f.get("ignorable", False)),
            default=None if f.get("default") is None else str(f["default"]),
            flexible_versions=None if flex is None else Versions.parse(flex),
        )

    top = build_struct(doc["name"], valid, doc["fields"])
    return MessageSpec(
        name=doc["name"],
        type=doc["type"],
        api_key=doc.get("apiKey"),
        valid_versions=valid,
        flexible_versions=Versions.parse(doc.get("flexibleVersions")),
        struct=top,
        latest_version_unstable=bool(doc.get("latestVersionUnstable", False)),
        listeners=tuple(doc.get("listeners", ())),
        deprecated_versions=Versions.parse(doc.get("deprecatedVersions")),
    )


@cache
def schema_files() -> dict[str, Path]:
    """Message name -> file, for every request, response and header schema."""
    files = {}
    for path in sorted(SCHEMA_DIR.glob("*.json")):
        stem = path.stem
        if stem.endswith(("Request", "Response", "Header")):
            files[stem] = path
    return files


@cache
def message_spec(name: str) -> MessageSpec:
    try:
        path = schema_files()[name]
    except KeyError:
        raise KeyError(f"no Kafka message schema named {name!r} in {SCHEMA_DIR}") from None
    return parse_message(load_json(path))


@cache
def api_index() -> dict[int, tuple[str, str]]:
    """API key -> (request message name, response message name).

    Reads only the first few lines of each request file, so that start-up does
    not parse every schema.
    """
    index: dict[int, tuple[str, str]] = {}
    key_re = re.compile(r'"apiKey"\s*:\s*(\d+)')
    for name, path in schema_files().items():
        if not name.endswith("Request") or name == "RequestHeader":
            continue
        match = key_re.search(path.read_text(encoding="utf-8"))
        if match:
            index[int(match.group(1))] = (name, name[: -len("Request")] + "Response")
    return dict(sorted(index.items()))

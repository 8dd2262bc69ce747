"""Generate specialised encode/decode functions per (message, version).

Each function is straight-line Python built once from the schema: nested structs
are inlined, consecutive fixed-width fields are read and written with a single
precompiled ``struct.Struct``, and nothing walks the schema at run time.

A second, *traced* variant records the path of the field being processed; it is
only built when a fast codec has failed, to say which field was at fault.

Each codec is compiled under its own pseudo-file name, such as
``<kafka-shim codec MetadataResponse v12 decode>``, with its source in :mod:`linecache`,
so a traceback through it shows the message, version and line. To read one:

    python -m kafka_shim.protocol.codegen MetadataResponse 12 [decode|encode] [--traced]
"""

from __future__ import annotations

import linecache
import struct
import uuid
from collections.abc import Callable
from typing import Any

from kafka_shim.protocol.java_utf8 import HANDLER as JAVA_REPLACE
from kafka_shim.protocol.primitives import (
    SMALL_UVARINTS,
    ZERO_UUID,
    ZERO_UUID_BYTES,
    Malformed,
    read_java_uvarint,
    write_uvarint,
)
from kafka_shim.protocol.schema import FIXED_TYPES, FieldSpec, FieldType, MessageSpec, StructSpec, message_spec

# Decoded values of a single byte: signed for int8, Java's "!= 0" for bool.
_BYTE_TABLES = {"int8": tuple(b - 256 if b > 127 else b for b in range(256)), "bool": tuple(b != 0 for b in range(256))}
_TABLE = 32  # arrays of fixed-width elements shorter than this use a precompiled Struct
_ARRAY_STRUCTS = {code: tuple(struct.Struct(f">{n}{code}") for n in range(_TABLE)) for code, _ in FIXED_TYPES.values()}
_COMPACT_ARRAY_STRUCTS = {code: tuple(struct.Struct(f">B{n}{code}") for n in range(_TABLE)) for code, _ in FIXED_TYPES.values()}
_ARRAY_WITH_LENGTH_STRUCTS = {code: tuple(struct.Struct(f">i{n}{code}") for n in range(_TABLE)) for code, _ in FIXED_TYPES.values()}


class UnsupportedField(Exception):
    """A non-default value for a field the target version lacks."""


class Unencodable(Exception):
    """A value the wire format cannot hold (a string too long for its length prefix)."""




def default_value(f: FieldSpec, classes: dict[str, type]) -> tuple[Any, Callable[[], Any] | None]:
    """(immutable default, or None with a factory that builds a fresh mutable default)."""
    t, d = f.type, f.default
    if t.kind == "array":
        return (None, None) if d == "null" else (None, list)
    if t.kind == "struct":
        return (None, None) if d == "null" else (None, classes[t.struct.name])
    p = t.primitive
    if p in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return (int(d, 0) if d else 0), None
    if p == "bool":
        return (d is not None and d.strip().lower() == "true"), None
    if p == "float64":
        return (float(d) if d else 0.0), None
    if p == "string":
        return (None if d == "null" else (d or "")), None
    if p in ("bytes", "records"):
        if d == "null" or (d is None and p == "records" and not f.nullable_versions.empty):
            return None, None
        return b"", None
    if p == "uuid":
        return ZERO_UUID, None
    raise ValueError(f"no default for type {p}")


class _Emitter:
    def __init__(self, spec: MessageSpec, version: int, classes: dict[str, type], trace: bool, lenient_utf8: bool = False) -> None:
        self.spec = spec
        # Strict UTF-8 is the fast path; on invalid bytes the caller retries with a decoder that
        # replaces them with U+FFFD as a Java broker's String constructor does (java_utf8.py: Java's count of them).
        self.string_decode = ".decode('utf-8', '" + JAVA_REPLACE + "')" if lenient_utf8 or trace else ".decode()"
        self.version = version
        self.flexible = version in spec.flexible_versions
        self.classes = classes
        self.trace = trace
        self.lines: list[str] = []
        self.counter = 0
        self.ns: dict[str, Any] = {
            "_ruv": read_java_uvarint,
            "_wuv": write_uvarint,
            "_UV": SMALL_UVARINTS,
            "_Mal": Malformed,
            "_Unsup": UnsupportedField,
            "_Unenc": Unencodable,
            "_UUID": uuid.UUID,
            "_ZU": ZERO_UUID,
            "_ZB": ZERO_UUID_BYTES,
            "_I16": struct.Struct(">h"),
            "_I32": struct.Struct(">i"),
            "_pack": struct.pack,
            "_unpack_from": struct.unpack_from,
            "_Struct": struct.Struct,
            "_new": object.__new__,
            "_setattr": object.__setattr__,
            "_int_from": int.from_bytes,
            "_SAFE_UNKNOWN": uuid.SafeUUID.unknown,
            "_tr": [None],
        }
        self._consts: dict[Any, str] = {}

    # -- helpers -------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def const(self, value: Any, base: str = "_k") -> str:
        key = (type(value).__name__, repr(value)) if not isinstance(value, type) else ("cls", id(value))
        if key in self._consts:
            return self._consts[key]
        name = self.fresh(base)
        self.ns[name] = value
        self._consts[key] = name
        return name

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def check(self, ind: int, condition: str, reason: str) -> None:
        """A bounds check the fast path can leave to the end-of-message check.

        Reading past the end either fails at the next read or leaves ``pos`` beyond
        the data, which the final check rejects; the traced variant checks every
        read so that it names the right field.
        """
        if self.trace:
            self.emit(ind, f"if {condition}: raise _Mal({reason})")

    def mark(self, ind: int, path: str) -> None:
        if self.trace:
            self.emit(ind, f"_tr[0] = {path!r}")

    def field_flexible(self, f: FieldSpec) -> bool:
        if f.flexible_versions is not None:
            return self.version in f.flexible_versions
        return self.flexible

    def default_expr(self, f: FieldSpec) -> str:
        value, factory = default_value(f, self.classes)
        if factory is list:
            return "[]"
        if factory is not None:
            return f"{self.const(factory, '_C')}()"
        return self.const(value, "_d")

    def struct_fmt(self, primitives: list[str]) -> tuple[str, int]:
        fmt = ">" + "".join(FIXED_TYPES[p][0] for p in primitives)
        name = self._consts.get(("fmt", fmt))
        if name is None:
            name = self._consts[("fmt", fmt)] = self.fresh("_S")
            self.ns[name] = struct.Struct(fmt)
        return name, struct.calcsize(fmt)

    @staticmethod
    def is_fixed(t: FieldType) -> bool:
        return t.kind == "primitive" and t.primitive in FIXED_TYPES

    def runs(self, fields: list[FieldSpec]) -> list[list[FieldSpec]]:
        """Group consecutive fixed-width fields so each group is one struct call."""
        groups: list[list[FieldSpec]] = []
        for f in fields:
            if self.is_fixed(f.type) and groups and self.is_fixed(groups[-1][-1].type) and not self.trace:
                groups[-1].append(f)
            else:
                groups.append([f])
        return groups

    # -- decoding ------------------------------------------------------------------------
    def read_uvarint(self, ind: int, var: str) -> None:
        self.emit(ind, f"{var} = buf[pos]")
        self.emit(ind, f"if {var} < 128: pos += 1")
        self.emit(ind, f"else: {var}, pos = _ruv(buf, pos)")

    def read_length(self, ind: int, flex: bool, wide: bool) -> str:
        n = self.fresh("n")
        if flex:
            self.read_uvarint(ind, n)
            self.emit(ind, f"{n} -= 1")
            # Java's int wraps: a varint of 2^31 is -2^31, less one a huge count, not null
            self.emit(ind, f"if {n} == -2147483649: {n} = 2147483647")
        else:
            self.emit(ind, f"{n}, = {'_I32' if wide else '_I16'}.unpack_from(buf, pos)")
            self.emit(ind, f"pos += {4 if wide else 2}")
        return n

    def read_null_or(self, ind: int, n: str, x: str, nullable: bool) -> int:
        """Emit the null branch for a length ``n``; return the indent of the non-null branch."""
        self.emit(ind, f"if {n} < 0:")
        if nullable:
            # Kafka's generated readers take any negative length as null, not only -1.
            self.emit(ind + 1, f"{x} = None")
        else:
            self.emit(ind + 1, "raise _Mal('null or negative length for a non-nullable field')")
        self.emit(ind, "else:")
        return ind + 1

    def read_value(self, t: FieldType, nullable: bool, flex: bool, ind: int, path: str, target: str | None = None) -> str:
        """Emit the read of one value; return where it was stored (``target`` when given)."""
        x = target or self.fresh("x")
        if t.kind == "primitive" and t.primitive in _BYTE_TABLES:
            # One byte: a table lookup beats a struct call and a tuple unpack.
            self.emit(ind, f"{x} = {self.const(_BYTE_TABLES[t.primitive], '_T')}[buf[pos]]")
            self.emit(ind, "pos += 1")
            return x
        if self.is_fixed(t):
            s, size = self.struct_fmt([t.primitive])
            self.emit(ind, f"{x}, = {s}.unpack_from(buf, pos)")
            self.emit(ind, f"pos += {size}")
            return x
        if t.kind == "primitive" and t.primitive == "uuid":
            x = self.fresh("x")  # read back below: keep it in a local
            e = self.fresh("e")
            self.emit(ind, f"{e} = pos + 16")
            self.check(ind, f"{e} > blen", "'truncated uuid'")
            self.emit(ind, f"{x} = buf[pos:{e}]")
            self.emit(ind, f"pos = {e}")
            # UUID(bytes=...) validates its arguments at length; 16 bytes need none of that.
            self.emit(ind, f"if {x} == _ZB: {x} = _ZU")
            self.emit(ind, "else:")
            self.emit(ind + 1, f"_u = _new(_UUID); _setattr(_u, 'int', _int_from({x})); _setattr(_u, 'is_safe', _SAFE_UNKNOWN); {x} = _u")
            return x
        if t.kind == "primitive":  # string, bytes, records
            is_string = t.primitive == "string"
            if flex:
                # Fast path: a one-byte length. Anything else goes through a helper.
                c, e = self.fresh("c"), self.fresh("e")
                self.emit(ind, f"{c} = buf[pos]")
                self.emit(ind, f"if 0 < {c} < 128:")
                self.emit(ind + 1, f"{e} = pos + {c}")
                self.check(ind + 1, f"{e} > blen", f"'length ' + str({c} - 1) + ' runs past the end of the data'")
                decode = self.string_decode if is_string else ""
                self.emit(ind + 1, f"{x} = buf[pos + 1:{e}]{decode}")
                self.emit(ind + 1, f"pos = {e}")
                self.emit(ind, "else:")
                self.emit(ind + 1, f"{x}, pos = _read_compact(buf, pos, {nullable}, {is_string})")
                self.ns["_read_compact"] = read_compact_bytes
                return x
            n = self.read_length(ind, flex, wide=not is_string)
            body = self.read_null_or(ind, n, x, nullable)
            e = self.fresh("e")
            self.emit(body, f"{e} = pos + {n}")
            self.check(body, f"{e} > blen", f"'length ' + str({n}) + ' runs past the end of the data'")
            if is_string:
                self.emit(body, f"{x} = buf[pos:{e}]{self.string_decode}")
            else:
                self.emit(body, f"{x} = buf[pos:{e}]")
            self.emit(body, f"pos = {e}")
            return x
        if t.kind == "array" and flex and self.is_fixed(t.element):
            code, width = FIXED_TYPES[t.element.primitive]
            table = self.const((None,) + _ARRAY_STRUCTS[code], "_A")
            c, e = self.fresh("c"), self.fresh("e")
            self.emit(ind, f"{c} = buf[pos]")
            self.emit(ind, f"if 0 < {c} <= {_TABLE}:")
            self.emit(ind + 1, f"{e} = pos + 1 + ({c} - 1) * {width}")
            self.check(ind + 1, f"{e} > blen", f"'array of ' + str({c} - 1) + ' elements runs past the end of the data'")
            self.emit(ind + 1, f"{x} = list({table}[{c}].unpack_from(buf, pos + 1))")
            self.emit(ind + 1, f"pos = {e}")
            self.emit(ind, "else:")
            self.emit(ind + 1, f"{x}, pos = _read_compact_array(buf, pos, {nullable}, {code!r}, {width})")
            self.ns["_read_compact_array"] = read_compact_fixed_array
            return x
        if t.kind == "array":
            n = self.read_length(ind, flex, wide=True)
            body = self.read_null_or(ind, n, x, nullable)
            self.emit(body, f"if {n} > blen - pos: raise _Mal('array of ' + str({n}) + ' elements cannot fit in the remaining bytes')")
            el = t.element
            if self.is_fixed(el):
                code, width = FIXED_TYPES[el.primitive]
                table = self.const(_ARRAY_STRUCTS[code], "_A")
                self.check(body, f"pos + {n} * {width} > blen", "'truncated array'")
                self.emit(body, f"{x} = list(({table}[{n}] if {n} < {_TABLE} else _Struct('>%d{code}' % {n})).unpack_from(buf, pos))")
                self.emit(body, f"pos += {n} * {width}")
                return x
            self.emit(body, f"{x} = []")
            ap = self.fresh("ap")
            self.emit(body, f"{ap} = {x}.append")
            self.emit(body, f"for _ in range({n}):")
            if el.kind == "struct":
                y = self.decode_struct(el.struct, body + 1, path)
            else:
                y = self.read_value(el, False, flex, body + 1, path)
            self.emit(body + 1, f"{ap}({y})")
            return x
        # a single struct
        if nullable:
            self.emit(ind, "if buf[pos] >= 128:")
            self.emit(ind + 1, "pos += 1")
            self.emit(ind + 1, f"{x} = None")
            self.emit(ind, "else:")
            self.emit(ind + 1, "pos += 1")
            y = self.decode_struct(t.struct, ind + 1, path)
            self.emit(ind + 1, f"{x} = {y}")
            return x
        return self.decode_struct(t.struct, ind, path)

    def decode_struct(self, spec: StructSpec, ind: int, path: str) -> str:
        # The object is created first and its slots filled as fields are read: cheaper
        # than collecting locals and calling a Python __init__.
        v = self.version
        obj = self.fresh("o")
        self.emit(ind, f"{obj} = _new({self.const(self.classes[spec.name], '_C')})")
        regular = [f for f in spec.fields if f.present_in(v) and not f.tagged_in(v)]
        tagged = sorted((f for f in spec.fields if f.present_in(v) and f.tagged_in(v)), key=lambda f: f.tag)
        for f in spec.fields:
            if f not in regular:
                self.emit(ind, f"{obj}.{f.attr} = {self.default_expr(f)}")
        for group in self.runs(regular):
            first = group[0]
            fpath = f"{path}.{first.name}" if path else first.name
            self.mark(ind, fpath)
            target = f"{obj}.{first.attr}"
            if len(group) > 1 and all(f.type.primitive in _BYTE_TABLES for f in group):
                for i, f in enumerate(group):
                    table = self.const(_BYTE_TABLES[f.type.primitive], "_T")
                    self.emit(ind, f"{obj}.{f.attr} = {table}[buf[pos + {i}]]")
                self.emit(ind, f"pos += {len(group)}")
            elif self.is_fixed(first.type) and len(group) > 1:
                s, size = self.struct_fmt([f.type.primitive for f in group])
                self.emit(ind, f"{', '.join(f'{obj}.{f.attr}' for f in group)}, = {s}.unpack_from(buf, pos)")
                self.emit(ind, f"pos += {size}")
            else:
                val = self.read_value(first.type, first.nullable_in(v), self.field_flexible(first), ind, fpath, target)
                if val != target:
                    self.emit(ind, f"{target} = {val}")
        if not self.flexible:
            self.emit(ind, f"{obj}.unknown_tagged_fields = None")
            return obj
        self.mark(ind, f"{path}.<tagged fields>" if path else "<tagged fields>")
        # Almost every struct carries no tagged fields: one byte, zero.
        self.emit(ind, "if buf[pos] == 0:")
        self.emit(ind + 1, "pos += 1")
        self.emit(ind + 1, f"{obj}.unknown_tagged_fields = None")
        self.emit(ind, "else:")
        ind += 1
        unknown = self.fresh("u")
        self.emit(ind, f"{unknown} = None")
        nt, tag, size, end = self.fresh("nt"), self.fresh("tag"), self.fresh("sz"), self.fresh("end")
        self.read_uvarint(ind, nt)
        self.emit(ind, f"for _ in range({nt}):")
        body = ind + 1
        self.read_uvarint(body, tag)
        self.read_uvarint(body, size)
        # Kafka's readers read a known tag's value where it starts and never look at its size; only an unknown
        # tag's bytes are taken by the size.
        keyword = "if"
        for f in tagged:
            fpath = f"{path}.{f.name}" if path else f.name
            self.emit(body, f"{keyword} {tag} == {f.tag}:")
            self.mark(body + 1, fpath)
            val = self.read_value(f.type, f.nullable_in(v), True, body + 1, fpath)
            self.emit(body + 1, f"{obj}.{f.attr} = {val}")
            keyword = "elif"
        if tagged:
            self.emit(body, "else:")
            body += 1
        self.emit(body, f"{end} = pos + {size}")
        self.emit(body, f"if {size} < 0 or {end} > blen: raise _Mal('tagged field of ' + str({size}) + ' bytes runs past the end of the data')")
        self.emit(body, f"if {unknown} is None: {unknown} = []")
        # a tag of 2^31 or more reads as a negative int in Java; kept as its unsigned value, which writes back the same
        self.emit(body, f"{unknown}.append(({tag} & 0xFFFFFFFF, buf[pos:{end}]))")
        self.emit(body, f"pos = {end}")
        self.emit(ind, f"{obj}.unknown_tagged_fields = {unknown}")
        return obj

    # -- encoding ------------------------------------------------------------------------
    def write_length(self, ind: int, ap: str, n_expr: str, flex: bool, wide: bool) -> None:
        if flex:
            n = self.fresh("n")
            self.emit(ind, f"{n} = {n_expr} + 1")
            self.emit(ind, f"{ap}(_UV[{n}] if {n} < 128 else _wuv({n}))")
        else:
            self.emit(ind, f"{ap}({'_I32' if wide else '_I16'}.pack({n_expr}))")

    def write_null_or(self, ind: int, ap: str, x: str, nullable: bool, null_bytes: bytes) -> int:
        if not nullable:
            return ind
        self.emit(ind, f"if {x} is None:")
        self.emit(ind + 1, f"{ap}({null_bytes!r})")
        self.emit(ind, "else:")
        return ind + 1

    def write_value(self, t: FieldType, nullable: bool, flex: bool, expr: str, ind: int, ap: str, path: str) -> None:
        if self.is_fixed(t):
            s, _ = self.struct_fmt([t.primitive])
            self.emit(ind, f"{ap}({s}.pack({expr}))")
            return
        x = self.fresh("x")
        self.emit(ind, f"{x} = {expr}")
        if t.kind == "primitive" and t.primitive == "uuid":
            self.emit(ind, f"{ap}({x}.bytes)")
            return
        if t.kind == "primitive":
            is_string = t.primitive == "string"
            null = b"\x00" if flex else (b"\xff\xff" if is_string else b"\xff\xff\xff\xff")
            body = self.write_null_or(ind, ap, x, nullable, null)
            if is_string:
                # A lone surrogate (a Python str may hold one, e.g. from a JSON escape) becomes "?", as Java's
                # String.getBytes(UTF_8) writes it.
                self.emit(body, f"{x} = {x}.encode('utf-8', 'replace')")
                # Kafka caps every string at 32767 bytes, compact ones included.
                self.emit(body, f"if len({x}) > 32767: raise _Unenc('string of ' + str(len({x})) + ' bytes is longer than 32767')")
            if t.primitive == "records":
                # Records (a Fetch answer's megabytes) go into the output as they are: prefixing them with their
                # length by concatenation would copy them once more before the frame's own join.
                self.write_length(body, ap, f"len({x})", flex, wide=True)
                self.emit(body, f"{ap}({x})")
            elif flex:
                n = self.fresh("n")
                self.emit(body, f"{n} = len({x}) + 1")
                self.emit(body, f"{ap}((_UV[{n}] if {n} < 128 else _wuv({n})) + {x})")
            else:
                self.emit(body, f"{ap}({'_I32' if not is_string else '_I16'}.pack(len({x})) + {x})")
            return
        if t.kind == "array":
            body = self.write_null_or(ind, ap, x, nullable, b"\x00" if flex else b"\xff\xff\xff\xff")
            el = t.element
            if self.is_fixed(el):
                code, _ = FIXED_TYPES[el.primitive]
                n = self.fresh("n")
                table = self.const((_COMPACT_ARRAY_STRUCTS if flex else _ARRAY_WITH_LENGTH_STRUCTS)[code], "_A")
                self.emit(body, f"{n} = len({x})")
                self.emit(body, f"if {n} < {_TABLE}: {ap}({table}[{n}].pack({n} + {int(flex)}, *{x}))")
                self.emit(body, "else:")
                self.write_length(body + 1, ap, n, flex, wide=True)
                self.emit(body + 1, f"{ap}(_pack('>%d{code}' % {n}, *{x}))")
                return
            self.write_length(body, ap, f"len({x})", flex, wide=True)
            e = self.fresh("e")
            self.emit(body, f"for {e} in {x}:")
            if el.kind == "struct":
                self.encode_struct(el.struct, e, body + 1, ap, path)
            else:
                self.write_value(el, False, flex, e, body + 1, ap, path)
            return
        body = self.write_null_or(ind, ap, x, nullable, b"\xff")
        if nullable:
            self.emit(body, f"{ap}(b'\\x01')")
        self.encode_struct(t.struct, x, body, ap, path)

    def encode_struct(self, spec: StructSpec, obj: str, ind: int, ap: str, path: str) -> None:
        v = self.version
        for f in spec.fields:
            if not f.present_in(v) and not f.ignorable:
                fpath = f"{path}.{f.name}" if path else f.name
                self.mark(ind, fpath)
                self.emit(ind, f"if {obj}.{f.attr} != {self.default_expr(f)}:")
                self.emit(ind + 1, f"raise _Unsup('Attempted to write a non-default {f.name} at version {v}')")
        regular = [f for f in spec.fields if f.present_in(v) and not f.tagged_in(v)]
        for group in self.runs(regular):
            first = group[0]
            fpath = f"{path}.{first.name}" if path else first.name
            self.mark(ind, fpath)
            if self.is_fixed(first.type):
                s, _ = self.struct_fmt([f.type.primitive for f in group])
                self.emit(ind, f"{ap}({s}.pack({', '.join(f'{obj}.{f.attr}' for f in group)}))")
            else:
                self.write_value(first.type, first.nullable_in(v), self.field_flexible(first), f"{obj}.{first.attr}", ind, ap, fpath)
        if not self.flexible:
            self.mark(ind, f"{path}.<tagged fields>" if path else "<tagged fields>")
            self.emit(ind, f"if {obj}.unknown_tagged_fields: raise _Unsup('Tagged fields were set, but version {v} of this message does not support them.')")
            return
        self.mark(ind, f"{path}.<tagged fields>" if path else "<tagged fields>")
        tagged = sorted((f for f in spec.fields if f.present_in(v) and f.tagged_in(v)), key=lambda f: f.tag)
        unknown = self.fresh("u")
        self.emit(ind, f"{unknown} = {obj}.unknown_tagged_fields")
        if not tagged:
            self.emit(ind, f"if {unknown}: _write_tags({ap}, sorted({unknown}))")
            self.emit(ind, f"else: {ap}(b'\\x00')")
            self.ns["_write_tags"] = write_tagged_fields
            return
        self.ns["_write_tags"] = write_tagged_fields
        tags = self.fresh("tg")
        self.emit(ind, f"{tags} = list({unknown}) if {unknown} else []")
        for f in tagged:
            fpath = f"{path}.{f.name}" if path else f.name
            self.mark(ind, fpath)
            self.emit(ind, f"if {obj}.{f.attr} != {self.default_expr(f)}:")
            sub, sub_ap = self.fresh("sb"), self.fresh("sap")
            self.emit(ind + 1, f"{sub} = []")
            self.emit(ind + 1, f"{sub_ap} = {sub}.append")
            self.write_value(f.type, f.nullable_in(v), True, f"{obj}.{f.attr}", ind + 1, sub_ap, fpath)
            self.emit(ind + 1, f"{tags}.append(({f.tag}, b''.join({sub})))")
        self.emit(ind, f"{tags}.sort(key=_tag_of)")
        self.ns["_tag_of"] = _tag_of
        self.emit(ind, f"_write_tags({ap}, {tags})")


_INT_MIN = -(1 << 31)


def read_compact_bytes(buf: bytes, pos: int, nullable: bool, is_string: bool) -> tuple[Any, int]:
    """The general case of a compact string or bytes: null (any negative length, as Kafka reads it), or a multi-byte
    length."""
    n, pos = read_java_uvarint(buf, pos)
    if n <= 0 and n != _INT_MIN:  # less one, Java's int wraps -2^31 round to a huge length
        if not nullable:
            raise Malformed("null value for a non-nullable field")
        return None, pos
    if n == _INT_MIN:
        n = 1 << 31
    if is_string and n - 1 > 0x7FFF:
        raise Malformed(f"string of invalid length {n - 1} (more than 32767)")
    end = pos + n - 1
    if end > len(buf):
        raise Malformed(f"length {n - 1} runs past the end of the data")
    data = buf[pos:end]
    return (data.decode("utf-8", JAVA_REPLACE) if is_string else data), end


def read_compact_fixed_array(buf: bytes, pos: int, nullable: bool, code: str, width: int) -> tuple[Any, int]:
    """The general case of a compact array of fixed-width elements."""
    n, pos = read_java_uvarint(buf, pos)
    if n <= 0 and n != _INT_MIN:
        if not nullable:
            raise Malformed("null value for a non-nullable field")
        return None, pos
    n = (1 << 31) - 1 if n == _INT_MIN else n - 1
    end = pos + n * width
    if end > len(buf):
        raise Malformed(f"array of {n} elements runs past the end of the data")
    return list(struct.unpack_from(f">{n}{code}", buf, pos)), end


def _tag_of(item: tuple[int, bytes]) -> int:
    return item[0]


def write_tagged_fields(ap: Callable[[bytes], Any], fields: list[tuple[int, bytes]]) -> None:
    ap(write_uvarint(len(fields)))
    for tag, data in fields:
        if type(data) is not bytes:
            data = bytes(data)  # a str or other non-bytes value fails here, inside the encoder
        ap(write_uvarint(tag))
        ap(write_uvarint(len(data)))
        ap(data)


def codec_filename(spec: MessageSpec, version: int, kind: str, variant: str = "") -> str:
    """The pseudo-file a codec is compiled under: tracebacks show it, and linecache holds its source."""
    suffix = f", {variant}" if variant else ""
    return f"<kafka-shim codec {spec.name} v{version} {kind}{suffix}>"


def compile_generated(source: str, filename: str, namespace: dict[str, Any]) -> None:
    """Compile and run generated ``source`` in ``namespace``, keeping the source for tracebacks.

    The text is registered in :mod:`linecache` under ``filename``: a traceback through the
    generated code then shows the failing line, as it would for a file. The modification time
    of ``None`` tells ``linecache.checkcache`` not to look for the pseudo-file on disk.
    """
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)  # the source is generated from the vendored schemas


def _variant(trace: bool, lenient_utf8: bool) -> str:
    # The fast, traced and lenient codecs of one version differ in source, so each gets its own name.
    if trace:
        return "traced"
    return "lenient utf-8" if lenient_utf8 else ""


def _decoder_source(em: _Emitter) -> str:
    obj = em.decode_struct(em.spec.struct, 1, "")
    em.emit(1, "if pos > blen: raise _Mal('the message runs past the end of the data')")
    em.emit(1, f"return {obj}, pos")
    return "def decode(buf, pos):\n    blen = len(buf)\n" + "\n".join(em.lines) + "\n"


def _encoder_source(em: _Emitter) -> str:
    em.encode_struct(em.spec.struct, "o", 1, "ap", "")
    return "def encode(o, out):\n    ap = out.append\n" + "\n".join(em.lines) + "\n"


def _compile(em: _Emitter, source: str, kind: str, variant: str) -> tuple[Callable, list]:
    compile_generated(source, codec_filename(em.spec, em.version, kind, variant), em.ns)
    return em.ns[kind], em.ns["_tr"]


def build_decoder(
    spec: MessageSpec, version: int, classes: dict[str, type], trace: bool = False, lenient_utf8: bool = False
) -> tuple[Callable, list]:
    """``decode(buf: bytes, pos: int) -> (message, new_pos)`` for one version."""
    em = _Emitter(spec, version, classes, trace, lenient_utf8)
    return _compile(em, _decoder_source(em), "decode", _variant(trace, lenient_utf8))


def build_encoder(spec: MessageSpec, version: int, classes: dict[str, type], trace: bool = False) -> tuple[Callable, list]:
    """``encode(message, out: list[bytes])`` appending the body's chunks for one version."""
    em = _Emitter(spec, version, classes, trace)
    return _compile(em, _encoder_source(em), "encode", _variant(trace, False))


def codec_source(spec: MessageSpec, version: int, kind: str, *, trace: bool = False, lenient_utf8: bool = False) -> str:
    """The Python source of one codec, as :func:`build_decoder` / :func:`build_encoder` compile it.

    The source names classes and constants only through the generated names it binds in its
    namespace (``_C3``), so stand-in classes give the very text the real ones do.
    """
    if kind not in ("decode", "encode"):
        raise ValueError(f"kind must be 'decode' or 'encode', not {kind!r}")
    stand_ins: dict[str, type] = {s.name: type(s.name, (), {}) for s in spec.struct_specs()}
    if kind == "decode":
        return _decoder_source(_Emitter(spec, version, stand_ins, trace, lenient_utf8))
    return _encoder_source(_Emitter(spec, version, stand_ins, trace))


def main(argv: list[str] | None = None) -> int:
    """``python -m kafka_shim.protocol.codegen MetadataResponse 12 [decode|encode]``: print a codec's source."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m kafka_shim.protocol.codegen",
        description="Print the generated Python source of one message codec; its line numbers are the ones tracebacks show.",
    )
    parser.add_argument("message", help="schema name, e.g. MetadataResponse or RequestHeader")
    parser.add_argument("version", type=int)
    parser.add_argument("kind", nargs="?", choices=("decode", "encode"), default="decode")
    parser.add_argument("--traced", action="store_true", help="the variant that records the field being processed")
    args = parser.parse_args(argv)
    try:
        spec = message_spec(args.message)
    except KeyError as exc:
        parser.error(exc.args[0])
    if args.version not in spec.valid_versions:
        parser.error(f"{spec.name} has versions {spec.valid_versions}, not {args.version}")
    # Nothing but the source on stdout, so that its line numbers are the traceback's.
    print(codec_source(spec, args.version, args.kind, trace=args.traced), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

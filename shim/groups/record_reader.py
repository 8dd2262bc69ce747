"""Reading the records the group coordinator keeps in ``__consumer_offsets``: the few wire types their generated
classes in Kafka use (GroupMetadataManager's OffsetCommit/GroupMetadata formats, the new coordinator's ConsumerGroup*
records). ``flexible`` switches strings, bytes and arrays to their compact forms (the flexible versions). Every
malformed input raises ValueError, which the loader logs and skips as Kafka does.
"""

from __future__ import annotations

import struct
import uuid

from kafka_shim.protocol.primitives import Malformed, read_uvarint

_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class RecordReader:
    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self.data, self.pos, self.flexible = data, 0, flexible

    def _take(self, s: struct.Struct) -> int:
        try:
            (value,) = s.unpack_from(self.data, self.pos)
        except struct.error:
            raise ValueError("record ends early") from None
        self.pos += s.size
        return value

    def i8(self) -> int:
        return self._take(_I8)

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def i64(self) -> int:
        return self._take(_I64)

    def uvarint(self) -> int:
        try:
            value, self.pos = read_uvarint(self.data, self.pos)
        except (Malformed, IndexError) as exc:
            raise ValueError(f"bad unsigned varint: {exc or 'record ends early'}") from None
        return value

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("record ends early")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(out)

    def string(self) -> str | None:
        """A (nullable) string: int16 length, or the compact uvarint length + 1 when flexible."""
        n = self.uvarint() - 1 if self.flexible else self.i16()
        return None if n < 0 else self.raw(n).decode("utf-8", errors="replace")

    def bytes_(self) -> bytes:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        return self.raw(max(n, 0))

    def array_length(self) -> int:
        return self.uvarint() - 1 if self.flexible else self.i32()

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.raw(n).decode("utf-8", errors="replace")

    def compact_bytes(self) -> bytes:
        return self.raw(max(self.uvarint() - 1, 0))

    def compact_count(self) -> int:
        return max(self.uvarint() - 1, 0)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.raw(16))

    def tags(self) -> dict[int, bytes]:
        found = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            found[tag] = self.raw(self.uvarint())
        return found

    def skip_tags(self) -> None:
        if self.flexible:
            self.tags()

"""Request frames carrying string values no well-behaved encoder writes: too long, not UTF-8, null, negative lengths.

kafka-shim's codec refuses to encode such values (Kafka's own encoders refuse them too), so the frame is encoded
with a marker string in the field and the marker's bytes are replaced afterwards. Kafka's generated readers judge
them as follows, and a differential test checks kafka-shim does the same: a string longer than 32767 bytes fails
the parse (compact strings included), a negative length is null (any negative int16, not only -1), null in a
non-nullable field fails the parse, and bytes that are not UTF-8 become U+FFFD.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka_shim.protocol.framing import encode_request, is_flexible
from kafka_shim.protocol.primitives import write_uvarint

MARKER = "\x01raw-string-marker\x01"


@dataclass(frozen=True)
class RawString:
    """What goes on the wire in place of the marker: ``data`` bytes, or a null / negative length."""

    label: str
    data: bytes | None = None
    length: int | None = None  # an explicit (negative) int16 length for non-flexible versions; data ignored

    def encoded(self, flexible: bool) -> bytes | None:
        """The field's bytes at this encoding, or None when the encoding cannot express it."""
        if self.length is not None:
            return None if flexible else struct.pack(">h", self.length)
        if self.data is None:
            return b"\x00" if flexible else b"\xff\xff"
        if flexible:
            return write_uvarint(len(self.data) + 1) + self.data
        if len(self.data) > 0x7FFF:
            return None  # an int16 length cannot say it
        return struct.pack(">h", len(self.data)) + self.data


def marker_bytes(flexible: bool) -> bytes:
    data = MARKER.encode()
    return (write_uvarint(len(data) + 1) if flexible else struct.pack(">h", len(data))) + data


def raw_frame(api_key: int, version: int, correlation_id: int, body: object, raw: RawString) -> bytes | None:
    """``body`` (holding MARKER in exactly one string field) as a frame with ``raw`` in that field, or None."""
    flexible = is_flexible(api_key, version)
    replacement = raw.encoded(flexible)
    if replacement is None:
        return None
    frame = encode_request(api_key, version, correlation_id, body, client_id="differential")
    old = marker_bytes(flexible)
    payload = frame[4:]
    assert payload.count(old) == 1, "the marker must appear once in the request"
    payload = payload.replace(old, replacement)
    return struct.pack(">i", len(payload)) + payload

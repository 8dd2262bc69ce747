"""Invalid UTF-8 replaced as Java's ``new String(bytes, UTF_8)`` replaces it (Kafka's readString on heap buffers).

Importing this registers the codec error handler ``"java-replace"``: ``data.decode("utf-8", "java-replace")``.
Python and Java accept exactly the same well-formed sequences, so both meet the first malformed one at the same
byte; they differ in how many bytes one U+FFFD stands for. Python follows Unicode's "maximal subpart" practice.
Java (java.lang.String.decodeUTF8_UTF16, JDK 17) differs in two places:

- a three-byte sequence that encodes a surrogate (``ED A0..BF xx``) is one U+FFFD for all three bytes where
  Python writes three, and ``ED A0..BF`` followed by a non-continuation byte is one U+FFFD for two where Python
  writes two; so CESU-8 / Java "modified UTF-8" surrogate pairs come out as two U+FFFD, not six;
- a sequence cut short by the end of the string ends the decoding with one U+FFFD for everything left
  (``ED A0`` at the end: one, where Python writes two).

Valid input never reaches the handler, so the fast path (strict decoding) costs nothing.
"""

from __future__ import annotations

import codecs

HANDLER = "java-replace"
_REPLACEMENT = "\ufffd"


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def _overlong3(b1: int, b2: int) -> bool:
    return b1 == 0xE0 and (b2 & 0xE0) == 0x80


def _malformed4_2(b1: int, b2: int) -> bool:
    return (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)


def java_malformed_length(data: bytes, i: int) -> int:
    """How many bytes from ``data[i]`` (where a malformed sequence starts) Java replaces with one U+FFFD."""
    n = len(data)
    b1 = data[i]
    if 0xC2 <= b1 <= 0xDF:  # two-byte lead
        return 1 if i + 1 < n else n - i
    if 0xE0 <= b1 <= 0xEF:  # three-byte lead
        if i + 2 < n:
            b2, b3 = data[i + 1], data[i + 2]
            if _overlong3(b1, b2) or not _cont(b2):
                return 1
            return 2 if not _cont(b3) else 3  # all three continuation-shaped: an encoded surrogate
        if i + 1 < n and (_overlong3(b1, data[i + 1]) or not _cont(data[i + 1])):
            return 1
        return n - i
    if 0xF0 <= b1 <= 0xF7:  # four-byte lead (F5-F7 are refused on their own below)
        if i + 3 < n:
            b2 = data[i + 1]
            if b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2):
                return 1
            return 2 if not _cont(data[i + 2]) else 3
        if b1 > 0xF4 or (i + 1 < n and _malformed4_2(b1, data[i + 1])):
            return 1
        if i + 2 < n and not _cont(data[i + 2]):
            return 2
        return n - i
    return 1  # a continuation byte, C0, C1 or F8-FF on its own


def _java_replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return _REPLACEMENT, exc.start + java_malformed_length(exc.object, exc.start)


def java_decode(data: bytes) -> str:
    """``data`` as the Java String Kafka would make of it."""
    return data.decode("utf-8", HANDLER)


codecs.register_error(HANDLER, _java_replace)

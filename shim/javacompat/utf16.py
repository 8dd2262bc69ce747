"""Java's natural String order (String.compareTo), which compares UTF-16 code units, not code points.

Python compares strings by code point. The two orders agree inside the Basic Multilingual Plane and part above
it: Java sees a character beyond U+FFFF as a surrogate pair (0xD800-0xDFFF), which sorts below U+E000-U+FFFF,
while Python sees one code point above them all. Kafka sorts by compareTo wherever it keeps a sorted String set
(the ACL cache, TreeSets of user names), so kafka-shim sorts with this key there.
"""

from __future__ import annotations

from collections.abc import Iterable

_SUPPLEMENTARY = "\U00010000"


def utf16_key(text: str) -> str:
    """A sort key that orders strings as Java's String.compareTo: ``text`` with every character beyond U+FFFF
    replaced by its surrogate pair, so Python's code point comparison becomes a code unit comparison."""
    if text.isascii() or max(text) < _SUPPLEMENTARY:
        return text  # the common case: no surrogates, so the orders already agree
    return "".join(c if c < _SUPPLEMENTARY else _surrogate_pair(ord(c)) for c in text)


def _surrogate_pair(code_point: int) -> str:
    offset = code_point - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


def java_sorted(strings: Iterable[str]) -> list[str]:
    """``strings`` in Java's natural String order (as a TreeSet<String> or Collections.sort would hold them)."""
    return sorted(strings, key=utf16_key)

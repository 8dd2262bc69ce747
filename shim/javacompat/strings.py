"""java.lang.String behaviour that Kafka's answers depend on."""

from __future__ import annotations

# What String.trim() removes from both ends: every character up to U+0020, not Unicode whitespace.
_TRIMMED = "".join(map(chr, range(0x21)))


def java_trim(text: str) -> str:
    """String.trim()."""
    return text.strip(_TRIMMED)

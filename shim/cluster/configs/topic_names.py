"""Kafka 3.9's ``Topic.validate`` messages, as DescribeConfigs and the config APIs report an illegal topic name (17).

3.9 words them "Topic name is invalid: <why>"; the lengths are counted in UTF-16 units, as Java's ``length()``.
"""

from __future__ import annotations

import re

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249


def invalid_topic_name(name: str) -> str | None:
    """Kafka's InvalidTopicException message for ``name``, or None when the name is legal."""
    if not name:
        why = "the empty string is not allowed"
    elif name in (".", ".."):
        why = f"'{name}' is not allowed"
    elif len(name.encode("utf-16-le", "surrogatepass")) // 2 > MAX_NAME_LENGTH:
        why = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif not _LEGAL.fullmatch(name):
        why = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return "Topic name is invalid: " + why

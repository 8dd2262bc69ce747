"""``kafka.version``: which Kafka release this broker presents itself as, and the API ranges that release advertised.

A release is named by its line (``2.8``) or any of its versions (``2.8.2``, ``0.11.0.2``). The ranges come from
``api_ranges`` (generated from the project's release facts): a ZooKeeper-mode broker's list before 3.3 (KRaft was
not production-ready, and had no authorizer before 3.2, so those releases ran with ZooKeeper where ACLs mattered),
a KRaft broker's from 3.3 on. kafka-shim serves the intersection of that list with what its handlers serve
(``requests.api_table``), so ApiVersions and dispatch agree; a key the release advertised that kafka-shim does not
serve (the inter-broker keys 4-7, transactions until issue 17, ...) is left out, as for 3.9.
"""

from __future__ import annotations

import re

from kafka_shim.shim.releases.api_ranges import KRAFT_BROKER, TAGS, ZK_BROKER

CURRENT = "3.9"
KNOWN_RELEASES: tuple[str, ...] = tuple(TAGS)
_FIRST_KRAFT_LISTING = (3, 3)
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+){0,2}$")


class UnknownRelease(ValueError):
    """``kafka.version`` names no release kafka-shim can emulate; the message lists those it can."""


def release_line(text: str) -> str:
    """The release line of a version as a person writes it: ``2.8.2`` -> ``2.8``, ``0.11.0.2`` -> ``0.11``."""
    match = _VERSION.match(text.strip())
    if match is None or f"{int(match[1])}.{int(match[2])}" not in TAGS:
        raise UnknownRelease(f"kafka.version={text.strip()!r} is not a Kafka release kafka-shim can emulate; use one of "
                             f"{', '.join(KNOWN_RELEASES)} (a patch version such as 2.8.2 names its line)")
    return f"{int(match[1])}.{int(match[2])}"


def api_ranges(release: str) -> dict[int, tuple[int, int]] | None:
    """The API ranges a broker of this release advertised; None for the current release (every served range)."""
    line = release_line(release)
    if line == CURRENT:
        return None
    major, minor = (int(part) for part in line.split("."))
    listing = KRAFT_BROKER if (major, minor) >= _FIRST_KRAFT_LISTING else ZK_BROKER
    return dict(listing[line])

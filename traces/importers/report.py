"""What an import could not read: counted per kind of problem, with the first examples, never raised.

Shared by the importers (packet captures; Kafka's request and authorizer logs): each reads what it can, notes every
packet, line or stream it skips here with where it was and why, and goes on. ``summary()`` is what
``kafka-shim import`` prints at the end; ``as_dict()`` the same as data for tests and machine readers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Examples kept per kind: enough to find the cause, bounded for a capture with millions of bad packets.
EXAMPLES_PER_KIND = 5


@dataclass(slots=True)
class ImportReport:
    """Counts of what was read and of each kind of problem, with the first examples of each problem."""

    source: str
    read: Counter[str] = field(default_factory=Counter)  # e.g. packets, frames, requests, rows
    problems: Counter[str] = field(default_factory=Counter)  # kind -> how many
    examples: dict[str, list[str]] = field(default_factory=dict)  # kind -> first EXAMPLES_PER_KIND "where: what"

    def count(self, what: str, n: int = 1) -> None:
        self.read[what] += n

    def problem(self, kind: str, where: str, detail: str, n: int = 1) -> None:
        """Note ``n`` occurrences of a problem ``kind`` (a short identifier) at ``where`` (file, packet, connection)."""
        self.problems[kind] += n
        shown = self.examples.setdefault(kind, [])
        if len(shown) < EXAMPLES_PER_KIND:
            shown.append(f"{where}: {detail}")

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "read": dict(self.read), "problems": dict(self.problems),
                "examples": {k: list(v) for k, v in self.examples.items()}}

    def summary(self) -> str:
        """Lines for people: what was read, then each problem kind with its count and first examples."""
        counts = ", ".join(f"{n} {what}" for what, n in self.read.items()) or "nothing"
        lines = [f"{self.source}: read {counts}"]
        if not self.problems:
            lines.append(f"{self.source}: no problems")
        for kind, n in sorted(self.problems.items()):
            lines.append(f"{self.source}: {n} x {kind}, e.g.")
            lines.extend(f"    {example}" for example in self.examples.get(kind, ()))
        return "\n".join(lines)

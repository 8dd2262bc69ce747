"""The capture settings: kafka-shim's own server.properties keys, in Kafka's style (``kafka.shim.capture.*``).

``serve --capture DIR`` sets the first; the others have defaults sized for a CI run or a day of traffic. Mistakes
raise CaptureConfigError naming the key and an example value (the command line turns it into exit code 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DIR_KEY = "kafka.shim.capture.dir"
ROLL_BYTES_KEY = "kafka.shim.capture.roll.bytes"
ROLL_MS_KEY = "kafka.shim.capture.roll.ms"
RETENTION_BYTES_KEY = "kafka.shim.capture.retention.bytes"
QUEUE_KEY = "kafka.shim.capture.queue.requests"
QUEUE_BYTES_KEY = "kafka.shim.capture.queue.bytes"


class CaptureConfigError(ValueError):
    """A capture setting a person must fix; the message names the key."""


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    directory: Path
    roll_bytes: int = 128 * 1024 * 1024
    roll_ms: int = 60 * 60 * 1000
    retention_bytes: int = 10 * 1024 * 1024 * 1024  # -1: no cap
    queue_requests: int = 100_000
    queue_bytes: int = 256 * 1024 * 1024

    def __post_init__(self) -> None:
        if 0 <= self.retention_bytes < self.roll_bytes:
            raise CaptureConfigError(
                f"{RETENTION_BYTES_KEY}={self.retention_bytes} is below {ROLL_BYTES_KEY}={self.roll_bytes}: a single file "
                f"would pass the cap; raise it (or set -1 for no cap)")

    @classmethod
    def from_properties(cls, props: Mapping[str, str], directory: str | None = None) -> CaptureSettings | None:
        """The settings from server.properties keys (``directory``, e.g. ``--capture``, wins over the key); None
        when no capture directory is set."""
        where = directory or props.get(DIR_KEY, "").strip()
        if not where:
            return None
        defaults = cls(Path(where))
        return cls(
            Path(where),
            roll_bytes=_int(props, ROLL_BYTES_KEY, defaults.roll_bytes, minimum=1024),
            roll_ms=_int(props, ROLL_MS_KEY, defaults.roll_ms, minimum=1),
            retention_bytes=_int(props, RETENTION_BYTES_KEY, defaults.retention_bytes, minimum=-1),
            queue_requests=_int(props, QUEUE_KEY, defaults.queue_requests, minimum=1),
            queue_bytes=_int(props, QUEUE_BYTES_KEY, defaults.queue_bytes, minimum=1),
        )


def _int(props: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    text = props.get(key, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise CaptureConfigError(f"{key}={text!r} is not a whole number; e.g. {key}={default}") from None
    if value < minimum:
        raise CaptureConfigError(f"{key}={value} is below its minimum {minimum}; e.g. {key}={default}")
    return value


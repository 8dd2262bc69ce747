"""The log chores Kafka's LogManager and log cleaner schedule, on the event loop: retention, timed flushes, start-offset
checkpoints, and the log cleaner.

Each LogManager chore runs at the interval of its Kafka key (``log.retention.check.interval.ms``, default 5 minutes;
``log.flush.scheduler.interval.ms``, default never; ``log.flush.start.offset.checkpoint.interval.ms``, default one
minute), the first time ``log.initial.task.delay.ms`` (30 s) after start, as LogManager schedules them. Compacted
logs are not LogManager's: the log cleaner (:mod:`.log_cleaner`) compacts them and deletes their old segments (by
the log start offset, and by ``retention.ms`` / ``retention.bytes`` with ``compact,delete``) each time it looks for
work, from start on, resting ``log.cleaner.backoff.ms`` (15 s) when there was nothing to compact, and never with
``log.cleaner.enable=false``. A chore that fails is logged and tried again at its next turn; it never stops the
broker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.partitions.log_cleaner import run_log_cleaner
from kafka_shim.shim.partitions.manager import Partitions

log = get_logger(__name__)

_NEVER = 2**63 - 1
INITIAL_DELAY_KEY = "log.initial.task.delay.ms"
_INITIAL_DELAY_DEFAULT_MS = 30_000


@dataclass(frozen=True)
class Chore:
    name: str
    key: str  # the Kafka key that sets its interval
    default_ms: int
    run: Callable[[Partitions], int | None]


CHORES = (
    Chore("retention", "log.retention.check.interval.ms", 300_000, lambda p: p.logs.apply_retention()),
    Chore("flush", "log.flush.scheduler.interval.ms", _NEVER, lambda p: p.logs.flush_due()),
    Chore("log_start_checkpoint", "log.flush.start.offset.checkpoint.interval.ms", 60_000, lambda p: p.logs.checkpoint()),
)


def interval_ms(chore: Chore, properties: Mapping[str, str]) -> int:
    """The chore's interval from the broker's properties; an unreadable or non-positive value keeps Kafka's default."""
    return _positive_ms(properties, chore.key, chore.default_ms)


def initial_delay_ms(properties: Mapping[str, str]) -> int:
    """LogManager's first run of its chores: ``log.initial.task.delay.ms`` after start."""
    try:
        value = int(properties.get(INITIAL_DELAY_KEY, _INITIAL_DELAY_DEFAULT_MS))
    except ValueError:
        log.warning("chore_interval_unreadable", key=INITIAL_DELAY_KEY, value=properties.get(INITIAL_DELAY_KEY),
                    default=_INITIAL_DELAY_DEFAULT_MS)
        return _INITIAL_DELAY_DEFAULT_MS
    return max(value, 0)


def _positive_ms(properties: Mapping[str, str], key: str, default: int) -> int:
    try:
        value = int(properties.get(key, default))
    except ValueError:
        log.warning("chore_interval_unreadable", key=key, value=properties.get(key), default=default)
        return default
    return value if value > 0 else default


async def run_chores(partitions: Partitions) -> None:
    """Run every chore at its interval, and the log cleaner, until cancelled."""
    await asyncio.gather(*(_every(chore, partitions) for chore in CHORES), run_log_cleaner(partitions))


async def _every(chore: Chore, partitions: Partitions) -> None:
    properties = partitions.broker_properties
    interval = interval_ms(chore, properties)
    if interval >= _NEVER:
        return
    await asyncio.sleep(initial_delay_ms(properties) / 1000)
    while True:
        try:
            done = chore.run(partitions)
        except Exception as exc:  # one failed pass (a full disk, a vanished file) must not end the chore
            log.warning("log_chore_failed", chore=chore.name, error=str(exc))
            done = None
        if done:
            log.debug("log_chore_done", chore=chore.name, count=done)
        await asyncio.sleep(interval / 1000)

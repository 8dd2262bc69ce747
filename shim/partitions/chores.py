"""The log chores Kafka's LogManager schedules, on the event loop: retention, timed flushes, start-offset checkpoints.

Each runs at the interval of its Kafka key (``log.retention.check.interval.ms``, default 5 minutes;
``log.flush.scheduler.interval.ms``, default never; ``log.flush.start.offset.checkpoint.interval.ms``, default one
minute). A chore that fails is logged and tried again at its next turn; it never stops the broker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.partitions.manager import Partitions

log = get_logger(__name__)

_NEVER = 2**63 - 1


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
    try:
        value = int(properties.get(chore.key, chore.default_ms))
    except ValueError:
        log.warning("chore_interval_unreadable", key=chore.key, value=properties.get(chore.key), default=chore.default_ms)
        return chore.default_ms
    return value if value > 0 else chore.default_ms


async def run_chores(partitions: Partitions) -> None:
    """Run every chore at its interval until cancelled."""
    await asyncio.gather(*(_every(chore, partitions) for chore in CHORES))


async def _every(chore: Chore, partitions: Partitions) -> None:
    interval = interval_ms(chore, partitions.broker_properties)
    if interval >= _NEVER:
        return
    while True:
        await asyncio.sleep(interval / 1000)
        try:
            done = chore.run(partitions)
        except Exception as exc:  # one failed pass (a full disk, a vanished file) must not end the chore
            log.warning("log_chore_failed", chore=chore.name, error=str(exc))
            continue
        if done:
            log.debug("log_chore_done", chore=chore.name, count=done)

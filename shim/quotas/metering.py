"""Byte-rate quotas enforced as Kafka's ClientQuotaManager enforces them: the rate over the sampled window, and the
time a client over its quota must wait (QuotaUtils.throttleTime).

Kafka records each request's bytes in a Rate over ``quota.window.num`` samples of ``quota.window.size.seconds``
(11 and 1 by default) per quota entity, and when the rate passes the quota answers with ``throttle_time_ms`` =
(rate - quota) / quota * window, then mutes the client's channel that long. The quota that applies to a (user,
client id) is the most specific one configured, in ClientQuotaManager's order; clients that fall under the same
configured entity share its meter, as Kafka's sensors do.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka_shim.shim.quotas.client_quotas import CLIENT_ID, USER, ClientQuotas

PRODUCE, FETCH = "producer_byte_rate", "consumer_byte_rate"
SAMPLES, WINDOW_S = 11, 1.0

Clock = Callable[[], float]


def quota_entity_for(quotas: ClientQuotas, key: str, user: str, client_id: str) -> tuple[tuple, float] | None:
    """(the configured entity that applies, its quota) for this user and client id, most specific first, or None."""
    candidates = [
        ((USER, user), (CLIENT_ID, client_id)), ((USER, user), (CLIENT_ID, None)), ((USER, user),),
        ((USER, None), (CLIENT_ID, client_id)), ((USER, None), (CLIENT_ID, None)), ((USER, None),),
        ((CLIENT_ID, client_id),), ((CLIENT_ID, None),),
    ]
    for entity in candidates:
        value = quotas.value(entity, key)
        if value is not None:
            return entity, value
    return None


class _Rate:
    """Kafka's Rate over SampledStat: samples of WINDOW_S, the oldest dropped past SAMPLES."""

    def __init__(self, now: float) -> None:
        self.samples: list[list[float]] = [[now, 0.0]]  # [start, total]

    def record(self, amount: float, now: float) -> None:
        last = self.samples[-1]
        if now - last[0] >= WINDOW_S:
            self.samples.append([now, 0.0])
            del self.samples[:-SAMPLES]
            last = self.samples[-1]
        last[1] += amount

    def window_s(self, now: float) -> float:
        """Rate.windowSize: the time since the oldest sample began, at least SAMPLES - 1 full windows."""
        elapsed = now - self.samples[0][0]
        full = int(elapsed / WINDOW_S)
        if full < SAMPLES - 1:
            elapsed += (SAMPLES - 1 - full) * WINDOW_S
        return elapsed

    def rate(self, now: float) -> float:
        live = [s for s in self.samples if now - s[0] < SAMPLES * WINDOW_S]
        self.samples = live or [[now, 0.0]]
        return sum(s[1] for s in self.samples) / self.window_s(now)


class QuotaMeters:
    """The byte-rate meters of one broker (produce and fetch), keyed by the configured entity that applies."""

    def __init__(self, quotas: ClientQuotas, clock: Clock = time.monotonic) -> None:
        self.quotas = quotas
        self.clock = clock
        self._rates: dict[tuple[str, tuple], _Rate] = {}

    def record(self, key: str, principal: str, client_id: str | None, size: int) -> int:
        """Record ``size`` bytes for this client; the throttle time in ms it must wait (0 within its quota)."""
        if not self.quotas.has_any:
            return 0
        user = principal.split(":", 1)[1] if ":" in principal else principal
        found = quota_entity_for(self.quotas, key, user, client_id or "")
        if found is None:
            return 0
        entity, quota = found
        now = self.clock()
        rate = self._rates.get((key, entity))
        if rate is None:
            rate = self._rates[(key, entity)] = _Rate(now)
        rate.record(size, now)
        observed = rate.rate(now)
        if observed <= quota:
            return 0
        return round((observed - quota) / quota * rate.window_s(now) * 1000)

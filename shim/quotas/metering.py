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
REQUEST = "request_percentage"  # ClientRequestQuotaManager: handler time as a percentage of one thread
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


class Rate:
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
        self._rates: dict[tuple[str, tuple], Rate] = {}
        self._resolved: dict[tuple[str, str, str | None], tuple[int, tuple[Rate, float] | None]] = {}
        self.mutations = MutationQuotas(quotas, clock)

    def record(self, key: str, principal: str, client_id: str | None, size: float) -> int:
        """Record ``size`` (bytes, or a request's percentage) for this client; the throttle time in ms it must wait
        (0 within its quota)."""
        if not self.quotas.has_any:
            return 0
        found = self._rate_for(key, principal, client_id)
        if found is None:
            return 0
        rate, quota = found
        now = self.clock()
        rate.record(size, now)
        observed = rate.rate(now)
        if observed <= quota:
            return 0
        throttle = round((observed - quota) / quota * rate.window_s(now) * 1000)
        # ClientRequestQuotaManager bounds its throttle time by one quota window (boundedThrottleTime).
        return min(throttle, round(WINDOW_S * 1000)) if key == REQUEST else throttle

    def unrecord(self, key: str, principal: str, client_id: str | None, size: float) -> None:
        """Take back what ``record`` counted (ClientQuotaManager.unrecordQuotaSensor: a throttled Fetch sends nothing)."""
        found = self._rate_for(key, principal, client_id) if self.quotas.has_any else None
        if found is not None:
            found[0].record(-size, self.clock())

    def max_value_in_window(self, key: str, principal: str, client_id: str | None) -> float | None:
        """ClientQuotaManager.getMaxValueInQuotaWindow: what the client could take in the sampled windows but the current
        one without being throttled (quota x (samples - 1) x window), or None when no quota applies."""
        found = self._rate_for(key, principal, client_id) if self.quotas.has_any else None
        return None if found is None else found[1] * (SAMPLES - 1) * WINDOW_S

    def record_request_time(self, principal: str, client_id: str | None, nanos: int) -> int:
        """A request's handler time against ``request_percentage`` (nanosToPercentage: 100% is one second per second)."""
        return self.record(REQUEST, principal, client_id, nanos / 1e7)

    def _rate_for(self, key: str, principal: str, client_id: str | None) -> tuple[Rate, float] | None:
        # The entity that applies to a (principal, client id) only changes with the quotas: resolved once per version.
        cached = self._resolved.get((key, principal, client_id))
        if cached is not None and cached[0] == self.quotas.version:
            return cached[1]
        user = principal.split(":", 1)[1] if ":" in principal else principal
        found = quota_entity_for(self.quotas, key, user, client_id or "")
        resolved = None
        if found is not None:
            entity, quota = found
            rate = self._rates.get((key, entity))
            if rate is None:
                rate = self._rates[(key, entity)] = Rate(self.clock())
            resolved = (rate, quota)
        if len(self._resolved) > 100_000:  # many short-lived client ids: start over rather than grow without bound
            self._resolved.clear()
        self._resolved[(key, principal, client_id)] = (self.quotas.version, resolved)
        return resolved


MUTATION = "controller_mutation_rate"


class _TokenBucket:
    """Kafka's TokenBucket: starts full, refills at the quota per second up to a burst of SAMPLES windows' worth."""

    def __init__(self) -> None:
        self.tokens = 0.0
        self.last_ms = 0.0

    def measure(self, quota: float, now_ms: float) -> float:
        burst = SAMPLES * WINDOW_S * quota
        self.tokens = min(burst, self.tokens + quota * (now_ms - self.last_ms) / 1000)
        self.last_ms = now_ms
        return self.tokens

    def record(self, quota: float, permits: float, now_ms: float) -> None:
        self.measure(quota, now_ms)
        self.tokens = min(SAMPLES * WINDOW_S * quota, self.tokens - permits)


class MutationQuota:
    """One request's controller mutation quota (KIP-599): strict for CreateTopics v6+, DeleteTopics v5+ and
    CreatePartitions v3+ (a mutation while the bucket is empty is refused with THROTTLING_QUOTA_EXCEEDED), permissive
    before (always applied, the request is only throttled afterwards)."""

    def __init__(self, bucket: _TokenBucket, quota: float, strict: bool, clock: Clock) -> None:
        self.bucket, self.quota, self.strict, self.clock = bucket, quota, strict, clock
        self._throttle_ms = 0
        self._recorded_ms = 0.0

    def record(self, permits: int) -> bool:
        """Apply ``permits`` partition mutations; False when a strict quota refuses them (Kafka's
        ThrottlingQuotaExceededException, answered as THROTTLING_QUOTA_EXCEEDED with no message: ApiError leaves out
        a message that is the error's default one)."""
        now_ms = self.clock() * 1000
        if self.strict:
            tokens = self.bucket.measure(self.quota, now_ms)
            if tokens < 0:  # checkQuotas before recording: an earlier mutation emptied the bucket
                self._violated(tokens, now_ms)
                return False
            self.bucket.record(self.quota, permits, now_ms)
            return True
        self.bucket.record(self.quota, permits, now_ms)
        if self.bucket.tokens < 0:
            self._violated(self.bucket.tokens, now_ms)
        return True

    def _violated(self, tokens: float, now_ms: float) -> None:
        self._throttle_ms = round(-tokens / self.quota * 1000)
        self._recorded_ms = now_ms

    @property
    def throttle_ms(self) -> int:
        """The throttle time recorded, less the time since (AbstractControllerMutationQuota.throttleTime)."""
        return max(0, round(self._throttle_ms - (self.clock() * 1000 - self._recorded_ms))) if self._throttle_ms else 0


class MutationQuotas:
    """The token buckets of ``controller_mutation_rate``, one per configured quota entity."""

    def __init__(self, quotas: ClientQuotas, clock: Clock = time.monotonic) -> None:
        self.quotas = quotas
        self.clock = clock
        self._buckets: dict[tuple, _TokenBucket] = {}

    def for_request(self, principal: str, client_id: str | None, strict: bool) -> MutationQuota | None:
        """The request's quota, or None when none applies (UnboundedControllerMutationQuota)."""
        if not self.quotas.has_any:
            return None
        user = principal.split(":", 1)[1] if ":" in principal else principal
        found = quota_entity_for(self.quotas, MUTATION, user, client_id or "")
        if found is None:
            return None
        entity, quota = found
        bucket = self._buckets.setdefault(entity, _TokenBucket())
        return MutationQuota(bucket, quota, strict, self.clock)

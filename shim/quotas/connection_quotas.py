"""Connection quotas as Kafka 3.9's ConnectionQuotas (SocketServer.scala) applies them when it accepts a connection.

In Kafka's order, for each new connection:

1. ``max.connection.creation.rate`` (broker-wide) and ``listener.name.<l>.max.connection.creation.rate``: over the
   rate, the acceptor waits the throttle time (at most one quota window, 1 s) before taking the connection, and so
   does every connection behind it; ``max.connections`` / ``listener.name.<l>.max.connections``: at the limit it
   waits until a connection closes.
2. The IP's ``connection_creation_rate`` quota (KIP-612, set with AlterClientQuotas for ``ip=<address>`` or the
   default ip entity): over it, the connection is not counted and is closed after the throttle time, unread.
3. ``max.connections.per.ip`` (and ``max.connections.per.ip.overrides``, ``host:count,...``): a connection past the
   IP's maximum is closed at once.

Rates are Kafka's Rate over ``quota.window.num`` (11) samples of 1 s, as the byte-rate quotas (metering.py).
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.quotas.client_quotas import IP, ClientQuotas
from kafka_shim.shim.quotas.metering import WINDOW_S, Clock, Rate

log = get_logger("kafka_shim.connection_quotas")

UNLIMITED = 2_147_483_647
IP_RATE = "connection_creation_rate"
_MAX_THROTTLE_MS = round(WINDOW_S * 1000)


@dataclass(frozen=True)
class Verdict:
    """What the acceptor does with a new connection: ``accept`` after ``wait_ms`` (0: at once); ``close_after_ms``
    (an IP over its creation rate); ``reject`` (past the IP's maximum: closed at once)."""

    action: str  # "accept", "close_after", "reject"
    wait_ms: int = 0
    reason: str = ""


ACCEPT = Verdict("accept")


def _int(properties: dict[str, str], key: str, default: int = UNLIMITED) -> int:
    text = properties.get(key, "").strip()
    try:
        return int(text) if text else default
    except ValueError:
        log.warning("connection_quota_setting_unreadable", key=key, value=text, used=default, hint=f"set {key} to a whole number")
        return default


def _overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs; host names resolved as InetAddress.getByName does."""
    out: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        host, _, count = item.rpartition(":")
        try:
            address = socket.gethostbyname(host) if host and not host.replace(".", "").isdigit() else host
            out[address] = int(count)
        except (OSError, ValueError):
            log.warning("connection_quota_override_unreadable", entry=item, hint="write host:count, e.g. 10.0.0.5:20")
    return out


class ConnectionQuotas:
    """Counts and rates of accepted connections, per IP, per listener and broker-wide. Used on the event loop."""

    def __init__(self, properties: dict[str, str], client_quotas: ClientQuotas, clock: Clock = time.monotonic) -> None:
        self.client_quotas = client_quotas
        self.clock = clock
        self.max_per_ip = _int(properties, "max.connections.per.ip")
        self.per_ip_overrides = _overrides(properties.get("max.connections.per.ip.overrides", ""))
        self.max_connections = _int(properties, "max.connections")
        self.creation_rate = _int(properties, "max.connection.creation.rate")
        self._listener_max: dict[str, int] = {}
        self._listener_rate: dict[str, int] = {}
        for key in properties:
            if key.startswith("listener.name.") and key.endswith((".max.connections", ".max.connection.creation.rate")):
                listener = key[len("listener.name."):].split(".", 1)[0].upper()
                target = self._listener_max if key.endswith(".max.connections") else self._listener_rate
                target[listener] = _int(properties, key)
        self.counts: dict[str, int] = {}
        self.listener_counts: dict[str, int] = {}
        self.total = 0
        self._rates: dict[tuple[str, str], Rate] = {}
        self._accept_after = 0.0  # the acceptor is held until then (clock seconds)
        self._waiting: deque[tuple[str, Callable[[], None]]] = deque()

    # -- the acceptor --------------------------------------------------------------------------------------------------
    def admit(self, listener: str, ip: str) -> Verdict:
        """The verdict for a new connection from ``ip`` on ``listener``; an accepted one is counted until
        :meth:`released`."""
        now = self.clock()
        wait_ms = max(self._rate_throttle(("broker", ""), self.creation_rate, now),
                      self._rate_throttle(("listener", listener), self._listener_rate.get(listener, UNLIMITED), now))
        if wait_ms:
            self._accept_after = max(self._accept_after, now + wait_ms / 1000)
        held_ms = max(0, round((self._accept_after - now) * 1000))
        ip_quota = self._ip_quota(ip)
        if ip_quota is not None:
            throttle = self._rate_throttle(("ip", ip), ip_quota, now)
            if throttle:
                self._rates[("ip", ip)].record(-1, now)  # not accepted: not counted
                return Verdict("close_after", held_ms + throttle, f"connection_creation_rate {ip_quota}/s for {ip}")
        count = self.counts.get(ip, 0)
        self.counts[ip] = count + 1
        self.total += 1
        self.listener_counts[listener] = self.listener_counts.get(listener, 0) + 1
        maximum = self.per_ip_overrides.get(ip, self.max_per_ip)
        if count >= maximum:
            self.released(listener, ip)
            return Verdict("reject", 0, f"address already has the configured maximum of {maximum} connections")
        return Verdict("accept", held_ms) if held_ms else ACCEPT

    def slot_available(self, listener: str) -> bool:
        """max.connections / listener.name.<l>.max.connections, counting the connection asking."""
        return (self.listener_counts.get(listener, 0) <= self._listener_max.get(listener, UNLIMITED)
                and self.total <= self.max_connections)

    def wait_for_slot(self, listener: str, resume: Callable[[], None]) -> None:
        self._waiting.append((listener, resume))

    def released(self, listener: str, ip: str) -> None:
        """A counted connection closed: a waiting one may go on."""
        left = self.counts.get(ip, 0) - 1
        if left > 0:
            self.counts[ip] = left
        else:
            self.counts.pop(ip, None)
        self.total = max(0, self.total - 1)
        self.listener_counts[listener] = max(0, self.listener_counts.get(listener, 0) - 1)
        for _ in range(len(self._waiting)):
            waiting_listener, resume = self._waiting.popleft()
            if self.slot_available(waiting_listener):
                resume()
                return
            self._waiting.append((waiting_listener, resume))

    # -- rates ---------------------------------------------------------------------------------------------------------
    def _ip_quota(self, ip: str) -> float | None:
        if not self.client_quotas.has_any:
            return None
        for entity in (((IP, ip),), ((IP, None),)):
            value = self.client_quotas.value(entity, IP_RATE)
            if value is not None:
                return value
        return None

    def _rate_throttle(self, key: tuple[str, str], limit: float, now: float) -> int:
        """Record one connection in the sensor ``key``; the throttle time over ``limit`` per second, bounded by one
        quota window (recordAndGetThrottleTimeMs)."""
        if limit >= UNLIMITED:
            return 0
        rate = self._rates.get(key)
        if rate is None:
            rate = self._rates[key] = Rate(now)
        rate.record(1, now)
        observed = rate.rate(now)
        if observed <= limit:
            return 0
        if limit <= 0:  # a static rate of 0 (a dynamic one is refused): Kafka's throttle time is infinite, so bounded
            return _MAX_THROTTLE_MS
        return min(_MAX_THROTTLE_MS, round((observed - limit) / limit * rate.window_s(now) * 1000))

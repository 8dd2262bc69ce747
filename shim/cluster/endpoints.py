"""Where clients should connect: each listener's advertised host and port.

``advertised.listeners`` wins; a listener without one advertises the address it is bound to (the broker reports
each bound address once the socket is open, which resolves port 0). Answers are cached once bound, because
Metadata and DescribeCluster ask on every request and ``socket.getfqdn()`` can be slow.
"""

from __future__ import annotations

import socket

from kafka_shim.shim.config.broker_config import BrokerConfig


class Endpoints:
    def __init__(self, config: BrokerConfig) -> None:
        self._configured = config.advertised
        self._bound: dict[str, tuple[str, int]] = {}
        self._cache: dict[str, tuple[str, int]] = {}

    def bind(self, listener_name: str, host: str, port: int) -> None:
        """The address a listener's socket is bound to (called by the broker after binding)."""
        self._bound[listener_name] = (host, port)
        self._cache.pop(listener_name, None)

    def advertised(self, listener_name: str) -> tuple[str, int]:
        """The host and port clients should use for a listener (advertised.listeners, else the bound address)."""
        cached = self._cache.get(listener_name)
        if cached is None:
            cached = self._resolve(listener_name)
            if self._bound:  # before binding, port 0 has not been resolved yet
                self._cache[listener_name] = cached
        return cached

    def _resolve(self, listener_name: str) -> tuple[str, int]:
        host, port = self._configured.get(listener_name, ("", 0))
        bound = self._bound.get(listener_name)
        if bound is not None:
            host = host or bound[0]
            port = port or bound[1]
        return host or socket.getfqdn(), port

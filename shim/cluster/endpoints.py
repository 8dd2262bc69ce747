"""Where clients should connect: each node's listeners' advertised host and port.

``advertised.listeners`` wins; a listener without one advertises the address it is bound to (the broker reports
each bound address once the socket is open, which resolves port 0). In a cluster of several nodes in one process,
the k-th node advertises the configured port + k (its bound port where the configured one is 0). Answers are cached
once bound, because Metadata and DescribeCluster ask on every request and ``socket.getfqdn()`` can be slow.
"""

from __future__ import annotations

import socket

from kafka_shim.shim.config.broker_config import BrokerConfig


class Endpoints:
    def __init__(self, config: BrokerConfig) -> None:
        self._configured = config.advertised
        self._first = config.node_id
        self._bound: dict[tuple[str, int], tuple[str, int]] = {}
        self._cache: dict[tuple[str, int], tuple[str, int]] = {}

    def bind(self, listener_name: str, host: str, port: int, node_id: int | None = None) -> None:
        """The address a listener's socket is bound to (called by the broker after binding)."""
        key = (listener_name, self._first if node_id is None else node_id)
        self._bound[key] = (host, port)
        self._cache.pop(key, None)

    def advertised(self, listener_name: str, node_id: int | None = None) -> tuple[str, int]:
        """The host and port clients should use for a node's listener (the first node when None)."""
        key = (listener_name, self._first if node_id is None else node_id)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._resolve(key)
            if key in self._bound:  # before binding, port 0 has not been resolved yet
                self._cache[key] = cached
        return cached

    def _resolve(self, key: tuple[str, int]) -> tuple[str, int]:
        listener_name, node_id = key
        host, port = self._configured.get(listener_name, ("", 0))
        if port:
            port += node_id - self._first
        bound = self._bound.get(key)
        if bound is not None:
            host = host or bound[0]
            port = port or bound[1]
        return host or socket.getfqdn(), port

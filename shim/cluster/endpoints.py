"""The addresses this broker advertises, per listener: advertised.listeners, else the address it bound.

MINIMAL STAND-IN for the version branch ``path`` delivers (which replaces this file on merge).
"""

from __future__ import annotations

import socket

from kafka_shim.shim.config.broker_config import BrokerConfig


class Endpoints:
    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self._bound: dict[str, tuple[str, int]] = {}
        self._resolved: dict[str, tuple[str, int]] = {}

    def bind(self, listener_name: str, host: str, port: int) -> None:
        """Record the address a listener was bound to (port 0 is resolved only by binding)."""
        self._bound[listener_name] = (host, port)
        self._resolved.pop(listener_name, None)

    def advertised(self, listener_name: str) -> tuple[str, int]:
        """The host and port clients should use for a listener (advertised.listeners, else the bound address)."""
        cached = self._resolved.get(listener_name)
        if cached is None:
            cached = self._resolve(listener_name)
            if listener_name in self._bound:  # before binding, port 0 has not been resolved yet
                self._resolved[listener_name] = cached
        return cached

    def _resolve(self, listener_name: str) -> tuple[str, int]:
        host, port = self._config.advertised.get(listener_name, ("", 0))
        bound = self._bound.get(listener_name)
        if bound is not None:
            host = host or bound[0]
            port = port or bound[1]
        return host or socket.getfqdn(), port

"""kafka-shim's broker: the public surface for embedding it.

    from kafka_shim.shim import Broker, BrokerConfig, EmbeddedBroker

The names are loaded on first use (module ``__getattr__``), so importing any part of shim (``kafka_shim.shim.config``
for one) loads only that part, and this package init takes no place in the import graph. Inside shim, import the
defining module instead (README, Layout).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and editors only; never run
    from kafka_shim.shim.broker import Broker
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.testing.embedded import EmbeddedBroker

__all__ = ["Broker", "BrokerConfig", "EmbeddedBroker"]

# Each public name and the module that defines it.
_HOMES = {
    "Broker": "kafka_shim.shim.broker",
    "BrokerConfig": "kafka_shim.shim.config.broker_config",
    "EmbeddedBroker": "kafka_shim.shim.testing.embedded",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

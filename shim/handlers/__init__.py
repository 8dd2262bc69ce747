"""One module per API family; each registers its handlers here.

A handler takes the request context and the decoded request body and returns the
response body, or an awaitable of it when it must wait for something.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_shim.shim.requests.context import CloseConnection  # re-exported: handlers raise it, dispatch catches it

if TYPE_CHECKING:
    from kafka_shim.shim.requests.context import RequestContext

__all__ = ["ApiHandler", "CloseConnection", "handles", "load_all"]


Handler = Callable[["RequestContext", Any], Any | Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ApiHandler:
    api_key: int
    min_version: int
    max_version: int
    handle: Handler
    is_async: bool = False  # a coroutine function: its result is awaited in a task

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


REGISTRY: dict[int, ApiHandler] = {}


def handles(api_key: int, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the handler of ``api_key`` for the given versions."""

    def register(fn: Handler) -> Handler:
        if api_key in REGISTRY:
            raise RuntimeError(f"api key {api_key} registered twice")
        REGISTRY[api_key] = ApiHandler(api_key, min_version, max_version, fn, inspect.iscoroutinefunction(fn))
        return fn

    return register


def load_all() -> dict[int, ApiHandler]:
    """Import every handler module of this package so that each registers itself."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return REGISTRY

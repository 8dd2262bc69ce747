"""One module per API family; each registers its handlers here with ``@handles``.

A handler takes the request context and the decoded request body and returns the response body, or an awaitable
of it when it must wait for something. Its registration says everything kafka-shim knows about the API in one
place: the versions it serves and, when Kafka has one, the whole-request error form (the request class's
getErrorResponse), which the handler uses to refuse a request wholesale and which the SASL gate uses to answer a
request sent in the middle of an authentication (through the API table). Only modules that register handlers
live in this package.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_shim.shim.requests.api_table import ErrorResponse
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
    error_response: ErrorResponse | None = None  # None: Kafka's answer cannot be built; refusing closes the connection

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


REGISTRY: dict[int, ApiHandler] = {}


def handles(api_key: int, min_version: int, max_version: int, *,
            error_response: ErrorResponse | None = None) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the handler of ``api_key`` for the given versions, with its whole-request error form."""

    def register(fn: Handler) -> Handler:
        if api_key in REGISTRY:
            raise RuntimeError(f"api key {api_key} registered twice")
        REGISTRY[api_key] = ApiHandler(api_key, min_version, max_version, fn, inspect.iscoroutinefunction(fn), error_response)
        return fn

    return register


_loaded = False


def load_all() -> dict[int, ApiHandler]:
    """Import every handler module of this package so that each registers itself (once; later calls are free)."""
    global _loaded
    if not _loaded:
        import importlib
        import pkgutil

        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
        _loaded = True
    return REGISTRY

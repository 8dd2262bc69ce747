"""One module per API family; each registers its handlers here with ``@handles``.

A handler takes the request context and the decoded request body and returns the response body, or an awaitable
of it when it must wait for something. Its registration says everything kafka-shim knows about the API in one
place: the versions it serves and, when Kafka has one, the whole-request error form (the request class's
getErrorResponse), which the handler uses to refuse a request wholesale and which the SASL gate uses to answer a
request sent in the middle of an authentication (through the API table). Only modules that register handlers
live in this package, and manifest.py, which lists them: the broker's API table is built from it
(``deferred_handlers``) and imports a handler module on the first request of one of its keys.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shim.shim.requests.api_table import DeferredApi, ErrorResponse
from kafka_shim.shim.requests.context import CloseConnection  # re-exported: handlers raise it, dispatch catches it

if TYPE_CHECKING:
    from kafka_shim.shim.requests.context import RequestContext


__all__ = ["ApiHandler", "CloseConnection", "deferred_handlers", "handles", "load_all"]


Handler = Callable[["RequestContext", Any], Any | Awaitable[Any]]


class ApiHandler(NamedTuple):  # not a dataclass: defining one of those costs ~20x more at start
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
            if module.name != "manifest":
                importlib.import_module(f"{__name__}.{module.name}")
        _loaded = True
    return REGISTRY


def deferred_handlers() -> dict[int, ApiHandler | DeferredApi]:
    """The API table's entries without importing a handler: the manifest's keys, each loaded on first use.

    A handler registered already (its module imported by someone) is used as it is, and so is a registration the
    manifest does not name (a test's stand-in)."""
    from kafka_shim.shim.handlers.manifest import MANIFEST

    entries: dict[int, ApiHandler | DeferredApi] = {
        key: DeferredApi(key, api.min_version, api.max_version, api.error_form, _loader(key, api.module, api.min_version,
                                                                                          api.max_version, api.error_form))
        for key, api in MANIFEST.items()
    }
    entries.update(REGISTRY)
    return entries


def _loader(api_key: int, module: str, min_version: int, max_version: int, error_form: bool) -> Callable[[], ApiHandler]:
    def load() -> ApiHandler:
        import importlib

        importlib.import_module(f"{__name__}.{module}")
        handler = REGISTRY.get(api_key)
        # The table has advertised the manifest's versions already; a registration that differs would make
        # ApiVersions and dispatch disagree, so it is refused loudly (test_manifest.py keeps this from happening).
        if handler is None or (handler.min_version, handler.max_version, handler.error_response is not None) != (
                min_version, max_version, error_form):
            raise RuntimeError(f"shim/handlers/manifest.py's entry for api key {api_key} ({module}, {min_version}-{max_version}, "
                               f"error form {error_form}) differs from the module's @handles registration: {handler}")
        return handler

    return load

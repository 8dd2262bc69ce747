"""Which APIs this broker serves, at which versions: one table per broker, read by dispatch and by ApiVersions.

The table is the handler registry (``@handles``) narrowed by an optional release profile: a mapping
``api_key -> (min, max)`` of what an emulated Kafka release offers. A key the profile leaves out is not served;
a key the profile names is served at the versions both the handler and the release know. The same table decides
which handler a request reaches and what the ApiVersions answer lists, so the two can never disagree.

An entry may be a ``DeferredApi``: the handler's versions and whether it has an error form, known without importing
it (the broker builds its table from shim/handlers/manifest.py); the handler is loaded on the first request of its
key, or on the first error answer the SASL gate needs from it. Start-up then imports no handler module.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple, Protocol

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.framing import encode_response
from kafka_shim.protocol.messages import ApiVersionsResponse

# What an emulated release serves: api_key -> (min_version, max_version).
ReleaseProfile = Mapping[int, tuple[int, int]]
# An API's whole-request error answer (the request class's getErrorResponse): (request, error code, message or None)
# -> the API's response with that error in every error slot. Registered with the handler (``@handles``).
ErrorResponse = Callable[[Any, int, str | None], Any]


class ApiHandler(Protocol):
    """A registered handler as the table and dispatch see it (``shim.handlers.ApiHandler``; requests/ sits below
    handlers/ and does not import it)."""

    api_key: int
    min_version: int
    max_version: int
    handle: Callable[..., Any]
    is_async: bool
    error_response: ErrorResponse | None


class DeferredApi(NamedTuple):
    """A handler not loaded yet: what the table needs to know of it before its first request, and how to load it."""

    api_key: int
    min_version: int
    max_version: int
    has_error_response: bool
    load: Callable[[], ApiHandler]  # imports the handler's module; returns its registration


class ServedApi(NamedTuple):
    api_key: int
    min_version: int
    max_version: int


class ApiTable:
    def __init__(self, handlers: Mapping[int, ApiHandler | DeferredApi], release: ReleaseProfile | None = None) -> None:
        # Every registered API, served or not: the SASL gate answers any request sent mid-exchange with its error form.
        self._loaded: dict[int, ApiHandler] = {}
        self._deferred: dict[int, DeferredApi] = {}
        self._error_forms: dict[int, ErrorResponse] = {}
        served: list[ServedApi] = []
        for key in sorted(handlers):
            handler = handlers[key]
            if isinstance(handler, DeferredApi):
                self._deferred[key] = handler
            else:
                self._loaded[key] = handler
                if handler.error_response is not None:
                    self._error_forms[key] = handler.error_response
            low, high = handler.min_version, handler.max_version
            if release is not None:
                if key not in release:
                    continue
                low, high = max(low, release[key][0]), min(high, release[key][1])
                if low > high:
                    continue
            served.append(ServedApi(key, low, high))
        self.served: tuple[ServedApi, ...] = tuple(served)
        self._ranges = {api.api_key: (api.min_version, api.max_version) for api in served}
        # The served handlers still to load, in the order given (the manifest lists first what clients ask first).
        self._to_warm = [key for key in handlers if key in self._deferred and key in self._ranges]

    def handler(self, api_key: int, version: int) -> ApiHandler | None:
        """The handler for this key at this version, or None when the broker does not serve it."""
        served = self._ranges.get(api_key)
        if served is None or not served[0] <= version <= served[1]:
            return None
        handler = self._loaded.get(api_key)
        return handler if handler is not None else self._load(api_key)

    def _load(self, api_key: int) -> ApiHandler:
        handler = self._deferred[api_key].load()
        self._loaded[api_key] = handler
        if handler.error_response is not None:
            self._error_forms[api_key] = handler.error_response
        return handler

    def warm_up(self) -> Iterator[int]:
        """Load the served handlers not loaded yet, one per step (the broker steps it while its loop is idle)."""
        for key in self._to_warm:
            if key not in self._loaded:
                self._load(key)
                yield key

    def versions(self, api_key: int) -> tuple[int, int] | None:
        """(min, max) served for a key, or None."""
        return self._ranges.get(api_key)

    def error_response(self, api_key: int, request: Any, code: int, message: str | None, version: int | None = None) -> Any | None:
        """The API's whole-request error answer (its getErrorResponse), or None when it has no such form. Forms whose
        shape depends on the version (FindCoordinator's v4 batch, JoinGroup's nullable name) take it as ``version``."""
        form = self._error_forms.get(api_key)
        if form is None:
            deferred = self._deferred.get(api_key)
            if deferred is None or not deferred.has_error_response or api_key in self._loaded:
                return None
            form = self._load(api_key).error_response
            if form is None:
                return None
        if version is not None and "version" in inspect.signature(form).parameters:
            return form(request, code, message, version=version)
        return form(request, code, message)

    # -- ApiVersions ---------------------------------------------------------------------------
    def api_versions_list(self) -> list[Any]:
        """The api_keys list of a successful ApiVersions answer."""
        return [ApiVersionsResponse.ApiVersion(api_key=a.api_key, min_version=a.min_version, max_version=a.max_version)
                for a in self.served]

    def unsupported_api_versions(self) -> ApiVersionsResponse:
        """Kafka's answer to an ApiVersions version it does not serve: error 35 and ApiVersions' own range only.

        It is written as a v0 body (with response header v0) whatever version was asked,
        so that a client of any age can read it and retry lower.
        """
        low, high = self._ranges.get(ApiKey.API_VERSIONS, (0, 0))
        own = ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=low, max_version=high)
        return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[own])

    def unsupported_api_versions_frame(self, correlation_id: int) -> bytes:
        return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, self.unsupported_api_versions())

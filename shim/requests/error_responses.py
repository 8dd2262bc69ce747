"""Kafka's whole-request error answers (each request class's getErrorResponse), for requests refused wholesale.

Used where Kafka answers a request with "that API's error response", e.g. a request sent in the middle of a
SASL exchange. Each form is written in its API's handler module and registered with the handler
(``@handles(..., error_response=...)``), which records it here; APIs without one are refused by closing the
connection. The forms are known once the handlers are loaded (``shim.handlers.load_all``, which the Broker calls).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kafka_shim.protocol.framing import api_name

# (request, error code, error message or None) -> the API's response with that error in every error slot.
ErrorResponse = Callable[[Any, int, str | None], Any]

_FORMS: dict[int, ErrorResponse] = {}


def register_error_response(api_key: int, form: ErrorResponse) -> None:
    """Record ``form`` as the whole-request error response of ``api_key`` (called by ``@handles``)."""
    if api_key in _FORMS:
        raise RuntimeError(f"api key {api_key}: error response registered twice")
    _FORMS[api_key] = form


def kafka_api_enum_name(api_key: int) -> str:
    """ApiKeys' enum constant for a key, as Kafka prints it in messages: ``Metadata`` → ``METADATA``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", api_name(api_key)).upper()


def error_response(api_key: int, request: Any, code: int, message: str | None) -> Any | None:
    """The response Kafka sends when the whole request fails with ``code``; None when the API has no form here."""
    form = _FORMS.get(api_key)
    return form(request, code, message) if form is not None else None

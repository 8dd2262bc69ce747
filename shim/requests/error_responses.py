"""Kafka's whole-request error answers (each request class's getErrorResponse), for requests refused wholesale.

Used where Kafka answers a request with "that API's error response", e.g. a request sent in the middle of a
SASL exchange. Each form is registered with its API's handler (``@handles(..., error_response=...)``); APIs
without one are refused by closing the connection.
"""

from __future__ import annotations

import re
from typing import Any

from kafka_shim.protocol.framing import api_name


def kafka_api_enum_name(api_key: int) -> str:
    """ApiKeys' enum constant for a key, as Kafka prints it in messages: ``Metadata`` → ``METADATA``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", api_name(api_key)).upper()


def error_response(api_key: int, request: Any, code: int, message: str | None) -> Any | None:
    """The response Kafka sends when the whole request fails with ``code``; None when the API has no form here."""
    # Imported here: the handler registry sits above this module, which the SASL gate also uses before any
    # handler has been imported.
    from kafka_shim.shim.handlers import load_all

    handler = load_all().get(api_key)
    if handler is None or handler.error_response is None:
        return None
    return handler.error_response(request, code, message)

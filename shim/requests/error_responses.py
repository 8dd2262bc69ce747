"""Kafka's whole-request error answers (each request class's getErrorResponse), for requests refused wholesale.

Used where Kafka answers a request with "that API's error response", e.g. a request sent in the middle of a
SASL exchange. APIs without a form here are refused by closing the connection.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kafka_shim.protocol import messages
from kafka_shim.protocol.framing import api_name
from kafka_shim.protocol.primitives import ZERO_UUID

_Builder = Callable[[Any, int, str | None], Any]


def kafka_api_enum_name(api_key: int) -> str:
    """ApiKeys' enum constant for a key, as Kafka prints it in messages: ``Metadata`` → ``METADATA``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", api_name(api_key)).upper()


def _api_versions(request: Any, code: int, message: str | None) -> Any:
    return messages.ApiVersionsResponse(error_code=code)


def _sasl_handshake(request: Any, code: int, message: str | None) -> Any:
    return messages.SaslHandshakeResponse(error_code=code, mechanisms=[])


def _sasl_authenticate(request: Any, code: int, message: str | None) -> Any:
    return messages.SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=b"")


def _metadata(request: Any, code: int, message: str | None) -> Any:
    topic = messages.MetadataResponse.MetadataResponseTopic
    topics = [
        topic(error_code=code, name=t.name if t.name is not None else "", topic_id=getattr(t, "topic_id", ZERO_UUID), is_internal=False)
        for t in request.topics or []
    ]
    return messages.MetadataResponse(topics=topics, cluster_id=None, controller_id=-1)


def _describe_acls(request: Any, code: int, message: str | None) -> Any:
    return messages.DescribeAclsResponse(error_code=code, error_message=message, resources=[])


def _create_acls(request: Any, code: int, message: str | None) -> Any:
    result = messages.CreateAclsResponse.AclCreationResult
    return messages.CreateAclsResponse(results=[result(error_code=code, error_message=message) for _ in request.creations])


def _delete_acls(request: Any, code: int, message: str | None) -> Any:
    result = messages.DeleteAclsResponse.DeleteAclsFilterResult
    return messages.DeleteAclsResponse(filter_results=[result(error_code=code, error_message=message, matching_acls=[]) for _ in request.filters])


def _describe_cluster(request: Any, code: int, message: str | None) -> Any:
    return messages.DescribeClusterResponse(error_code=code, error_message=message, cluster_id="", controller_id=-1, brokers=[])


_BUILDERS: dict[int, _Builder] = {
    3: _metadata,
    17: _sasl_handshake,
    18: _api_versions,
    29: _describe_acls,
    30: _create_acls,
    31: _delete_acls,
    36: _sasl_authenticate,
    60: _describe_cluster,
}


def error_response(api_key: int, request: Any, code: int, message: str | None) -> Any | None:
    """The response Kafka sends when the whole request fails with ``code``; None when there is no form here."""
    builder = _BUILDERS.get(api_key)
    return builder(request, code, message) if builder is not None else None

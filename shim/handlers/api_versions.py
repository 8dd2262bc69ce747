"""ApiVersions (key 18): what this broker serves, answered even before authentication."""

from __future__ import annotations

import re

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ApiVersionsResponse
from kafka_shim.shim.handlers import REGISTRY, handles
from kafka_shim.shim.requests.context import RequestContext

MIN_VERSION, MAX_VERSION = 0, 4

# Kafka's rule for client_software_name/version (ApiVersionsRequest.isValid, v3+).
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

# The feature levels a Kafka 3.9 KRaft broker reports. v3 lists only features whose
# minimum is above zero (KAFKA-17492), so kraft.version appears from v4.
METADATA_VERSION = ("metadata.version", 1, 21)
KRAFT_VERSION = ("kraft.version", 0, 1)
FINALIZED_METADATA_VERSION = 21

_Api = ApiVersionsResponse.ApiVersion
_Supported = ApiVersionsResponse.SupportedFeatureKey
_Finalized = ApiVersionsResponse.FinalizedFeatureKey


def _valid_software(value: str) -> bool:
    return _SOFTWARE.fullmatch(value) is not None


def advertised_apis() -> list:
    return [_Api(api_key=h.api_key, min_version=h.min_version, max_version=h.max_version) for h in sorted(REGISTRY.values(), key=lambda h: h.api_key)]


def api_versions_error_response(request: object, code: int, message: str | None) -> ApiVersionsResponse:
    """Kafka's ApiVersionsRequest.getErrorResponse: the code and no API list (the message is not carried)."""
    return ApiVersionsResponse(error_code=code)


@handles(ApiKey.API_VERSIONS, MIN_VERSION, MAX_VERSION, error_response=api_versions_error_response)
def api_versions(ctx: RequestContext, request: object) -> ApiVersionsResponse:
    version = ctx.api_version
    if version >= 3 and not (_valid_software(request.client_software_name) and _valid_software(request.client_software_version)):
        # Kafka answers ErrorCode.INVALID_REQUEST with an empty key list, at the request's own version.
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    response = ApiVersionsResponse(api_keys=advertised_apis())
    if version >= 3:
        # Kafka 3.9 lists kraft.version ahead of metadata.version (the order its feature map yields).
        features = [KRAFT_VERSION, METADATA_VERSION] if version >= 4 else [METADATA_VERSION]
        response.supported_features = [_Supported(name=n, min_version=lo, max_version=hi) for n, lo, hi in features]
        response.finalized_features_epoch = 0
        response.finalized_features = [
            _Finalized(name="metadata.version", min_version_level=FINALIZED_METADATA_VERSION, max_version_level=FINALIZED_METADATA_VERSION)
        ]
    return response


def unsupported_version_response() -> ApiVersionsResponse:
    """Kafka's answer to an ApiVersions version it does not know: error 35 and its own range only.

    It is written as a v0 body (with response header v0) whatever version was asked,
    so that a client of any age can read it and retry lower.
    """
    return ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[_Api(api_key=ApiKey.API_VERSIONS, min_version=MIN_VERSION, max_version=MAX_VERSION)],
    )

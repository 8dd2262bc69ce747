"""ApiVersions (key 18): what this broker serves, answered even before authentication.

The list comes from the broker's API table (shim.requests.api_table), the same table dispatch routes by; the answer
to a version the broker does not serve (error 35) is built there too, because it is sent before any handler runs.
"""

from __future__ import annotations

import re

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ApiVersionsResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.requests.context import RequestContext

MIN_VERSION, MAX_VERSION = 0, 4

# Kafka's rule for client_software_name/version (ApiVersionsRequest.isValid, v3+).
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

# The feature levels a Kafka 3.9 KRaft broker reports. v3 lists only features whose
# minimum is above zero (KAFKA-17492), so kraft.version appears from v4.
METADATA_VERSION = ("metadata.version", 1, 21)
KRAFT_VERSION = ("kraft.version", 0, 1)
FINALIZED_METADATA_VERSION = 21

_Supported = ApiVersionsResponse.SupportedFeatureKey
_Finalized = ApiVersionsResponse.FinalizedFeatureKey


def _valid_software(value: str) -> bool:
    return _SOFTWARE.fullmatch(value) is not None


def api_versions_error_response(request: object, code: int, message: str | None) -> ApiVersionsResponse:
    """Kafka's ApiVersionsRequest.getErrorResponse: the code and no API list (the message is not carried)."""
    return ApiVersionsResponse(error_code=code)


@handles(ApiKey.API_VERSIONS, MIN_VERSION, MAX_VERSION, error_response=api_versions_error_response)
def api_versions(ctx: RequestContext, request: object) -> ApiVersionsResponse:
    version = ctx.api_version
    if version >= 3 and not (_valid_software(request.client_software_name) and _valid_software(request.client_software_version)):
        # Kafka answers ErrorCode.INVALID_REQUEST with an empty key list, at the request's own version.
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    response = ApiVersionsResponse(api_keys=ctx.services.api_table.api_versions_list())
    if version >= 3:
        # Kafka 3.9 lists kraft.version ahead of metadata.version (the order its feature map yields).
        features = ctx.services.cluster.features  # UpdateFeatures changes them
        # metadata.version's maximum is the emulated release's own (Features.for_release)
        supported = [KRAFT_VERSION, (METADATA_VERSION[0], *features.supported(METADATA_VERSION[0]))] if version >= 4 else [
            (METADATA_VERSION[0], *features.supported(METADATA_VERSION[0]))]
        response.supported_features = [_Supported(name=n, min_version=lo, max_version=hi) for n, lo, hi in supported]
        response.finalized_features_epoch = features.epoch
        response.finalized_features = [_Finalized(name=name, min_version_level=level, max_version_level=level)
                                       for name, level in sorted(features.finalized.items(), reverse=True)]
    return response


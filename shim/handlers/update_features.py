"""UpdateFeatures (key 57), v0-1: change finalized feature levels, as a Kafka 3.9 KRaft controller answers the
request its broker forwards (ControllerApis.handleUpdateFeatures, FeatureControlManager.updateFeatures);
`kafka-features.sh upgrade / downgrade` sends it.

Behaviour. ALTER on the CLUSTER, else 31 at the top with the controller's "is not authorized" message and no
results. Each feature, in name order: Kafka's INVALID_UPDATE_VERSION (96) checks and messages (an unknown upgrade
type, a level below 0, one the local controller does not support, a downgrade without a downgrade type or an
upgrade with one, metadata.version below 3.3-IV0 or a downgrade across a level that changed the metadata
format); the others are applied together unless ``validate_only``, and ApiVersions then reports the new finalized
levels. The upgrade type is v1's ``upgrade_type``; at v0 it is always an upgrade, as the controller reads it.

Version notes. v1 replaces v0's allow_downgrade with upgrade_type.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import UpdateFeaturesResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.handlers.scram_credentials import controller_not_authorized_message
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext


def update_features_error_response(request: messages.UpdateFeaturesRequest, code: int, message: str | None) -> UpdateFeaturesResponse:
    """UpdateFeaturesRequest.getErrorResponse: the top-level error and no results."""
    return UpdateFeaturesResponse(throttle_time_ms=0, error_code=code, error_message=message, results=[])


@handles(ApiKey.UPDATE_FEATURES, 0, 1, error_response=update_features_error_response)
def update_features(ctx: RequestContext, request: messages.UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    if refused_whole(ctx, request) is not None:
        return update_features_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, controller_not_authorized_message(ctx))
    # HashMaps keyed by name: a feature named twice keeps its last level and upgrade type.
    updates = {u.feature: (u.max_version_level, u.upgrade_type if ctx.api_version >= 1 else 1) for u in request.feature_updates}
    results = ctx.services.cluster.features.update(updates, ctx.services.cluster.controller(), request.validate_only)
    return UpdateFeaturesResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", results=[
        UpdateFeaturesResponse.UpdatableFeatureResult(feature=name, error_code=code, error_message=message)
        for name, (code, message) in results.items()])

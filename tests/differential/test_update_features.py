"""UpdateFeatures (57) against a real Kafka 3.9: every check and message, denied, at v0 and v1. Nothing is really
changed on the real broker (it lives for the session): accepted updates are sent with validate_only."""

from __future__ import annotations

import pytest

from kafka_shim.protocol.messages import UpdateFeaturesRequest
from kafka_shim.shim.testing.handle import KafkaShim
from tests.support.acl_peers import ALTER, ANONYMOUS, CLUSTER, Peers, acl

UPDATE_FEATURES = 57
U = UpdateFeaturesRequest
UPGRADE, SAFE, UNSAFE = 1, 2, 3


def update(*features: tuple[str, int, int], validate_only: bool = True, version: int = 1) -> U:
    """v1 carries the upgrade type and validate_only; v0 neither (an upgrade, applied: only refused ones are sent)."""
    return U(timeout_ms=30000, validate_only=validate_only if version >= 1 else False, feature_updates=[
        U.FeatureUpdateKey(feature=name, max_version_level=level, **({"upgrade_type": kind} if version >= 1 else {}))
        for name, level, kind in features])


def test_update_features_denied(peers: Peers) -> None:
    peers.same(UPDATE_FEATURES, 1, update(("metadata.version", 21, UPGRADE)), "UpdateFeatures denied")


@pytest.mark.parametrize("features", [
    [("metadata.version", 21, UPGRADE)],
    [("metadata.version", 22, UPGRADE)],
    [("metadata.version", 20, UPGRADE)],
    [("metadata.version", 20, SAFE)],
    [("metadata.version", 13, SAFE)],
    [("metadata.version", 13, UNSAFE)],
    [("metadata.version", 3, SAFE)],
    [("metadata.version", 0, SAFE)],
    [("metadata.version", -1, UPGRADE)],
    [("metadata.version", 21, 9)],
    [("no.such.feature", 1, UPGRADE)],
    [("transaction.version", 1, UPGRADE)],
    [("group.version", 1, UPGRADE)],
    [("kraft.version", 2, UPGRADE)],
    [("metadata.version", 22, UPGRADE), ("kraft.version", 5, UPGRADE), ("a.feature", 1, UPGRADE)],
], ids=repr)
def test_update_features_checks(peers: Peers, features) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER))
    peers.same(UPDATE_FEATURES, 1, update(*features), f"UpdateFeatures {features}")


@pytest.mark.parametrize("features", [
    [("metadata.version", 22, UPGRADE)], [("metadata.version", -1, UPGRADE)], [("no.such.feature", 1, UPGRADE)],
    [("kraft.version", 2, UPGRADE)], [("metadata.version", 20, UPGRADE)],
], ids=repr)
def test_update_features_v0_refusals(peers: Peers, features) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER))
    peers.same(UPDATE_FEATURES, 0, update(*features, version=0), f"UpdateFeatures v0 {features}")


def test_a_safe_downgrade_is_reported_by_api_versions() -> None:
    from kafka_shim.protocol.codes import ApiKey
    from kafka_shim.protocol.messages import ApiVersionsRequest
    from tests.support.wire import Wire

    with KafkaShim() as shim:
        host, port = shim.bootstrap_servers.split(":")
        with Wire((host, int(port))) as wire:
            answer = wire.request(UPDATE_FEATURES, 1, update(("metadata.version", 20, SAFE), validate_only=False))
            assert [(r.feature, r.error_code) for r in answer.body.results] == [("metadata.version", 0)]
            versions = wire.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        assert [(f.name, f.max_version_level) for f in versions.body.finalized_features] == [("metadata.version", 20)]

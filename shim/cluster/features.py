"""The cluster's feature levels, as Kafka 3.9's KRaft controller keeps and changes them (FeatureControlManager):
what this broker supports, what is finalized, and UpdateFeatures' checks and messages.

MetadataVersion levels carry a "metadata changed" flag: a downgrade across a level that changed the metadata format
is refused (Kafka has no unsafe downgrade yet), one that does not is allowed as a safe downgrade.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_shim.protocol.codes import ErrorCode

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
# What a 3.9 broker and controller support (ApiVersions reports these ranges).
SUPPORTED = {METADATA_VERSION: (1, 21), KRAFT_VERSION: (0, 1)}
LATEST_METADATA_VERSION = 21
MINIMUM_BOOTSTRAP_LEVEL = 4  # 3.3-IV0, the first level with FeatureLevelRecord
# MetadataVersion: level -> (its name, whether that level changed the metadata format)
METADATA_LEVELS = {
    1: ("3.0-IV1", True), 2: ("3.1-IV0", False), 3: ("3.2-IV0", True), 4: ("3.3-IV0", False), 5: ("3.3-IV1", True),
    6: ("3.3-IV2", True), 7: ("3.3-IV3", True), 8: ("3.4-IV0", True), 9: ("3.5-IV0", False), 10: ("3.5-IV1", False),
    11: ("3.5-IV2", True), 12: ("3.6-IV0", False), 13: ("3.6-IV1", True), 14: ("3.6-IV2", True), 15: ("3.7-IV0", True),
    16: ("3.7-IV1", False), 17: ("3.7-IV2", True), 18: ("3.7-IV3", False), 19: ("3.7-IV4", False), 20: ("3.8-IV0", False),
    21: ("3.9-IV0", False),
}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


@dataclass
class Features:
    """The finalized levels (metadata.version always; others once set above 0)."""

    finalized: dict[str, int] = field(default_factory=lambda: {METADATA_VERSION: LATEST_METADATA_VERSION})
    epoch: int = 0  # bumped by each change, as the metadata offset Kafka reports moves
    # the highest metadata.version this node supports: an emulated older release's own latest (see for_release)
    metadata_max: int = LATEST_METADATA_VERSION

    def for_release(self, latest_level: int) -> None:
        """Support metadata.version up to an emulated release's latest level (ReleaseRules.metadata_version_level), as
        that release's broker does, and start a cluster still at a later level at it, as its kafka-storage format
        would have."""
        self.metadata_max = latest_level
        if self.finalized.get(METADATA_VERSION, 0) > latest_level:
            self.finalized[METADATA_VERSION] = latest_level

    def supported(self, name: str) -> tuple[int, int]:
        low, high = SUPPORTED.get(name, (0, 0))
        return (low, self.metadata_max) if name == METADATA_VERSION else (low, high)

    def update(self, updates: dict[str, tuple[int, int]], node_id: int, validate_only: bool) -> dict[str, tuple[int, str | None]]:
        """FeatureControlManager.updateFeatures: (code, message) per feature, sorted by name; applied all together
        unless ``validate_only`` (atomically: a failed feature does not stop the others)."""
        results: dict[str, tuple[int, str | None]] = {}
        changes: dict[str, int] = {}
        for name in sorted(updates):
            level, upgrade_type = updates[name]
            problem = self._problem(name, level, upgrade_type, node_id)
            results[name] = (ErrorCode.INVALID_UPDATE_VERSION, problem) if problem else (ErrorCode.NONE, None)
            if not problem:
                changes[name] = level
        if not validate_only and changes:
            for name, level in changes.items():
                if level == 0 and name != METADATA_VERSION:
                    self.finalized.pop(name, None)
                else:
                    self.finalized[name] = level
            self.epoch += 1
        return results

    def _problem(self, name: str, level: int, upgrade_type: int, node_id: int) -> str | None:
        def invalid(why: str) -> str:
            return f"Invalid update version {level} for feature {name}. {why}"

        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return invalid("The controller does not support the given upgrade type.")
        current = self.finalized.get(name, 0)
        if level < 0:
            return invalid("A feature version cannot be less than 0.")
        low, high = self.supported(name)
        if not low <= level <= high:
            what = f"Local controller {node_id}"
            return invalid(f"{what} does not support this feature." if high == 0 else f"{what} only supports versions {low}-{high}")
        if level < current and upgrade_type == UPGRADE:
            return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
        if level > current and upgrade_type != UPGRADE:
            return invalid("Can't downgrade to a newer version.")
        if name != METADATA_VERSION:
            return None
        def invalid_mv(why: str) -> str:
            return f"Invalid metadata.version {level}. {why}"

        if level < MINIMUM_BOOTSTRAP_LEVEL:
            return invalid_mv(f"Unable to set a metadata.version less than {METADATA_LEVELS[MINIMUM_BOOTSTRAP_LEVEL][0]}")
        if level < current and _metadata_changed(current, level):
            if upgrade_type == UNSAFE_DOWNGRADE:
                return invalid_mv("Unsafe metadata downgrade is not supported in this version.")
            return invalid_mv("Refusing to perform the requested downgrade because it might delete metadata information.")
        return None


def _metadata_changed(high: int, low: int) -> bool:
    """MetadataVersion.checkIfMetadataChanged: a level between them (from the higher down, the lower excluded)
    changed the metadata format."""
    level = high
    while not METADATA_LEVELS[level][1] and level != low:
        level -= 1
    return level != low

"""Per-release variants of the declarations: the place for another Kafka release's authorization rules.

Nothing lives here yet: kafka-shim emulates Kafka 3.9 only, whose rules are ``table.DECLARATIONS``. When an
older or newer release is emulated, its rule changes go here as a function of the release that returns the
3.9 table with the changed ``ApiChecks`` entries replaced (for example, a release before KIP-679 has no
``any_resource`` idempotent-write check for InitProducerId), so each difference is written once and named by
the release that introduced it. ``requirements`` and the broker's handlers then take the table to consult
instead of reading ``DECLARATIONS`` directly.
"""

"""The SCRAM arithmetic under its old name: the implementation is protocol/sasl_scram.py (sans-IO, shared with
traces.replay, which may not import shim); this module re-exports it so the broker's importers stay as they are."""

from kafka_shim.protocol.sasl_scram import (
    BY_TYPE,
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MECHANISMS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramCredential,
    ScramMechanism,
    auth_message,
    secure_random_bytes,
    secure_random_string,
)

__all__ = [
    "BY_TYPE", "DEFAULT_ITERATIONS", "MAX_ITERATIONS", "MECHANISMS", "SCRAM_SHA_256", "SCRAM_SHA_512", "ScramCredential",
    "ScramMechanism", "auth_message", "secure_random_bytes", "secure_random_string",
]

"""SASL for kafka-shim: the PLAIN and SCRAM servers, their settings and the SCRAM credential store.

The connection's state machine (SaslHandshake / SaslAuthenticate) calls ``create_server`` once per exchange.
"""

from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore, ScramStoreError, Upsertion
from kafka_shim.shim.security.sasl.errors import (
    IllegalSaslStateError,
    InvalidCredentialsError,
    SaslAuthenticationError,
    SaslProtocolViolation,
)
from kafka_shim.shim.security.sasl.jaas import JaasEntry, parse_jaas_config
from kafka_shim.shim.security.sasl.scram_math import ScramCredential
from kafka_shim.shim.security.sasl.server import SaslServer, create_server
from kafka_shim.shim.security.sasl.settings import ListenerSasl, SaslSettings

__all__ = [
    "IllegalSaslStateError",
    "InvalidCredentialsError",
    "JaasEntry",
    "ListenerSasl",
    "SaslAuthenticationError",
    "SaslProtocolViolation",
    "SaslServer",
    "SaslSettings",
    "ScramCredential",
    "ScramCredentialStore",
    "ScramStoreError",
    "Upsertion",
    "create_server",
    "parse_jaas_config",
]

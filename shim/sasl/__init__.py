"""SASL for kafka-shim: the PLAIN and SCRAM servers, their settings and the SCRAM credential store.

The connection's state machine (SaslHandshake / SaslAuthenticate) calls ``create_server`` once per exchange.
"""

from shim.sasl.credentials import ScramCredentialStore, ScramStoreError, Upsertion
from shim.sasl.errors import (
    IllegalSaslStateError,
    InvalidCredentialsError,
    SaslAuthenticationError,
    SaslProtocolViolation,
)
from shim.sasl.formatter import ScramCredential
from shim.sasl.jaas import JaasEntry, parse_jaas_config
from shim.sasl.server import SaslServer, create_server
from shim.sasl.settings import ListenerSasl, SaslSettings

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

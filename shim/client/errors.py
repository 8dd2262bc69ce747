"""The errors kafka-shim's client raises, and how Kafka's Java client words a broker's error code."""

from __future__ import annotations

from kafka_shim.protocol.codes import ErrorCode

# Kafka's exception class and default message for the error codes a client of the ACL APIs may see.
KAFKA_ERRORS: dict[int, tuple[str, str]] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: ("UnknownServerException", "The server experienced an unexpected error when processing the request."),
    ErrorCode.REQUEST_TIMED_OUT: ("TimeoutException", "The request timed out."),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: ("ClusterAuthorizationException", "Cluster authorization failed."),
    ErrorCode.UNSUPPORTED_SASL_MECHANISM: ("UnsupportedSaslMechanismException", "The broker does not support the requested SASL mechanism."),
    ErrorCode.ILLEGAL_SASL_STATE: ("IllegalSaslStateException", "Request is not valid given the current SASL state."),
    ErrorCode.UNSUPPORTED_VERSION: ("UnsupportedVersionException", "The version of API is not supported."),
    ErrorCode.NOT_CONTROLLER: ("NotControllerException", "This is not the correct controller for this cluster."),
    ErrorCode.INVALID_REQUEST: ("InvalidRequestException", "This most likely occurs because of a request being malformed by the client library or "
                                    "the message was sent to an incompatible broker. See the broker logs for more details."),
    ErrorCode.SECURITY_DISABLED: ("SecurityDisabledException", "Security features are disabled."),
    ErrorCode.OPERATION_NOT_ATTEMPTED: ("OperationNotAttemptedException", "The broker did not attempt to execute this operation. This may happen for batched "
                                           "RPCs where some operations in the batch failed, causing the broker to respond "
                                           "without trying the rest."),
    ErrorCode.SASL_AUTHENTICATION_FAILED: ("SaslAuthenticationException", "SASL Authentication failed."),
}


def kafka_error_text(code: int, message: str | None) -> str:
    """How Kafka's Java client shows an error code: ``org.apache.kafka.common.errors.<Class>: <message>``."""
    name, default = KAFKA_ERRORS.get(code, (None, None))
    if name is None:
        return f"error code {code}" + (f": {message}" if message else "")
    return f"org.apache.kafka.common.errors.{name}: {message if message is not None else default}"


class ClientError(Exception):
    """A failure a person must read: the message says what went wrong and, where it can, what to do."""


class BrokerError(ClientError):
    """The broker answered with a Kafka error code."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(kafka_error_text(code, message))
        self.code = code
        self.broker_message = message

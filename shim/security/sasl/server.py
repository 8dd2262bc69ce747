"""What the connection's SASL state machine calls: one server object per authentication exchange."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kafka_shim.shim.security.sasl.oauthbearer import OAuthBearerServer
from kafka_shim.shim.security.sasl.plain import PlainServer
from kafka_shim.shim.security.sasl.scram import ScramServer
from kafka_shim.shim.security.sasl.scram_math import MECHANISMS as SCRAM_MECHANISMS

if TYPE_CHECKING:
    from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore
    from kafka_shim.shim.security.sasl.settings import SaslSettings


class SaslServer(Protocol):
    mechanism: str

    def evaluate(self, token: bytes) -> bytes:
        """The token to send back (b"" when there is none); raises SaslAuthenticationError, never anything else."""
        ...

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str:
        """The authenticated user once complete; the session's principal is "User:" + this."""
        ...


def create_server(mechanism: str, listener_name: str, settings: SaslSettings, credentials: ScramCredentialStore, *,
                  reauthentication: bool = False) -> SaslServer:
    """A server for ``mechanism``, which must be enabled on the listener (the handshake checks that first).

    ``reauthentication`` only changes the generic failure text ("... during re-authentication ..."), as in Kafka.
    """
    listener = settings.listener(listener_name)
    if mechanism not in listener.mechanisms:
        raise ValueError(f"SASL mechanism {mechanism} is not enabled on listener {listener.listener}")
    if mechanism == PlainServer.mechanism:
        return PlainServer(listener.plain_users.get)
    if mechanism == OAuthBearerServer.mechanism:
        assert listener.oauthbearer is not None  # read with the listener's mechanisms
        return OAuthBearerServer(listener.oauthbearer, reauthentication=reauthentication)
    scram = SCRAM_MECHANISMS[mechanism]
    return ScramServer(scram, lambda user: credentials.lookup(user, mechanism), reauthentication=reauthentication,
                       token_lookup=lambda token_id: credentials.token_credential(token_id, mechanism))

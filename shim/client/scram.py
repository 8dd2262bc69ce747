"""The client side of SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), sans-IO, as Kafka's ScramSaslClient does it.

No channel binding (gs2 header ``n,,``), no SASLprep, and at least the mechanism's minimum iterations (4096), which
Kafka's client checks too. The arithmetic is security.sasl.scram_math's, the same the broker's ScramServer uses.

client-first  ``n,,n=<user>,r=<client nonce>``
server-first  ``r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>``
client-final  ``c=<base64 gs2 header>,r=<nonce>,p=<base64 proof>``
server-final  ``v=<base64 server signature>`` (or ``e=<error>``)
"""

from __future__ import annotations

import base64
import hmac
import secrets
from dataclasses import dataclass

from kafka_shim.shim.client.errors import ClientError
from kafka_shim.shim.security.sasl.scram_math import MECHANISMS, auth_message


class ScramError(ClientError):
    """The broker's side of the exchange is wrong or refused ours; the message says which part."""


@dataclass(frozen=True)
class ServerFirst:
    """The parts of a server-first message a client needs."""

    text: str  # the message itself, which the AuthMessage includes
    nonce: str
    salt: bytes
    iterations: int


class ScramClient:
    """One SCRAM exchange: ``first_message()``, then ``final_message(server_first)``, then
    ``verify_server_final(server_final)``, which raises ScramError unless the broker proved it holds the credential."""

    gs2_header = "n,,"  # no channel binding, no authorization id: what Kafka's ScramSaslClient sends

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self.scram = MECHANISMS[mechanism]
        self._password = password
        # Printable, without ',' (RFC 5802 c-nonce): url-safe base64 qualifies.
        self.nonce = nonce or secrets.token_urlsafe(24)
        self.client_first_bare = f"n={saslname(username)},r={self.nonce}"
        self._server_signature: bytes | None = None

    def first_message(self) -> bytes:
        return (self.gs2_header + self.client_first_bare).encode()

    def final_message(self, server_first: bytes) -> bytes:
        first = self.read_server_first(server_first)
        return self.prove(first, f"c={self.channel_binding},r={first.nonce}")

    @property
    def channel_binding(self) -> str:
        """The ``c=`` value: the gs2 header, base64-encoded (``biws`` for ``n,,``)."""
        return base64.b64encode(self.gs2_header.encode()).decode("ascii")

    def read_server_first(self, server_first: bytes) -> ServerFirst:
        """The server-first message's parts, checked as Kafka's client checks them; ScramError if they are wrong."""
        text = server_first.decode("utf-8", "replace")
        attrs = _attributes(text)
        if "e" in attrs:
            raise ScramError(f"{self.mechanism}: the broker refused the first message: {attrs['e']}")
        nonce, salt_b64, iterations = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if not nonce or salt_b64 is None or iterations is None:
            raise ScramError(f"{self.mechanism}: the broker's first message is not r=...,s=...,i=...")
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce):
            raise ScramError(f"{self.mechanism}: the broker's nonce does not extend ours; refusing to continue")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            rounds = int(iterations)
        except ValueError:
            raise ScramError(f"{self.mechanism}: the broker's salt or iteration count is malformed") from None
        if rounds < self.scram.min_iterations:
            raise ScramError(f"{self.mechanism}: requested iterations {rounds} is less than the minimum "
                             f"{self.scram.min_iterations}")
        return ServerFirst(text, nonce, salt, rounds)

    def prove(self, server_first: ServerFirst, without_proof: str) -> bytes:
        """``without_proof`` (client-final-message-without-proof) with its proof appended; remembers the server
        signature this exchange must end with."""
        salted = self.scram.salted_password(self._password, server_first.salt, server_first.iterations)
        signed = auth_message(self.client_first_bare, server_first.text, without_proof)
        self._server_signature = self.scram.server_signature(self.scram.server_key(salted), signed)
        proof = self.scram.client_proof(salted, signed)
        return f"{without_proof},p={base64.b64encode(proof).decode('ascii')}".encode()

    def verify_server_final(self, server_final: bytes) -> None:
        """The broker must prove it knows the credential too (RFC 5802 §3); constant-time comparison."""
        if self._server_signature is None:
            raise ScramError(f"{self.mechanism}: the final message came before the first one was answered")
        attrs = _attributes(server_final.decode("utf-8", "replace"))
        if "e" in attrs:
            raise ScramError(f"{self.mechanism}: the broker refused the proof: {attrs['e']}")
        try:
            signature = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            signature = b""
        if not hmac.compare_digest(signature, self._server_signature):
            raise ScramError(f"{self.mechanism}: the broker's signature is wrong; it does not hold this user's credential. "
                             f"Not trusting this connection")


def saslname(username: str) -> str:
    """RFC 5802's saslname: ``=`` and ``,`` escaped as ``=3D`` and ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def _attributes(text: str) -> dict[str, str]:
    attrs = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1 and key not in attrs:
            attrs[key] = value
    return attrs

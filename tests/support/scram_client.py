"""A small SCRAM client for tests (RFC 5802), with knobs to break each part of the exchange on purpose."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512", "SCRAM-SHA-1": "sha1"}


@dataclass
class ScramClient:
    user: str
    password: str
    mechanism: str = "SCRAM-SHA-256"
    nonce: str = "fyko+d2lbbFgONRv9qkxdawL"
    gs2_header: str = "n,,"
    first_extra: str = ""  # e.g. ",tokenauth=true"
    server_first: str = ""

    @property
    def hash_name(self) -> str:
        return HASHES[self.mechanism]

    @property
    def bare(self) -> str:
        name = self.user.replace("=", "=3D").replace(",", "=2C")
        return f"n={name},r={self.nonce}{self.first_extra}"

    def first(self) -> bytes:
        return (self.gs2_header + self.bare).encode()

    def final(self, server_first: bytes, *, channel: str | None = None, nonce: str | None = None,
              proof_bytes: bytes | None = None, password: str | None = None) -> bytes:
        self.server_first = server_first.decode()
        fields = dict(item.split("=", 1) for item in self.server_first.split(","))
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        salted = hashlib.pbkdf2_hmac(self.hash_name, (password or self.password).encode(), salt, iterations)
        client_key = hmac.new(salted, b"Client Key", self.hash_name).digest()
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        channel = channel if channel is not None else base64.b64encode(self.gs2_header.encode()).decode()
        without_proof = f"c={channel},r={nonce if nonce is not None else fields['r']}"
        self.auth_message = f"{self.bare},{self.server_first},{without_proof}"
        signature = hmac.new(stored_key, self.auth_message.encode(), self.hash_name).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        if proof_bytes is not None:
            proof = proof_bytes
        self._server_key = hmac.new(salted, b"Server Key", self.hash_name).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def server_signature_ok(self, server_final: bytes) -> bool:
        expected = hmac.new(self._server_key, self.auth_message.encode(), self.hash_name).digest()
        return server_final == b"v=" + base64.b64encode(expected)

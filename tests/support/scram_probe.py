"""kafka-shim's own SCRAM client (shim.client.scram) with knobs to break each part of the exchange on purpose.

It has no SCRAM arithmetic of its own: the proof and the expected server signature are the client's, which are
security.sasl.scram_math's, so a test that passes here also covers the client.
"""

from __future__ import annotations

import base64

from kafka_shim.shim.client.scram import ScramClient, ScramError

RFC_NONCE = "fyko+d2lbbFgONRv9qkxdawL"  # RFC 5802's example client nonce: first messages are predictable


class ScramProbe(ScramClient):
    """A ScramClient whose gs2 header, client-first extensions, and final ``c=``, ``r=`` and ``p=`` can be chosen."""

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: str = RFC_NONCE, gs2_header: str = "n,,",
                 first_extra: str = "") -> None:
        super().__init__(mechanism, username, password, nonce)
        self.gs2_header = gs2_header  # e.g. "n,a=alice," (an authorization id) or "y,," (a client that could bind)
        self.client_first_bare += first_extra  # e.g. ",tokenauth=true"

    def final_message(self, server_first: bytes, *, channel: str | None = None, nonce: str | None = None,
                      proof: bytes | None = None) -> bytes:
        """The client-final message; ``channel`` and ``nonce`` replace the ``c=`` and ``r=`` values the proof is
        computed over, ``proof`` replaces the proof itself."""
        first = self.read_server_first(server_first)
        without_proof = f"c={self.channel_binding if channel is None else channel},r={first.nonce if nonce is None else nonce}"
        final = self.prove(first, without_proof)
        if proof is None:
            return final
        return f"{without_proof},p={base64.b64encode(proof).decode('ascii')}".encode()

    def signature_verifies(self, server_final: bytes) -> bool:
        try:
            self.verify_server_final(server_final)
        except ScramError:
            return False
        return True

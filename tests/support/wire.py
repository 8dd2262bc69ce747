"""A blocking Kafka wire connection for differential tests: exact bytes in, exact answers out."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any

from kafka_shim.protocol.framing import decode_response, encode_request
from kafka_shim.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest


@dataclass
class Answer:
    """What a broker did with one request: closed the connection, or answered."""

    closed: bool
    correlation_id: int | None = None
    body: Any = None
    payload: bytes | None = None

    def __repr__(self) -> str:
        return "Answer(closed)" if self.closed else f"Answer(correlation_id={self.correlation_id}, body={self.body!r})"


class Wire:
    # A bound on a hung answer, not an expected wait: a JVM broker on a loaded 2-core machine has taken over 15 s
    # to answer an InitProducerId (CI, load average 47). Tests that expect no answer pass their own short timeout.
    def __init__(self, address: tuple[str, int], timeout: float = 60.0) -> None:
        self.address = address
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._cid = 100

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_exact(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def send_frame(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def read_answer(self, api_key: int, response_version: int) -> Answer:
        head = self._read_exact(4)
        if head is None:
            return Answer(closed=True)
        (size,) = struct.unpack(">i", head)
        payload = self._read_exact(size)
        if payload is None:
            return Answer(closed=True)
        cid, body = decode_response(api_key, response_version, payload)
        return Answer(False, cid, body, payload)

    def exchange(self, frame: bytes, api_key: int, response_version: int) -> Answer:
        """Send raw frame bytes; read the answer or notice the connection closing."""
        try:
            self.send_frame(frame)
        except (BrokenPipeError, ConnectionResetError):
            return Answer(closed=True)
        return self.read_answer(api_key, response_version)

    def request(self, api_key: int, version: int, body: Any, client_id: str | None = "differential") -> Answer:
        self._cid += 1
        return self.exchange(encode_request(api_key, version, self._cid, body, client_id=client_id), api_key, version)

    def sasl_plain(self, user: str, password: str) -> None:
        """Authenticate with SASL/PLAIN (SaslHandshake v1, then SaslAuthenticate v2)."""
        hs = self.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
        if hs.closed or hs.body.error_code != 0:
            raise ConnectionError(f"SASL handshake refused by {self.address}: {hs}")
        token = b"\x00" + user.encode() + b"\x00" + password.encode()
        auth = self.request(36, 2, SaslAuthenticateRequest(auth_bytes=token))
        if auth.closed or auth.body.error_code != 0:
            raise ConnectionError(f"SASL/PLAIN as {user} failed at {self.address}: {auth}")


def exchange_both(
    oracle: tuple[str, int], shim: tuple[str, int], frame: bytes, api_key: int, response_version: int,
    user: str | None = None, password: str | None = None,
) -> tuple[Answer, Answer]:
    """Send the same frame bytes to Kafka and to kafka-shim (as the same SASL/PLAIN user, if given)."""
    answers = []
    for address in (oracle, shim):
        with Wire(address) as wire:
            if user is not None:
                wire.sasl_plain(user, password or "")
            answers.append(wire.exchange(frame, api_key, response_version))
    return answers[0], answers[1]

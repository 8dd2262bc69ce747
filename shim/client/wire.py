"""A minimal asyncio Kafka wire client built on the project's codec.

It talks to any Kafka broker (kafka-shim or Apache Kafka): the ACL command line,
the benchmarks and the tests use it to send exact requests and read exact answers.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from kafka_shim.protocol.framing import decode_response, encode_request

_SIZE = struct.Struct(">i")


class ConnectionClosed(ConnectionError):
    """The broker closed the connection instead of answering."""


class WireClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str | None) -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self._next_correlation = 1

    @classmethod
    async def connect(cls, host: str, port: int, *, client_id: str | None = "kafka-shim", timeout: float = 10.0) -> WireClient:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        return cls(reader, writer, client_id)

    def next_correlation_id(self) -> int:
        cid = self._next_correlation
        self._next_correlation = (cid + 1) & 0x7FFFFFFF
        return cid

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self, timeout: float = 10.0) -> bytes:
        """The next response frame's payload (without its size); ConnectionClosed on EOF."""
        try:
            head = await asyncio.wait_for(self.reader.readexactly(4), timeout)
            (size,) = _SIZE.unpack(head)
            return await asyncio.wait_for(self.reader.readexactly(size), timeout)
        except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
            raise ConnectionClosed("the broker closed the connection") from exc

    async def send(self, api_key: int, version: int, body: Any, correlation_id: int | None = None) -> int:
        cid = self.next_correlation_id() if correlation_id is None else correlation_id
        await self.send_raw(encode_request(api_key, version, cid, body, client_id=self.client_id))
        return cid

    async def request(self, api_key: int, version: int, body: Any, timeout: float = 10.0) -> Any:
        """Send one request and return the decoded response body."""
        cid = await self.send(api_key, version, body)
        payload = await self.read_frame(timeout)
        got, response = decode_response(api_key, version, payload)
        if got != cid:
            raise ConnectionError(f"response correlation id {got} does not match request {cid}")
        return response

    async def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the broker closes the connection (EOF) within ``timeout``."""
        try:
            data = await asyncio.wait_for(self.reader.read(1), timeout)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return data == b""

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def __aenter__(self) -> WireClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

"""One replayed TCP connection: frames out, answers matched to their correlation ids, a close seen as a close.

Kafka answers a connection's requests in order; the reader still matches by correlation id, so an answer to a
request the replay did not wait for is never mistaken for another's.
"""

from __future__ import annotations

import asyncio
import struct

CLOSED = "closed"  # the broker closed the connection before answering


class ReplayConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._pending: dict[int, asyncio.Future[bytes | str]] = {}
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(self._read_answers())

    @classmethod
    async def open(cls, host: str, port: int, timeout: float) -> ReplayConnection:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        return cls(reader, writer)

    def send(self, frame: bytes, correlation_id: int | None) -> asyncio.Future[bytes | str] | None:
        """Write a size-prefixed frame; the future resolves to the answer's payload (without its size) or CLOSED.
        With ``correlation_id`` None no answer is expected (Produce acks=0)."""
        future: asyncio.Future[bytes | str] | None = None
        if correlation_id is not None:
            future = asyncio.get_running_loop().create_future()
            if self.closed:
                future.set_result(CLOSED)
                return future
            self._pending[correlation_id] = future
        if not self.closed:
            self._writer.write(frame)
        return future

    async def request(self, frame: bytes, correlation_id: int, timeout: float) -> bytes | str:
        future = self.send(frame, correlation_id)
        assert future is not None
        return await asyncio.wait_for(future, timeout)

    async def _read_answers(self) -> None:
        try:
            while True:
                size = struct.unpack(">i", await self._reader.readexactly(4))[0]
                payload = await self._reader.readexactly(size)
                future = self._pending.pop(struct.unpack_from(">i", payload)[0], None)
                if future is not None and not future.done():
                    future.set_result(payload)
        except (asyncio.IncompleteReadError, ConnectionError, OSError, struct.error):
            pass
        finally:
            self.closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_result(CLOSED)
            self._pending.clear()

    async def close(self) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass

"""A real TLS exchange over loopback: an asyncio server with the context under test, a client with another."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field

from kafka_shim.shim.security.tls.principal import SslPrincipalMapper, SslPrincipalMappingError, tls_principal

MAPPING_FAILED = "<mapping failed>"


@dataclass
class Exchange:
    principals: list[str] = field(default_factory=list)  # what the server computed, one per accepted connection
    reply: bytes | None = None  # what the client read back (the principal)
    error: BaseException | None = None  # the client's failure, if any
    version: str | None = None
    cipher: str | None = None
    server_certificate: bytes | None = None  # DER, as the client saw it


async def exchange(
    server_ctx: ssl.SSLContext,
    client_ctx: ssl.SSLContext,
    mapper: SslPrincipalMapper | None = None,
    server_hostname: str = "localhost",
) -> Exchange:
    """Connect once; the server answers with the principal it derived from the TLS session, then closes."""
    mapper = mapper or SslPrincipalMapper.from_rules(None)
    result = Exchange()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            principal = tls_principal(writer.get_extra_info("ssl_object"), mapper)
        except SslPrincipalMappingError:
            principal = MAPPING_FAILED
        result.principals.append(principal)
        writer.write(principal.encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname=server_hostname), 10
        )
        ssl_object = writer.get_extra_info("ssl_object")
        result.version, result.cipher = ssl_object.version(), ssl_object.cipher()[0]
        result.server_certificate = ssl_object.getpeercert(binary_form=True)
        try:
            result.reply = await asyncio.wait_for(reader.read(), 10)
        finally:
            writer.close()
    except (ssl.SSLError, ConnectionError) as exc:
        result.error = exc
    finally:
        server.close()
        await server.wait_closed()
    return result

"""What a handler knows about the request it is answering."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_shim.shim.config.broker_config import Listener

ANONYMOUS = "User:ANONYMOUS"


@dataclass(slots=True)
class RequestContext:
    services: Any  # shim.services.Services, built by the Broker (a layer above requests, so not imported here)
    listener: Listener
    header: Any  # protocol.messages.RequestHeader
    api_version: int
    client_host: str  # as a Java broker renders it (see shim.addresses)
    client_port: int
    principal: str = ANONYMOUS

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

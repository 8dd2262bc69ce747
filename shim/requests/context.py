"""What a handler knows about the request it is answering, and the services it may use to answer it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_shim.authorizer.model import ANONYMOUS

if TYPE_CHECKING:
    from kafka_shim.shim.config.broker_config import Listener
    from kafka_shim.shim.requests.services import Services


class CloseConnection(Exception):
    """Raised by a handler to close the connection without replying, as Kafka does when a request fails
    validation while it is parsed. The message says why, for the log line."""


class _NoResponse:
    """What a handler returns when Kafka sends nothing back (Produce with acks=0): the request is answered by silence."""

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


@dataclass(slots=True)
class RequestContext:
    services: Services  # built once by the Broker
    listener: Listener
    header: Any  # protocol.messages.RequestHeader
    api_version: int
    client_host: str  # as a Java broker renders it (see shim.net.addresses)
    client_port: int
    principal: str = ANONYMOUS
    # The authorization decisions of this request, collected by shim.requests.authz only while a RequestTap is
    # attached (shim.tap); None otherwise, so nothing is collected.
    decisions: list[Any] | None = None
    # The request's size in bytes (what Kafka's produce quota meters), and the throttle time a handler decided
    # (a client over its quota): dispatch mutes the connection that long after answering.
    request_size: int = 0
    throttle_ms: int = 0
    # The principal logged in with a delegation token: Kafka refuses it any token request (KIP-48).
    token_authenticated: bool = False
    # The request quota (shim.requests.request_quota): handler time so far, the start of the running step, and
    # whether the request has been charged (a handler may charge it itself, as Fetch does).
    handler_ns: int = 0
    step_started_ns: int = 0
    request_quota_charged: bool = False

    @property
    def node_id(self) -> int:
        """The node this request reached (one of a cluster in one process; else node.id)."""
        node = self.listener.node_id
        return node if node >= 0 else self.services.cluster.node_id

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

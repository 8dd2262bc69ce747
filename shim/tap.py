"""RequestTap: what the broker hands a capture sink for every request it served (no Kafka counterpart; Kafka's
nearest is the ``kafka.request.logger`` "Completed request" line, which this carries and more: the raw bytes).

The request pipeline (``shim.requests.dispatch``) builds one ``TappedRequest`` per request frame once its outcome
is known (answered, answered by silence, connection closed) and calls ``RequestTap.record`` with it, on the event
loop. A tap must therefore never block: the trace writer (``traces.capture``) only puts the record on a bounded
queue. With no tap attached nothing of this runs: the pipeline checks one attribute per frame.

Fields hold what the broker saw, without interpretation: the frame as received (size prefix removed), the answer
as the broker queued it for the client (None when it answered nothing), the connection's fields (``TappedSession``,
marshalled once per connection),
the principal the request was handled as, and the authorization decisions it made (``TappedDecision``, in the order
asked).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

# How a request ended, as the trace records it.
ANSWERED = "response"  # answered (``response`` holds the answer frame)
SILENT = "no_response"  # answered by silence, as Kafka does for Produce with acks=0
CLOSED = "closed"  # the broker closed the connection instead of answering (Kafka's behaviour for that input)
AUTHENTICATION_FAILED = "authentication_failed"  # answered (if at all), then closed after the failure delay


class TappedDecision(NamedTuple):
    """One authorization question a request asked, and the broker's answer. The broker records plain tuples in this
    field order (shim.requests.authz: cheaper to build, and marshalled to the capture writer as they are).

    ``kind``: ``authorize`` (Kafka's ``authorize`` of one action on one resource: ``allowed`` and ``rule``, what
    decided it as Kafka's audit log writes it: "SuperUser", "DefaultAllow", "DefaultDeny" or "MatchingAcl(...)"),
    ``by_resource_type`` (KIP-679 ``authorizeByResourceType``: ``allowed`` on any resource of the type, ``name``
    None) or ``authorized_operations`` (a KIP-430 bitfield for ``name``: ``operations``, ``allowed`` None).
    """

    kind: str
    operation: int | None  # AclOperation code
    resource_type: int  # ResourceType code
    name: str | None
    allowed: bool | None
    rule: str | None = None
    resource_ref_count: int | None = None
    operations: int | None = None


class TappedSession(NamedTuple):
    """The fields of a connection that every request of it shares. The broker makes them once per connection (again
    when the client names its software) as a plain tuple in this field order, marshalled (``marshal`` version 2), and
    every record refers to those bytes: a sink that marshals its records copies them instead of encoding each field
    again (``marshal.loads`` gives the tuple back). A sink also takes the tuple itself."""

    connection_id: str  # Kafka's form: brokerHost:brokerPort-clientHost:clientPort-index
    client_host: str
    client_port: int
    listener: str
    security_protocol: str
    client_software_name: str | None  # from the connection's ApiVersions v3+ request (KIP-511)
    client_software_version: str | None


class TappedRequest(NamedTuple):
    """One request frame and what became of it. The broker hands a tap plain tuples in this field order (cheapest
    to make per request; ``TappedRequest(*record)`` names the fields): references to what the pipeline holds
    anyway. The header's fields and the answer without its size prefix are the sink's to read (the capture does so
    in its writer process)."""

    time_us: int  # when the frame was taken, UTC microseconds since the epoch
    session: bytes | tuple  # the connection's TappedSession: from the broker as marshalled bytes, or the tuple
    principal: str  # the principal the request was handled as
    request: bytes | None  # the frame without its 4-byte size prefix; None when it holds credentials (never recorded)
    header: bytes | None  # only for a credential frame: its first 8 bytes (api key, version, correlation id)
    answer: bytes | None  # the answer as queued for the client: size-prefixed frame(s); None when nothing was sent
    outcome: str  # ANSWERED, SILENT, CLOSED or AUTHENTICATION_FAILED
    response_time_us: int  # from taking the frame to having the answer (or the close) ready
    decisions: list[TappedDecision]  # as plain tuples, in the order asked


class RequestTap(Protocol):
    """A sink for served requests. ``record`` runs on the broker's event loop and must return at once."""

    def record(self, request: tuple) -> None:
        """``request``: a plain tuple in TappedRequest's field order."""
        ...

    def close(self) -> None:
        """Flush and release everything; called once when the broker stops (no ``record`` after it)."""
        ...

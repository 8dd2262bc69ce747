"""Kafka conversations out of reassembled TCP connections: request frames paired with their responses, as trace rows.

A connection is Kafka when one side's first bytes are a size-prefixed request whose header parses with a known API
key (any port: nothing here looks at 9092); that side is the client. Kafka answers a connection's requests one at a
time and in order, so each response is the next frame from the broker, and its correlation id (the first four
bytes of every response header version) must be the request's: anything else stops the connection with a report
rather than pairing the wrong answer. Produce with acks=0 is answered by silence (``no_response``); requests still
waiting when the connection closes are ``closed``; requests still waiting when the capture ends are reported, not
rowed (their outcome is unknown).

SASL (Kafka's SaslServerAuthenticator): after a successful SaslHandshake v1+ the exchange is SaslAuthenticate
requests; after SaslHandshake v0 (KIP-43) the client's tokens are bare size-prefixed frames without a header, each
answered by a bare frame from the broker: they become rows without API key, version or correlation id, as the
capture writes them, never with the token's bytes. The username is read from PLAIN's and SCRAM's first token
(traces.proxy_sasl) and is the principal (``User:<name>``) from the exchange's successful end on; before it the
connection's principal is ``User:ANONYMOUS``, as Kafka's. Connections without SASL have no principal (the capture
cannot tell a PLAINTEXT listener's principal builder). TLS connections are reported as unreadable.

Never recorded, as the capture: SaslAuthenticate and AlterUserScramCredentials request bytes; AlterConfigs and
IncrementalAlterConfigs keep a redacted JSON body instead of bytes (traces.format).
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from functools import cache
from itertools import count
from typing import Any

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import decode_response, parse_request
from kafka_shim.protocol.schema import api_index, message_spec
from kafka_shim.traces.format import CONFIG_ALTERING_APIS, REQUEST, redacted_request_json
from kafka_shim.traces.importers.pcap_streams import Connection, Direction
from kafka_shim.traces.importers.report import ImportReport
from kafka_shim.traces.proxy import _produce_acks  # the one reading of acks without decoding the records
from kafka_shim.traces.proxy_sasl import exchange_rounds, username

PCAP = "pcap"
ANSWERED, SILENT, CLOSED, AUTHENTICATION_FAILED = "response", "no_response", "closed", "authentication_failed"
ANONYMOUS = "User:ANONYMOUS"
SASL_PLAINTEXT = "SASL_PLAINTEXT"
_SECRET_APIS = frozenset({ApiKey.SASL_AUTHENTICATE, ApiKey.ALTER_USER_SCRAM_CREDENTIALS})
_SIZE = struct.Struct(">i")
# A first frame larger than this is not taken for a Kafka request (Kafka's socket.request.max.bytes is 100 MiB).
MAX_FRAME = 100 * 1024 * 1024
_TLS_RECORD_TYPES = frozenset({0x14, 0x15, 0x16, 0x17})
# Requests whose bodies the connection's state needs (client software, SASL mechanism and first token).
_STATE_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


@cache
def _valid_versions(api_key: int) -> Any:
    return message_spec(api_index()[api_key][0]).valid_versions


@dataclass(slots=True)
class _Pending:
    row: dict[str, Any]
    ready_us: int  # when the request's last byte had arrived
    token: bool = False  # a bare SASL token (after SaslHandshake v0)
    mechanism: str | None = None  # a SaslHandshake's


class _Frames:
    """Size-prefixed frames of one direction, with the time each was complete."""

    def __init__(self, direction: Direction) -> None:
        self.direction = direction
        self.offset = 0

    def next(self) -> tuple[bytes, int] | str | None:
        """The next frame and its time; None at the clean end; a reason string when the rest cannot be read."""
        data, offset = self.direction.data, self.offset
        if offset == len(data):
            return None if self.direction.gap_at is None else "the capture misses bytes of this stream here"
        if len(data) - offset < 4:
            return self._cut("frame size")
        size = _SIZE.unpack_from(data, offset)[0]
        if size < 0 or size > MAX_FRAME:
            return f"a frame size of {size} bytes: not a Kafka frame"
        if len(data) - offset - 4 < size:
            return self._cut(f"{size}-byte frame")
        self.offset = offset + 4 + size
        return data[offset + 4:self.offset], self.direction.time_at(self.offset - 1)

    def _cut(self, what: str) -> str:
        if self.direction.gap_at is not None:
            return f"the capture misses bytes of this stream inside a {what}"
        return f"the stream ends inside a {what}"


# Kafka's highest version of any API is below 20 (Fetch 17 in 3.9): beyond this a "version" is not one.
_MAX_PLAUSIBLE_VERSION = 100


def looks_like_request(data: bytes) -> bool:
    """Whether the bytes start with a request frame whose header parses, with a known API key."""
    if len(data) < 12:
        return False
    size = _SIZE.unpack_from(data)[0]
    if size < 8 or size > MAX_FRAME or len(data) < 4 + min(size, 64):
        return False
    api_key, version = struct.unpack_from(">hh", data, 4)
    # a version newer than the schemas here still counts (a newer client's ApiVersions, answered at v0)
    if api_key not in api_index() or not 0 <= version <= _MAX_PLAUSIBLE_VERSION:
        return False
    try:
        parse_request(data[4:4 + size])
    except Exception:  # any bytes: a header that does not parse is not a request
        return False
    return True


def _first_answer_matches(requests: bytes, responses: bytes) -> bool:
    """Without the SYN, a side whose first frame parses as a request may still be the broker's (a response's
    correlation id reads as API key 0 and a version) or a client seen from the middle of a frame: the side is taken
    for the client only when the other side's first frame answers its first request expecting an answer."""
    if len(responses) < 8:
        return True  # nothing answered in the capture: nothing to check against
    expected = _SIZE.unpack_from(responses, 4)[0]
    offset = 0
    for _ in range(1000):  # acks=0 produce requests get no answer: the first one expecting an answer counts
        if len(requests) - offset < 12:
            return False
        size = _SIZE.unpack_from(requests, offset)[0]
        if size < 8 or size > MAX_FRAME or len(requests) - offset - 4 < size:
            return False
        try:
            frame = parse_request(requests[offset + 4:offset + 4 + size])
        except Exception:  # any bytes: not a request
            return False
        if not (frame.api_key == ApiKey.PRODUCE and _acks(frame.payload, frame.body_offset, frame.api_version) == 0):
            return frame.correlation_id == expected
        offset += 4 + size
    return False


def looks_like_tls(data: bytes) -> bool:
    return len(data) >= 3 and data[0] in _TLS_RECORD_TYPES and data[1] == 3


class KafkaConnections:
    """Turns connections into trace rows; numbers each broker address's connections from 0 as Kafka's ids do."""

    def __init__(self, report: ImportReport, check_bodies: bool = False) -> None:
        self.report = report
        self.check_bodies = check_bodies
        self._indexes: dict[tuple[str, int], count[int]] = {}

    def rows(self, connection: Connection) -> list[dict[str, Any]]:
        sides = self._client_side(connection)
        if sides is None:
            return []
        (client, broker), (to_broker, to_client) = sides
        index = next(self._indexes.setdefault(broker, count()))
        connection_id = f"{broker[0]}:{broker[1]}-{client[0]}:{client[1]}-{index}"
        self.report.count("kafka_connections")
        return _Conversation(self.report, connection, connection_id, client, to_broker, to_client, self.check_bodies).run()

    def _client_side(self, c: Connection) -> tuple[tuple[tuple[str, int], tuple[str, int]], tuple[Direction, Direction]] | None:
        where = f"{c.a[0]}:{c.a[1]} <-> {c.b[0]}:{c.b[1]} (from {c.first_where})"
        if not c.a_to_b.data and not c.b_to_a.data:
            if c.a_to_b.gap_at is not None or c.b_to_a.gap_at is not None:
                self.report.problem("stream_start_lost", where, "the capture misses the first bytes of both directions; "
                                    "nothing of this connection can be read")
            return None  # no payload captured: nothing to say
        if c.saw_syn and c.a_to_b.gap_at == 0:
            self.report.problem("stream_start_lost", where, "the capture misses the client's first bytes; nothing of "
                                "this connection can be read")
            return None
        options = [((c.a, c.b), (c.a_to_b, c.b_to_a)), ((c.b, c.a), (c.b_to_a, c.a_to_b))]
        if not c.saw_syn:  # who spoke first is the client; without the SYN that is the earlier first byte
            options.sort(key=lambda o: o[1][0].first_time_us if o[1][0].data else float("inf"))
        else:
            options = options[:1]  # the SYN's sender is the client
        for option in options:
            to_broker, to_client = option[1]
            if looks_like_request(to_broker.data) and (c.saw_syn or _first_answer_matches(to_broker.data, to_client.data)):
                return option
        first = options[0][1][0].data or options[0][1][1].data
        if looks_like_tls(first):
            self.report.problem("tls_stream", where, "TLS records: the Kafka traffic in it cannot be read from a capture")
        elif not c.saw_syn:
            self.report.problem("non_kafka_stream", where, "no Kafka request at the start of the captured bytes (the "
                                "capture began mid-connection, or it is not Kafka)")
        else:
            self.report.problem("non_kafka_stream", where, f"not Kafka: the client's first bytes are {first[:16].hex()}")
        return None


class _Conversation:
    def __init__(self, report: ImportReport, connection: Connection, connection_id: str, client: tuple[str, int],
                 to_broker: Direction, to_client: Direction, check_bodies: bool) -> None:
        self.report = report
        self.check_bodies = check_bodies
        self.connection = connection
        self.connection_id = connection_id
        self.client = client
        self.requests = _Frames(to_broker)
        self.responses = _Frames(to_client)
        self.rows: list[dict[str, Any]] = []
        self.pending: deque[_Pending] = deque()
        self.principal: str | None = None
        self.software: tuple[str | None, str | None] = (None, None)
        self.sasl = False
        self.mechanism: str | None = None
        self.bare_tokens = False
        self.sasl_rounds = 0
        self.sasl_user: str | None = None
        self.stopped: str | None = None
        self._order = count()

    def run(self) -> list[dict[str, Any]]:
        while self.stopped is None:
            frame = self.requests.next()
            if frame is None:
                break
            if isinstance(frame, str):
                self._stop("request_stream_unreadable", frame)
                break
            self._request(*frame)
        if self.stopped is None:
            self._drain()
        self._finish_pending()
        if self.sasl:
            for row in self.rows:
                row["security_protocol"] = SASL_PLAINTEXT
        return self.rows

    # -- requests ---------------------------------------------------------------------------------------------

    def _request(self, raw: bytes, ready_us: int) -> None:
        self.report.count("requests")
        if self.bare_tokens:
            if self.sasl_rounds == 0:
                self.sasl_user = username(self.mechanism, raw)
            self._expect(_Pending(self._row(ready_us, None, None, None, None, None), ready_us, token=True))
            return
        try:
            frame = parse_request(raw)
        except Exception as exc:  # any bytes: Kafka closes a connection whose request header does not parse
            self.report.problem("unreadable_request_header", self.connection_id, str(exc))
            self.rows.append(self._row(ready_us, None, None, None, None, raw, outcome=CLOSED, response_time_us=0))
            self._stop(None, "")
            return
        api_key, version = frame.api_key, frame.api_version
        stored: bytes | None = None if api_key in _SECRET_APIS else raw
        row = self._row(ready_us, frame.header.client_id, api_key, version, frame.correlation_id, stored)
        if api_key in CONFIG_ALTERING_APIS:
            row["request"], row["request_json"] = None, redacted_request_json(raw)
        pending = _Pending(row, ready_us)
        body = self._decode_body(frame, api_key, version)  # None unless needed or checked (and decodable)
        if body is not None:
            if api_key == ApiKey.API_VERSIONS and version >= 3:
                self.software = (body.client_software_name, body.client_software_version)
                row["client_software_name"], row["client_software_version"] = self.software
            elif api_key == ApiKey.SASL_HANDSHAKE:
                pending.mechanism = body.mechanism
                if not self.sasl:
                    # a SASL listener: what came before (ApiVersions) was handled as ANONYMOUS too
                    self.principal = row["principal"] = ANONYMOUS
                    for earlier in (*self.rows, *(p.row for p in self.pending)):
                        earlier["principal"] = ANONYMOUS
                self.sasl, self.sasl_rounds = True, 0
            elif api_key == ApiKey.SASL_AUTHENTICATE and self.sasl_rounds == 0:
                self.sasl_user = username(self.mechanism, body.auth_bytes)
        if api_key == ApiKey.PRODUCE and _acks(raw, frame.body_offset, version) == 0:
            row.update(outcome=SILENT, response_time_us=0)
            self.rows.append(row)
            return
        self._expect(pending)

    def _decode_body(self, frame: Any, api_key: int, version: int) -> Any:
        if version not in _valid_versions(api_key):
            self.report.problem("unknown_api_version", self.connection_id,
                                f"{api_key} ({api_index()[api_key][0]}) v{version}: a version the Kafka schemas here "
                                "do not have; row kept with its bytes, body not decoded")
            return None
        if api_key not in _STATE_APIS and not self.check_bodies:
            return None  # decoding is the readers' (iter_requests); here only what the connection's state needs
        try:
            return frame.decode_body()
        except Exception as exc:  # any bytes: reported, the row keeps them
            self.report.problem("undecodable_request_body", self.connection_id,
                                f"api key {api_key} v{version} correlation id {frame.correlation_id}: {exc}")
            return None

    def _expect(self, pending: _Pending) -> None:
        self.pending.append(pending)
        # Kafka reads a connection's next request only after answering this one (or pipelines a few): pair now
        # whatever the broker has already sent, so SASL state is known before the next client frame is read.
        self._pair_available()

    # -- responses --------------------------------------------------------------------------------------------

    def _pair_available(self) -> None:
        while self.pending and self.stopped is None:
            # Only responses the broker sent before the client's next request is read matter for state; pairing
            # in order is the same whenever it happens, so pair as long as frames are there.
            frame = self.responses.next()
            if frame is None:
                return
            if isinstance(frame, str):
                self._stop("response_stream_unreadable", frame)
                return
            self._response(*frame)

    def _drain(self) -> None:
        self._pair_available()
        extra = self.responses.next()
        if extra is not None and not isinstance(extra, str) and self.stopped is None:
            self.report.problem("unpaired_response", self.connection_id, "the broker sent a frame with no request waiting")

    def _response(self, raw: bytes, ready_us: int) -> None:
        pending = self.pending.popleft()
        row = pending.row
        if not pending.token:
            correlation_id = _SIZE.unpack_from(raw)[0] if len(raw) >= 4 else None
            if correlation_id != row["correlation_id"]:
                self.pending.appendleft(pending)
                self._stop("unpaired_response", f"the broker answered correlation id {correlation_id} where "
                           f"{row['correlation_id']} (api key {row['api_key']}) was the oldest request waiting")
                return
        outcome = ANSWERED
        api_key = row["api_key"]
        if pending.token:
            self._sasl_progress(True)
        elif api_key == ApiKey.SASL_HANDSHAKE:
            if _error_code(api_key, row["api_version"], raw) == 0:
                self.mechanism = pending.mechanism
                self.bare_tokens = row["api_version"] == 0
                if self.bare_tokens and exchange_rounds(self.mechanism) is None:
                    self._finish(row, raw, ready_us, outcome)
                    self._stop("sasl_unfollowable", f"SaslHandshake v0 with {self.mechanism}: its bare tokens cannot be "
                               "told from Kafka requests; the rest of the connection is not read")
                    return
        elif api_key == ApiKey.SASL_AUTHENTICATE:
            ok = _error_code(api_key, row["api_version"], raw) == 0
            self._sasl_progress(ok)
            if not ok:
                outcome = AUTHENTICATION_FAILED
        elif self.check_bodies and api_key is not None and row["request"] is not None:
            self._check_response_body(api_key, row, raw)
        self._finish(row, raw, ready_us, outcome)

    def _check_response_body(self, api_key: int, row: dict[str, Any], raw: bytes) -> None:
        if row["api_version"] not in _valid_versions(api_key):
            return  # reported with the request
        try:
            decode_response(api_key, row["api_version"], raw)
        except Exception as exc:  # any bytes: reported, the row keeps them
            self.report.problem("undecodable_response_body", self.connection_id,
                                f"api key {api_key} v{row['api_version']} correlation id {row['correlation_id']}: {exc}")

    def _finish(self, row: dict[str, Any], raw: bytes | None, ready_us: int, outcome: str) -> None:
        row.update(response=raw, outcome=outcome, response_time_us=max(ready_us - row["_ready_us"], 0))
        self.rows.append(row)

    def _sasl_progress(self, ok: bool) -> None:
        if not ok:
            return
        self.sasl_rounds += 1
        rounds = exchange_rounds(self.mechanism)
        if rounds is None:
            self.principal = None  # a mechanism whose username cannot be read
        elif self.sasl_rounds == rounds:
            self.principal = f"User:{self.sasl_user}" if self.sasl_user is not None else None
            self.bare_tokens = False
            self.report.count("sasl_logins")

    # -- the end ----------------------------------------------------------------------------------------------

    def _finish_pending(self) -> None:
        ended = self.connection.ended and self.stopped is None
        last_us = max(self.requests.direction.time_at(len(self.requests.direction.data)),
                      self.responses.direction.time_at(len(self.responses.direction.data)))
        for pending in self.pending:
            if ended:
                self._finish(pending.row, None, max(last_us, pending.ready_us), CLOSED)
            else:
                self.report.problem("unanswered_requests", self.connection_id,
                                    f"api key {pending.row['api_key']} correlation id {pending.row['correlation_id']}: "
                                    "no answer in the capture and no close; left out")
        self.pending.clear()
        self.rows.sort(key=lambda r: r["_order"])
        for row in self.rows:
            del row["_ready_us"], row["_order"]

    def _stop(self, kind: str | None, detail: str) -> None:
        if kind is not None:
            left = len(self.requests.direction.data) - self.requests.offset
            self.report.problem(kind, self.connection_id, f"{detail}; the rest of this connection is left out "
                                f"({len(self.pending)} request(s) waiting, {left} request byte(s) unread)")
        self.stopped = kind or "closed"

    def _row(self, ready_us: int, client_id: str | None, api_key: int | None, version: int | None,
             correlation_id: int | None, request: bytes | None, **extra: Any) -> dict[str, Any]:
        row = {
            "kind": REQUEST, "time": ready_us, "source": PCAP, "connection_id": self.connection_id,
            "client_host": self.client[0], "client_port": self.client[1], "listener": None, "security_protocol": None,
            "principal": self.principal, "client_id": client_id, "client_software_name": self.software[0],
            "client_software_version": self.software[1], "api_key": api_key, "api_version": version,
            "correlation_id": correlation_id, "request": request, "request_json": None, "response": None,
            "response_json": None, "outcome": None, "response_time_us": None, "decisions": None,
            "dropped_requests": None, "dropped_until": None, "response_rewritten": None,
            # rows are finished out of request order (acks=0 produce at once, others on their answer): this keeps
            # the order requests arrived in
            "_ready_us": ready_us, "_order": next(self._order),
        }
        row.update(extra)
        return row


def _acks(raw: bytes, body_offset: int, version: int) -> int | None:
    try:
        return _produce_acks(raw, body_offset, version)
    except (IndexError, struct.error):
        return None


def _error_code(api_key: int, api_version: int | None, frame: bytes) -> int | None:
    try:
        return decode_response(api_key, api_version or 0, frame)[1].error_code
    except Exception:  # any bytes: an unreadable answer is no success
        return None

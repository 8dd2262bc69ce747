"""The broker's records as trace rows (traces.capture_rows), and their way through the pipe (traces.capture_pipe).

The broker's event loop records references only (the frame, the answer as queued, the connection's fields); the
capture's writer process reads the header and cuts the answer. These check it reads what the broker would have.
"""

from __future__ import annotations

import marshal
import os
import threading

from kafka_shim.shim.tap import ANSWERED, CLOSED, SILENT, TappedRequest, TappedSession
from kafka_shim.traces import capture_pipe as pipe
from kafka_shim.traces.capture_columns import broker_table
from kafka_shim.traces.capture_rows import RECORD_FIELDS, tapped_rows

SESSION = tuple(TappedSession("127.0.0.1:9092-127.0.0.1:5000-0", "127.0.0.1", 5000, "PLAINTEXT", "PLAINTEXT",
                              "librdkafka", "2.16.0"))
# As the broker hands it: marshalled once per connection.
MARSHALLED = marshal.dumps(SESSION, 2)


def _frame(key: int, version: int, correlation: int, client_id: bytes | None, body: bytes = b"") -> bytes:
    id_part = b"\xff\xff" if client_id is None else len(client_id).to_bytes(2, "big") + client_id
    return key.to_bytes(2, "big") + version.to_bytes(2, "big") + correlation.to_bytes(4, "big", signed=True) + id_part + body


def _record(request: bytes | None, header: bytes | None = None, answer: bytes | None = None,
            outcome: str = ANSWERED, decisions: list | None = None, session: bytes | tuple = MARSHALLED) -> tuple:
    return tuple(TappedRequest(1_764_000_000_000_000, session, "User:alice", request, header, answer, outcome, 7,
                               decisions if decisions is not None else []))


def _rows(records: list[tuple]) -> list[dict]:
    # Through the pipe as the sink sends them: marshalled one by one, joined into one message. The writer reads the
    # broker's records column by column where it can, else row by row: both ways must give the same rows.
    message = b"".join(pipe.rows_message(RECORD_FIELDS, [pipe.record(r) for r in records], None))
    fields, block, dropped = pipe.rows_body(message[5:])
    assert message[0] == pipe.ROWS and int.from_bytes(message[1:5], "big") == len(message) - 5 and dropped is None
    by_rows = tapped_rows(block.rows(), fields=fields)
    by_columns = broker_table(block)
    if by_columns is not None:
        assert by_columns.equals(by_rows), (by_columns.to_pylist(), by_rows.to_pylist())
    return by_rows.to_pylist()


def test_header_fields_come_from_the_frame() -> None:
    frames = [_frame(3, 12, 41, b"app-1", b"body"), _frame(0, 9, -5, None), _frame(18, 3, 7, "zoë".encode()),
              _frame(1, 16, 8, b"\xff\xfe")]
    rows = _rows([_record(f) for f in frames])
    assert [(r["api_key"], r["api_version"], r["correlation_id"], r["client_id"]) for r in rows] == [
        (3, 12, 41, "app-1"), (0, 9, -5, None), (18, 3, 7, "zoë"), (1, 16, 8, "\ufffd\ufffd")]
    assert [r["request"] for r in rows] == frames
    assert {(r["connection_id"], r["client_port"], r["client_software_name"], r["principal"]) for r in rows} == {
        ("127.0.0.1:9092-127.0.0.1:5000-0", 5000, "librdkafka", "User:alice")}


def test_each_row_gets_its_own_connection_fields() -> None:
    # Sessions as the broker hands them (marshalled) or as tuples, several connections interleaved in one batch.
    other = ("127.0.0.1:9092-127.0.0.1:5001-1", "127.0.0.1", 5001, "SASL", "SASL_PLAINTEXT", None, None)
    sessions = [MARSHALLED, marshal.dumps(other, 2), SESSION, other, MARSHALLED]
    rows = _rows([_record(_frame(3, 12, i, None), session=s) for i, s in enumerate(sessions)])
    assert [(r["connection_id"], r["client_host"], r["client_port"], r["listener"], r["security_protocol"],
             r["client_software_name"], r["client_software_version"]) for r in rows] == [
        SESSION, other, SESSION, other, SESSION]


def test_frames_without_a_readable_header_and_credential_frames() -> None:
    secret = _frame(36, 2, 102, b"app", b"password")
    rows = _rows([
        _record(b"\x00\x03\x00\x0c\x00", outcome=CLOSED),  # too short for a header: recorded, nothing read from it
        _record(None, header=secret[:8]),  # SaslAuthenticate: its header's fixed start only
        _record(None),  # a raw SASL token: nothing
        _record(_frame(3, 12, 9, b"x")),
    ])
    assert [(r["api_key"], r["api_version"], r["correlation_id"], r["client_id"]) for r in rows] == [
        (None, None, None, None), (36, 2, 102, None), (None, None, None, None), (3, 12, 9, "x")]
    assert [r["request"] for r in rows][:3] == [b"\x00\x03\x00\x0c\x00", None, None]
    assert not any(b"password" in (r["request"] or b"") for r in rows)


def test_the_answer_is_its_first_frame_without_the_size_prefix() -> None:
    first, second = b"\x00\x00\x00\x01answer", b"\x00\x00\x00\x02more"
    queued = len(first).to_bytes(4, "big") + first + len(second).to_bytes(4, "big") + second
    one = len(first).to_bytes(4, "big") + first
    rows = _rows([_record(_frame(3, 12, 1, None), answer=queued), _record(_frame(3, 12, 2, None), outcome=CLOSED),
                  _record(_frame(0, 9, 3, None), answer=b"", outcome=SILENT), _record(_frame(3, 12, 4, None), answer=one)])
    assert [r["response"] for r in rows] == [first, None, None, first]
    assert [r["outcome"] for r in rows] == [ANSWERED, CLOSED, SILENT, ANSWERED]
    # A batch of single frames (the usual case) is cut in one step: the same bytes.
    rows = _rows([_record(_frame(3, 12, 5, None), answer=one), _record(None, outcome=CLOSED), _record(None, answer=b"")])
    assert [r["response"] for r in rows] == [first, None, None]


def test_a_batch_of_credential_frames_only() -> None:
    secret = _frame(36, 2, 7, b"app", b"password")
    rows = _rows([_record(None, header=secret[:8]), _record(None)])
    assert [(r["api_key"], r["api_version"], r["correlation_id"], r["client_id"]) for r in rows] == [
        (36, 2, 7, None), (None, None, None, None)]


def test_decisions_as_the_broker_records_them() -> None:
    decision = ("authorize", 4, 2, "orders", True, "DefaultAllow", 1, None)
    bitfield = ("authorized_operations", None, 2, "orders", None, None, None, 0b1011)
    rows = _rows([_record(_frame(3, 12, 1, None), decisions=[decision, bitfield]), _record(_frame(3, 12, 2, None))])
    assert [(d["kind"], d["operation"], d["resource_type"], d["allowed"], d["rule"], d["authorized_operations"])
            for d in rows[0]["decisions"]] == [("authorize", "WRITE", "TOPIC", True, "DefaultAllow", None),
                                               ("authorized_operations", None, "TOPIC", None, None, 11)]
    assert rows[1]["decisions"] == []


def test_a_message_of_many_records_passes_the_pipe_whole() -> None:
    # More buffers than one writev takes, and more bytes than the pipe holds: written in several calls, some of
    # them partial, while the other end reads.
    records = [pipe.record(_record(_frame(3, 12, i, b"app", b"x" * (i % 700)))) for i in range(5000)]
    read_fd, write_fd = os.pipe()
    received: list[tuple[int, object] | None] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_message(read_fd)))
    reader.start()
    try:
        pipe.write_all(write_fd, pipe.rows_message(RECORD_FIELDS, records, {"kind": "dropped"}))
        reader.join(60)
    finally:
        os.close(write_fd)
        os.close(read_fd)
    assert not reader.is_alive()
    kind, (fields, block, dropped) = received[0]
    assert kind == pipe.ROWS and tuple(fields) == RECORD_FIELDS and dropped == {"kind": "dropped"}
    assert block.time_range() == (1_764_000_000_000_000, 1_764_000_000_000_000)
    assert broker_table(block).column("request").to_pylist() == [row[3] for row in block.rows()]
    assert [row[3] for row in block.rows()] == [_frame(3, 12, i, b"app", b"x" * (i % 700)) for i in range(5000)]

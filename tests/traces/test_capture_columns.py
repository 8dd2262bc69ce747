"""The capture writer's column-by-column reading of the broker's records (traces.capture_columns) gives exactly the
rows of the row-by-row path (traces.capture_rows.tapped_rows), and leaves to it every batch it does not read."""

from __future__ import annotations

import marshal
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.shim.tap import ANSWERED, AUTHENTICATION_FAILED, CLOSED, SILENT
from kafka_shim.traces import capture_pipe as pipe
from kafka_shim.traces.capture_columns import broker_table
from kafka_shim.traces.capture_rows import RECORD_FIELDS, tapped_rows

DAY_US = 86_400_000_000
BASE_US = 20_000 * DAY_US  # 2024-10-04, midnight UTC


def _block(records: list[tuple]) -> pipe.RecordBlock:
    message = b"".join(pipe.rows_message(RECORD_FIELDS, [pipe.record(r) for r in records], None))
    fields, block, _ = pipe.rows_body(message[5:])
    assert fields == RECORD_FIELDS
    return block


def _frame(key: int, version: int, correlation: int, client_id: bytes | None, body: bytes = b"") -> bytes:
    id_part = b"\xff\xff" if client_id is None else len(client_id).to_bytes(2, "big") + client_id
    return (key.to_bytes(2, "big") + version.to_bytes(2, "big") + correlation.to_bytes(4, "big", signed=True)
            + id_part + body)


def _session(port: int, software: str | None) -> bytes:
    return marshal.dumps((f"127.0.0.1:9092-127.0.0.1:{port}-0", "127.0.0.1", port, "PLAINTEXT", "PLAINTEXT",
                          software, "1.0" if software else None), 2)


text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
frames = st.one_of(
    st.builds(_frame, st.sampled_from([0, 1, 3, 8, 9, 10, 18, 19, 22, 32]), st.integers(0, 17),
              st.integers(-2**31, 2**31 - 1), st.one_of(st.none(), st.binary(max_size=6), text.map(str.encode)),
              st.binary(max_size=40)),
    st.binary(max_size=9),  # too short for a header, or just long enough
    st.none())  # a credential frame
answers = st.one_of(st.none(), st.just(b""),
                    st.binary(min_size=1, max_size=30).map(lambda a: len(a).to_bytes(4, "big") + a),
                    st.binary(max_size=30))  # not one whole frame: cut by the row path's rules either way
decisions = st.lists(st.one_of(
    st.tuples(st.just("authorize"), st.integers(2, 14), st.integers(1, 7), text, st.booleans(),
              st.sampled_from(["DefaultAllow", "DefaultDeny", "SuperUser", "MatchingAcl(acl=x)"]),
              st.integers(1, 3), st.none()),
    st.tuples(st.just("by_resource_type"), st.integers(2, 14), st.integers(1, 7), st.none(), st.booleans(),
              st.none(), st.none(), st.none()),
    st.tuples(st.just("authorized_operations"), st.none(), st.integers(1, 7), text, st.none(), st.none(),
              st.none(), st.integers(0, 2**15))), max_size=3)
records = st.builds(
    lambda offset, port, software, principal, interned, frame, header, answer, outcome, response_time, asked: (
        BASE_US + offset, _session(port, software), sys.intern(principal) if interned else principal, frame,
        header if frame is None else None, answer, outcome, response_time, asked),
    st.integers(0, DAY_US - 1), st.sampled_from([5000, 5001, 5002]), st.sampled_from([None, "librdkafka", "zoë"]),
    text, st.booleans(), frames, st.one_of(st.none(), st.binary(min_size=8, max_size=8)), answers,
    st.sampled_from([ANSWERED, SILENT, CLOSED, AUTHENTICATION_FAILED]),
    st.one_of(st.integers(0, 2**31 - 1), st.integers(2**31, 2**59), st.integers(-2**40, -1)), decisions)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records, min_size=1, max_size=40))
def test_columns_and_rows_agree(batch: list[tuple]) -> None:
    block = _block(sorted(batch, key=lambda record: record[0]))
    by_columns = broker_table(block)
    by_rows = tapped_rows(block.rows(), fields=RECORD_FIELDS)
    assert by_columns is not None  # every record drawn here has the broker's usual shape
    assert by_columns.equals(by_rows), (by_columns.to_pylist(), by_rows.to_pylist())


def _usual(**changes: object) -> tuple:
    record = dict(time_us=BASE_US, session=_session(5000, "librdkafka"), principal="User:alice",
                  request=_frame(3, 12, 1, b"app"), header=None, answer=b"\x00\x00\x00\x02ok", outcome=ANSWERED,
                  response_time_us=7, decisions=[("authorize", 2, 2, "t", True, "DefaultAllow", 1, None)])
    record.update(changes)
    return tuple(record.values())


def test_a_usual_batch_is_read_by_columns() -> None:
    table = broker_table(_block([_usual(), _usual(request=_frame(0, 9, 2, None), decisions=[])]))
    assert table is not None and table.num_rows == 2
    assert table.column("api_key").to_pylist() == [3, 0]
    assert table.column("decisions").to_pylist()[1] == []


def test_what_the_columns_leave_to_the_row_path() -> None:
    # Each of these gives None: the writer takes the batch row by row, which handles it (redaction, day split...).
    off_shape = {
        "a session given as a tuple": _usual(session=("c", "h", 1, "L", "PLAINTEXT", None, None)),
        "a principal that is not UTF-8 (a lone surrogate)": _usual(principal="User:\ud800"),
        "an integer beyond 60 bits": _usual(response_time_us=2**62),
        "a config-altering request (its body is redacted)": _usual(request=_frame(44, 1, 1, b"app")),
    }
    for why, record in off_shape.items():
        block = _block([_usual(), record])
        assert broker_table(block) is None, why
        assert tapped_rows(block.rows(), fields=RECORD_FIELDS).num_rows == 2, why
    across_midnight = _block([_usual(time_us=BASE_US - 1), _usual()])
    assert broker_table(across_midnight) is None

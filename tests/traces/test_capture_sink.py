"""The capture writer: rolling by size and time, the size cap, and a writer that falls behind (it drops, counts, logs
and records the drop, while the broker keeps answering)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from structlog.testing import capture_logs

from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import MetadataRequest
from kafka_shim.shim.tap import ANSWERED, TappedRequest
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.traces.capture import CaptureConfigError, CaptureSettings, CaptureSink
from kafka_shim.traces.format import DROPPED, read_trace
from kafka_shim.traces.proxy import ProxiedRequest
from tests.support.wire import Wire

WAIT_S = 60.0


def _tapped(correlation_id: int, payload: bytes = b"", time_us: int | None = None) -> TappedRequest:
    answer = correlation_id.to_bytes(4, "big") + b"answer"
    return TappedRequest(
        time_us=time_us if time_us is not None else time.time_ns() // 1000,
        session=("127.0.0.1:9092-127.0.0.1:5000-0", "127.0.0.1", 5000, "PLAINTEXT", "PLAINTEXT", None, None),
        principal="User:ANONYMOUS", request=b"\x00\x03\x00\x0c" + correlation_id.to_bytes(4, "big") + b"\xff\xff" + payload,
        header=None, answer=len(answer).to_bytes(4, "big") + answer, outcome=ANSWERED, response_time_us=5, decisions=[])


def _files(directory: Path) -> list[Path]:
    return sorted(directory.glob("day=*/part-*.parquet"))


def _correlation_ids(path: Path) -> list[int]:
    return pq.read_table(path, columns=["correlation_id"]).column(0).to_pylist()


def test_files_roll_by_size(tmp_path: Path) -> None:
    sink = CaptureSink(CaptureSettings(tmp_path, roll_bytes=4096))
    try:
        for cid in range(6):
            sink.record(_tapped(cid, os.urandom(3000)))  # random bytes: no compression brings a row group under 4 KiB
            assert sink.sync(WAIT_S)
    finally:
        sink.close()
    files = _files(tmp_path)
    # Each row group passes 4 KiB, so each request closes its file: six files, one request each, in order.
    assert [_correlation_ids(f) for f in files] == [[cid] for cid in range(6)]
    assert read_trace(tmp_path)["correlation_id"].to_pylist() == list(range(6))


def test_records_with_enum_members_are_written_and_foreign_rows_refused(tmp_path: Path) -> None:
    # marshal takes plain values only: a record holding enum members (as a decision may) takes the slow way, and is
    # written the same.
    decision = ("authorize", AclOperation.WRITE, ResourceType.TOPIC, "orders", True, "DefaultAllow", 1, None)
    sink = CaptureSink(CaptureSettings(tmp_path))
    try:
        sink.record(tuple(_tapped(7)._replace(decisions=[decision])))
        with pytest.raises(TypeError, match="response_rewritten"):  # a proxy's row given to the broker's sink
            sink.record(ProxiedRequest(*([None] * len(ProxiedRequest._fields))))
        assert sink.sync(WAIT_S)
    finally:
        sink.close()
    (row,) = read_trace(tmp_path).to_pylist()
    assert row["correlation_id"] == 7 and row["response"] == (7).to_bytes(4, "big") + b"answer"
    assert [(d["operation"], d["resource_type"], d["resource_name"], d["rule"]) for d in row["decisions"]] == [
        ("WRITE", "TOPIC", "orders", "DefaultAllow")]


def test_small_requests_share_a_file_until_it_is_closed(tmp_path: Path) -> None:
    sink = CaptureSink(CaptureSettings(tmp_path))
    for cid in range(50):
        sink.record(_tapped(cid))
    assert sink.sync(WAIT_S)
    # Until the file is finished it is hidden from readers (Spark, pyarrow.dataset skip names starting with ".").
    assert _files(tmp_path) == []
    assert [p.name.startswith(".") and p.name.endswith(".inprogress") for p in tmp_path.glob("day=*/*")] == [True]
    sink.close()
    (only,) = _files(tmp_path)
    assert _correlation_ids(only) == list(range(50))


def test_files_roll_by_time(tmp_path: Path) -> None:
    sink = CaptureSink(CaptureSettings(tmp_path, roll_ms=1))
    try:
        sink.record(_tapped(1))
        assert sink.sync(WAIT_S)
        # The file is older than roll.ms: the writer finishes it even with nothing more to write.
        deadline = time.monotonic() + WAIT_S
        while not _files(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [_correlation_ids(f) for f in _files(tmp_path)] == [[1]]
        sink.record(_tapped(2))
    finally:
        sink.close()
    assert [_correlation_ids(f) for f in _files(tmp_path)] == [[1], [2]]


def test_the_size_cap_removes_the_oldest_files_and_logs_it(tmp_path: Path) -> None:
    sink = CaptureSink(CaptureSettings(tmp_path, roll_bytes=4096, retention_bytes=3 * 5000))
    with capture_logs() as logs:
        try:
            for cid in range(8):
                sink.record(_tapped(cid, os.urandom(3000)))
                assert sink.sync(WAIT_S)
        finally:
            sink.close()
    files = _files(tmp_path)
    kept = [cid for f in files for cid in _correlation_ids(f)]
    assert sum(f.stat().st_size for f in files) <= 3 * 5000
    assert kept == list(range(8 - len(kept), 8)) and 0 < len(kept) < 8  # the newest survive
    removed = [e for e in logs if e["event"] == "capture_file_removed"]
    assert len(removed) == 8 - len(kept)
    assert all(e["retention_bytes"] == 15000 for e in removed)


def test_a_request_after_midnight_goes_to_the_next_day(tmp_path: Path) -> None:
    before = 1_700_006_399_000_000  # 2023-11-14T23:59:59Z
    sink = CaptureSink(CaptureSettings(tmp_path))
    sink.record(_tapped(1, time_us=before))
    sink.record(_tapped(2, time_us=before + 2_000_000))
    sink.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day=2023-11-14", "day=2023-11-15"]
    table = read_trace(tmp_path)
    assert list(zip(table["correlation_id"].to_pylist(), table["day"].to_pylist(), strict=True)) == [
        (1, "2023-11-14"), (2, "2023-11-15")]


def test_a_writer_that_falls_behind_drops_counts_logs_and_records_it(tmp_path: Path) -> None:
    sink = CaptureSink(CaptureSettings(tmp_path, queue_requests=5))
    # ~100 KB requests and answers: a few fill the pipe to the writer (1 MiB), then the queue.
    topics = [MetadataRequest.MetadataRequestTopic(name=f"{i:03d}" + "t" * 240) for i in range(400)]
    sent = 40
    with capture_logs() as logs:
        with EmbeddedBroker(tap=sink) as broker:
            writer = sink._writer.process
            os.kill(writer.pid, signal.SIGSTOP)  # the writer stops reading
            try:
                host, port = broker.bootstrap_servers.rsplit(":", 1)
                with Wire((host, int(port))) as wire:
                    answers = [wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=topics, allow_auto_topic_creation=False))
                               for _ in range(sent)]
                # The broker answered every request while its writer was stuck, and dropped most of them.
                assert [(a.closed, len(a.body.topics)) for a in answers] == [(False, len(topics))] * sent
                assert sink.dropped_total >= sent - 20
            finally:
                os.kill(writer.pid, signal.SIGCONT)
    assert sink._writer.process is writer  # stuck is not dead: the same writer wrote the rest
    table = read_trace(tmp_path)
    requests = table.filter(pc.equal(table["kind"], "request"))
    dropped_rows = table.filter(pc.equal(table["kind"], DROPPED)).to_pylist()
    assert len(dropped_rows) == 1
    dropped = dropped_rows[0]
    # Every request is accounted for: written, or counted in the one ``dropped`` row.
    assert requests.num_rows + dropped["dropped_requests"] == sent == requests.num_rows + sink.dropped_total
    assert 0 < requests.num_rows
    assert dropped["time"] <= dropped["dropped_until"]
    assert dropped["api_key"] is None and dropped["source"] == "capture"
    events = [e["event"] for e in logs]
    assert events.count("capture_dropping") == 1
    (logged,) = [e for e in logs if e["event"] == "capture_dropped"]
    assert logged["dropped"] == dropped["dropped_requests"] and logged["log_level"] == "warning"


def test_bad_settings_name_the_key() -> None:
    with pytest.raises(CaptureConfigError, match=r"kafka.shim.capture.roll.bytes='big' is not a whole number"):
        CaptureSettings.from_properties({"kafka.shim.capture.dir": "/tmp/x", "kafka.shim.capture.roll.bytes": "big"})
    with pytest.raises(CaptureConfigError, match=r"kafka.shim.capture.queue.requests=0 is below its minimum 1"):
        CaptureSettings.from_properties({"kafka.shim.capture.dir": "/tmp/x", "kafka.shim.capture.queue.requests": "0"})
    assert CaptureSettings.from_properties({}) is None


def test_a_writer_process_that_dies_is_replaced_and_its_loss_counted(tmp_path: Path) -> None:
    sink = CaptureSink(CaptureSettings(tmp_path))
    with capture_logs() as logs:
        try:
            for cid in range(3):  # written to the first writer's open file, which it never finishes
                sink.record(_tapped(cid))
            assert sink.sync(WAIT_S)
            first = sink._writer.process
            first.kill()
            first.wait(WAIT_S)
            for cid in range(3, 5):
                sink.record(_tapped(cid))
            assert sink.sync(WAIT_S)
            assert sink._writer.process.pid != first.pid
        finally:
            sink.close()
    table = read_trace(tmp_path)
    assert table.filter(pc.equal(table["kind"], "request"))["correlation_id"].to_pylist() == [3, 4]
    (dropped,) = table.filter(pc.equal(table["kind"], DROPPED)).to_pylist()
    assert dropped["dropped_requests"] == 3 == sink.dropped_total
    (exited,) = [e for e in logs if e["event"] == "capture_writer_exited"]
    assert exited["log_level"] == "error" and exited["requests_lost"] == 3 and exited["restarting"] is True


def test_a_lone_surrogate_in_a_principal_is_written_as_java_writes_it(tmp_path: Path) -> None:
    # An OAUTHBEARER token's "\ud800" escape reaches the principal; Arrow refuses such a string, Java writes "?".
    sink = CaptureSink(CaptureSettings(tmp_path))
    try:
        sink.record(tuple(_tapped(1)._replace(principal="User:\ud800x")))
        sink.record(tuple(_tapped(2)))
        assert sink.sync(WAIT_S)
    finally:
        sink.close()
    assert read_trace(tmp_path)["principal"].to_pylist() == ["User:?x", "User:ANONYMOUS"]


def test_a_batch_whose_write_fails_is_recorded_as_dropped(tmp_path: Path) -> None:
    # A decision with an operation code no Kafka release has fails its batch's conversion in the writer.
    broken = ("authorize", 99, ResourceType.TOPIC.value, "t", True, "DefaultAllow", 1, None)
    sink = CaptureSink(CaptureSettings(tmp_path))
    with capture_logs() as logs:
        try:
            sink.record(tuple(_tapped(1)))
            sink.record(tuple(_tapped(2)._replace(decisions=[broken])))
            assert sink.sync(WAIT_S)  # usually one batch, lost together (unless the writer's timer split them)
            sink.record(tuple(_tapped(3)))
        finally:
            sink.close()
    table = read_trace(tmp_path)
    written = table.filter(pc.equal(table["kind"], "request"))["correlation_id"].to_pylist()
    (dropped,) = table.filter(pc.equal(table["kind"], DROPPED)).to_pylist()
    assert 2 not in written and 3 in written
    assert len(written) + dropped["dropped_requests"] == 3  # every request written or counted
    events = [e["event"] for e in logs]
    assert events.count("capture_write_failed") == 1
    assert "capture_writer_exited" not in events  # the writer did not die: nothing else was lost


def test_requests_larger_than_the_room_left_in_the_pipe_arrive_whole_and_in_order(tmp_path: Path) -> None:
    # With the writer stopped, the pipe to it (1 MiB) fills in the middle of a message; once it reads again, every
    # request arrives whole, in order, and nothing is counted as dropped.
    payloads = [os.urandom(size) for size in (300_000, 700_000, 450_000, 900_000, 64, 1_200_000, 350_000)]
    sink = CaptureSink(CaptureSettings(tmp_path))
    writer = sink._writer.process
    try:
        os.kill(writer.pid, signal.SIGSTOP)
        try:
            for cid, payload in enumerate(payloads):
                sink.record(tuple(_tapped(cid, payload)))
            assert not sink.sync(1.0)  # the writer is stopped: the sync cannot complete yet
        finally:
            os.kill(writer.pid, signal.SIGCONT)
        assert sink.sync(WAIT_S)
    finally:
        sink.close()
    assert sink._writer.process is writer and sink.dropped_total == 0
    table = read_trace(tmp_path)
    assert table["correlation_id"].to_pylist() == list(range(len(payloads)))
    assert [r[10:] for r in table["request"].to_pylist()] == payloads

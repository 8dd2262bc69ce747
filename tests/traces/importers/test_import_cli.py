"""``kafka-shim import request-log|authorizer-log`` end to end: a subprocess, then the trace read back."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_shim.traces.format import iter_requests, read_trace

DATA = Path(__file__).parent / "data"
REQUEST_LOG = DATA / "kafka-3.9-request.log"
AUTHORIZER_LOG = DATA / "kafka-3.9-authorizer.log"
TIMEOUT_S = 300  # a generous bound for a busy 2-core machine; the imports take about a second


def kafka_shim_import(*args: str | Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from kafka_shim.shim.tools.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "import", *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def _summary(trace: Path) -> dict:
    (path,) = trace.glob("_import-summary-*.json")
    return json.loads(path.read_text())


def test_request_log_with_the_authorizer_log_attached(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    done = kafka_shim_import("request-log", REQUEST_LOG, "--authorizer-log", AUTHORIZER_LOG, "--out", trace)
    assert done.returncode == 0, done.stderr
    table = read_trace(trace)
    summary = _summary(trace)
    assert table.num_rows == summary["rows_written"] > 0
    # Authorizer lines matched to no request stay rows of their own, and say where they came from.
    assert set(zip(table.column("kind").to_pylist(), table.column("source").to_pylist(), strict=True)) == {
        ("request", "request-log"), ("authorization", "authorizer-log")}
    assert set(table.column("day").to_pylist()) == {"2026-11-23"}
    for f in trace.glob("day=*/*.parquet"):
        metadata = pq.read_schema(f).metadata
        assert metadata[b"kafka_shim.trace.source"] == b"request-log"
        assert metadata[b"kafka_shim.trace.schema_version"] == b"1"
    times = table.column("time").to_pylist()
    assert times == sorted(times)
    requests = list(iter_requests(table))
    lines = REQUEST_LOG.read_text().splitlines()
    assert len(requests) == len(lines) - summary["counts_by_reason"]["forwarded"]
    produce = next(r for r in requests if r.row["api_key"] == 0)
    assert produce.request_body is None and produce.decode_error is None  # no bytes in a request log
    assert produce.row["decisions"][0]["operation"] == "WRITE"
    authorizations = table.filter(pc.equal(table["kind"], "authorization"))
    assert authorizations.num_rows == summary["authorizer_lines_ambiguous"] + summary["authorizer_lines_unmatched"]
    assert "rows from" in done.stderr and "summary in" in done.stderr


def test_authorizer_log_alone_gzip_and_rotated(tmp_path: Path) -> None:
    rotated = tmp_path / "kafka-authorizer.log.2026-11-23-20"
    shutil.copy(AUTHORIZER_LOG, rotated)
    zipped = tmp_path / "kafka-authorizer.log.2026-11-23-19.gz"
    zipped.write_bytes(gzip.compress(AUTHORIZER_LOG.read_bytes()))
    trace = tmp_path / "trace"
    done = kafka_shim_import("authorizer-log", rotated, zipped, "--out", trace, "--quiet")
    assert done.returncode == 0, done.stderr
    table = read_trace(trace)
    n = len(AUTHORIZER_LOG.read_text().splitlines())
    assert table.num_rows == 2 * n
    assert set(table.column("kind").to_pylist()) == {"authorization"}
    assert list(iter_requests(table)) == []  # a reader of kind='request' rows sees none


def test_bad_lines_are_counted_reported_and_skipped(tmp_path: Path) -> None:
    good = REQUEST_LOG.read_text().splitlines()
    produce = next(line for line in good if '"requestApiKeyName":"PRODUCE"' in line)
    unknown_version = produce.replace('"requestApiVersion":10', '"requestApiVersion":99')
    unknown_key = produce.replace('"requestApiKey":0,', '"requestApiKey":999,')
    log = tmp_path / "kafka-request.log"
    log.write_text("\n".join([
        good[0],
        "garbage \x00\x01 that is not a log line",
        "[2026-11-23 20:35:01,331] DEBUG Completed request:{not json} (kafka.request.logger)",
        unknown_version,
        unknown_key,
        "Completed request:{\"requestHeader\":{}}",
        good[2].replace('"correlationId":', '"correlationId":9999999999999').replace('"totalTimeMs":', '"totalTimeMs":1e308,"x":'),
        good[1][: len(good[1]) // 2],  # a truncated last line (the broker was writing it)
    ]))
    trace = tmp_path / "trace"
    done = kafka_shim_import("request-log", log, tmp_path / "missing.log", "--out", trace)
    assert done.returncode == 0, done.stderr
    summary = _summary(trace)
    assert summary["rows_written"] == 4  # good, unknown API key / version, out-of-range values
    assert summary["bad_lines"] == 4  # bad JSON, no timestamp, truncated, the missing file
    assert summary["counts_by_reason"]["truncated_json"] == 1
    assert summary["counts_by_reason"]["unknown_api_version"] == 2  # request and response
    assert summary["counts_by_reason"]["unknown_api_key"] == 1
    assert summary["skipped_lines"] == 1  # the garbage line mentions no request
    assert f"{log}:8: skipped: truncated JSON" in done.stderr
    assert f"{log}:4: warning: request body not read" in done.stderr
    rows = {r["api_key"]: r for r in read_trace(trace).to_pylist()}
    assert rows[999]["request_json"] is None and rows[999]["principal"] == "User:alice"
    assert rows[0]["api_version"] == 99 and rows[0]["request_json"] is None
    # Values out of the columns' range are left null, not written (they would not fit) and not a crash.
    (odd,) = [r for r in read_trace(trace).to_pylist() if r["correlation_id"] is None]
    assert odd["response_time_us"] is None and odd["api_key"] is not None


def test_nothing_readable_is_exit_code_1(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    done = kafka_shim_import("request-log", empty, "--out", tmp_path / "trace")
    assert done.returncode == 1
    assert "nothing could be imported" in done.stderr
    garbage = tmp_path / "garbage.log.gz"
    garbage.write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    done = kafka_shim_import("authorizer-log", garbage, "--out", tmp_path / "trace2")
    assert done.returncode == 1 and "cannot read the file further" in done.stderr
    assert kafka_shim_import("request-log", empty, "--out", tmp_path / "t", "--timezone", "Nowhere/Else").returncode == 2

"""``kafka-shim import pcap``: a capture into a trace directory, with the problems in the summary and the exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import MetadataRequest, MetadataResponse
from kafka_shim.traces.format import iter_requests
from kafka_shim.traces.importers.cli import main
from tests.traces.importers import pcap_craft as craft


def _capture(path: Path, version: int = 12) -> Path:
    request = craft.request(ApiKey.METADATA, 12, 1, MetadataRequest(topics=None))
    if version != 12:
        request = request[:6] + version.to_bytes(2, "big") + request[8:]
    exchange = [(True, request), (False, craft.response(ApiKey.METADATA, 12, 1, MetadataResponse(cluster_id="cli")))]
    return craft.write(path, craft.conversation(exchange))


def test_a_capture_becomes_a_trace_and_problems_are_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _capture(tmp_path / "good.pcap")
    (tmp_path / "junk.pcap").write_bytes(b"junk")
    assert main(["pcap", str(good), str(tmp_path / "junk.pcap"), "--out", str(tmp_path / "trace")]) == 0
    err = capsys.readouterr().err
    assert "junk.pcap:0: skipped: not a pcap or pcapng file" in err
    assert "kafka-shim import pcap: 1 rows from" in err and "1 packets could not be read" in err
    [request] = list(iter_requests(tmp_path / "trace"))
    assert (request.row["source"], request.response_body.cluster_id) == ("pcap", "cli")
    [summary] = (tmp_path / "trace").glob("_import-summary-*.json")
    figures = json.loads(summary.read_text())
    assert figures["pcap"]["problems"] == {"not_a_capture": 1}
    assert figures["pcap"]["read"]["kafka_connections"] == 1


def test_an_unknown_version_is_a_warning_and_its_row_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pcap", str(_capture(tmp_path / "v99.pcap", 99)), "--out", str(tmp_path / "trace")]) == 0
    assert "1 rows kept with warnings" in capsys.readouterr().err
    [request] = list(iter_requests(tmp_path / "trace"))
    assert (request.row["api_version"], request.request_body) == (99, None)


def test_nothing_importable_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "junk.pcap").write_bytes(b"junk")
    assert main(["pcap", str(tmp_path / "junk.pcap"), "--out", str(tmp_path / "trace")]) == 1
    assert "nothing could be imported" in capsys.readouterr().err

"""``kafka-shim import pcap``: a capture into a trace directory, with the problems printed and the exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import MetadataRequest, MetadataResponse
from kafka_shim.traces.format import iter_requests
from kafka_shim.traces.importers.pcap_cli import main
from tests.traces.importers import pcap_craft as craft


def _capture(path: Path) -> Path:
    exchange = [(True, craft.request(ApiKey.METADATA, 12, 1, MetadataRequest(topics=None))),
                (False, craft.response(ApiKey.METADATA, 12, 1, MetadataResponse(cluster_id="cli")))]
    return craft.write(path, craft.conversation(exchange))


def test_a_capture_becomes_a_trace_and_problems_are_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _capture(tmp_path / "good.pcap")
    (tmp_path / "junk.pcap").write_bytes(b"junk")
    assert main([str(good), str(tmp_path / "junk.pcap"), "--out", str(tmp_path / "trace")]) == 0
    err = capsys.readouterr().err
    assert "1 x not_a_capture" in err and "junk.pcap: not a pcap or pcapng file" in err
    assert "1 rows into 1 file(s)" in err
    [request] = list(iter_requests(tmp_path / "trace"))
    assert (request.row["source"], request.response_body.cluster_id) == ("pcap", "cli")


def test_nothing_importable_is_exit_1_with_what_to_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "junk.pcap").write_bytes(b"junk")
    assert main([str(tmp_path / "junk.pcap"), "--out", str(tmp_path / "trace")]) == 1
    assert "nothing could be imported" in capsys.readouterr().err


def test_the_source_interface_counts_into_the_command_tables_report(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from kafka_shim.traces.importers.pcap_cli import import_rows

    class TableReport:  # the shape of the importers' command-table report (traces/importers/logfiles.Report)
        def __init__(self) -> None:
            self.bad_lines, self.counts_by_reason, self.examples = 0, {}, []

        def bad(self, path: Path, line_no: int, reason: str, kind: str) -> None:
            self.bad_lines += 1
            self.counts_by_reason[kind] = self.counts_by_reason.get(kind, 0) + 1
            self.examples.append((str(path), reason))

    (tmp_path / "junk.pcap").write_bytes(b"junk")
    context = SimpleNamespace(report=TableReport())
    rows = list(import_rows(SimpleNamespace(files=[_capture(tmp_path / "good.pcap"), tmp_path / "junk.pcap"]), context))
    assert [r["api_key"] for r in rows] == [ApiKey.METADATA]
    assert context.report.counts_by_reason == {"not_a_capture": 1} and context.report.bad_lines == 1

"""The same real-Kafka traffic through two importers: the packet capture and Kafka's request log
(``kafka-shim import pcap`` and ``kafka-shim import request-log``) yield the same requests, with equal bodies where
the log keeps them (it keeps Produce records only as their size)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_shim.traces.format import iter_requests, read_trace, to_json_text
from kafka_shim.traces.importers.pcap import import_pcap
from tests.traces.real_kafka_corpus import Corpus

pytestmark = [pytest.mark.oracle, pytest.mark.slow]
# before the corpus fixture runs: no real Kafka is started for a test that cannot run yet
pytest.importorskip("kafka_shim.traces.importers.request_log", reason="the request-log importer is not here yet")


def _as_logged(captured: Any, logged: Any) -> Any:
    """The captured body as Kafka's request log writes it: records replaced by their size."""
    if isinstance(captured, dict) and isinstance(logged, dict):
        out = {k: _as_logged(v, logged.get(k)) for k, v in captured.items()}
        if "records_size_in_bytes" in logged and "records" in captured:
            out["records"] = None
            out["records_size_in_bytes"] = len(bytes.fromhex(captured["records"])) if captured["records"] else 0
        return out
    if isinstance(captured, list) and isinstance(logged, list):
        return [_as_logged(c, o) for c, o in zip(captured, logged, strict=False)]
    return captured


def test_the_request_log_and_the_capture_hold_the_same_requests(real_kafka_corpus: Corpus, tmp_path: Path) -> None:
    from kafka_shim.traces.importers.cli import main

    assert main(["request-log", str(real_kafka_corpus.request_log), "--out", str(tmp_path / "log"), "--quiet"]) == 0
    port = real_kafka_corpus.info["port"]
    logged = {(r["client_port"], r["correlation_id"]): r for r in read_trace(tmp_path / "log").to_pylist()
              if r["connection_id"] and r["connection_id"].split("-")[0].endswith(f":{port}")}
    assert logged
    captured = {(r.row["client_port"], r.row["correlation_id"]): r for r in iter_requests(import_pcap([real_kafka_corpus.pcap]))
                if r.row["api_key"] is not None}
    compared_bodies = 0
    for key, log_row in logged.items():
        pcap = captured[key]
        fields = ("api_key", "api_version", "client_id", "principal", "client_host", "client_software_name",
                  "client_software_version")
        assert {f: pcap.row[f] for f in fields} == {f: log_row[f] for f in fields}, key
        assert pcap.row["connection_id"].split("-")[:2] == log_row["connection_id"].split("-")[:2]
        if log_row["request_json"] is not None and pcap.request_body is not None:
            theirs = json.loads(log_row["request_json"])
            assert _as_logged(json.loads(to_json_text(pcap.request_body.to_dict())), theirs) == theirs, key
            compared_bodies += 1
    assert compared_bodies == len(logged)

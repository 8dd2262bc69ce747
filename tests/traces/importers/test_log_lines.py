"""Request-log and authorizer-log lines (real Kafka 3.9 ones from tests/traces/importers/data/) read into trace rows."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from kafka_shim.traces.importers import authorizer_log, request_log
from kafka_shim.traces.importers.attach import attach
from kafka_shim.traces.importers.logfiles import Report, parse_timestamp, read_lines, timezone

DATA = Path(__file__).parent / "data"
REQUEST_LOG = DATA / "kafka-3.9-request.log"
AUTHORIZER_LOG = DATA / "kafka-3.9-authorizer.log"
UTC = datetime.UTC


def _request_rows(path: Path = REQUEST_LOG, zone: datetime.tzinfo = UTC, **kwargs: bool) -> tuple[list[dict], Report]:
    report = Report()
    return list(request_log.rows(read_lines([path], report), report, zone, **kwargs)), report


def _authorizer_rows(path: Path = AUTHORIZER_LOG) -> tuple[list[dict], Report]:
    report = Report()
    return list(authorizer_log.rows(read_lines([path], report), report, UTC)), report


def _us(text: str) -> int:
    stamp = datetime.datetime.fromisoformat(text)
    return int(stamp.timestamp()) * 1_000_000 + stamp.microsecond


def test_a_real_produce_line_becomes_a_request_row() -> None:
    rows, report = _request_rows()
    assert report.bad_lines == 0 and report.warnings == 0
    produce = next(r for r in rows if r["api_key"] == 0)
    # [2026-11-23 20:35:01,331] ... "totalTimeMs":39.555: taken 39.555 ms before the line was written.
    assert produce["time"] == _us("2026-11-23T20:35:01.331+00:00") - 39_555
    assert produce["response_time_us"] == 39_555
    assert (produce["source"], produce["kind"], produce["outcome"]) == ("request-log", "request", "response")
    assert produce["connection_id"] == "127.0.0.1:53689-127.0.0.1:54502-2"
    assert (produce["client_host"], produce["client_port"]) == ("127.0.0.1", 54502)
    assert (produce["listener"], produce["security_protocol"], produce["principal"]) == (
        "SASL_PLAINTEXT", "SASL_PLAINTEXT", "User:alice")
    assert (produce["client_software_name"], produce["client_software_version"]) == (
        "confluent-kafka-python", "2.16.1-rdkafka-2.16.0")
    assert (produce["api_key"], produce["api_version"], produce["correlation_id"], produce["client_id"]) == (0, 10, 4, "rdkafka")
    assert produce["request"] is None and produce["response"] is None and produce["decisions"] is None
    body = json.loads(produce["request_json"])
    assert body["topic_data"][0]["partition_data"][0] == {"index": 1, "records": None, "records_size_in_bytes": 91}
    assert json.loads(produce["response_json"])["responses"][0]["partition_responses"][0]["error_code"] == 0


def test_denials_and_config_values_in_real_lines() -> None:
    rows, _ = _request_rows()
    denied_create = [r for r in rows if r["api_key"] == 19 and r["principal"] == "User:alice"]
    assert denied_create and json.loads(denied_create[0]["response_json"])["topics"][0]["error_code"] == 29
    alter = [r for r in rows if r["api_key"] == 44]
    assert alter, "the sample has an IncrementalAlterConfigs"
    for r in alter:
        configs = json.loads(r["request_json"])["resources"][0]["configs"]
        assert [c["value"] for c in configs] == ["REDACTED"]  # Kafka logged 86400000; a trace keeps no value


def test_forwarded_lines_are_skipped_unless_asked_for() -> None:
    rows, report = _request_rows()
    kept, _ = _request_rows(keep_forwarded=True)
    assert report.counts_by_reason["forwarded"] == len(kept) - len(rows) > 0
    assert all(r["listener"] != "CONTROLLER" or r["principal"] == "User:broker" for r in rows)


def test_the_broker_time_zone_applies_to_timestamps_without_one(tmp_path: Path) -> None:
    line = REQUEST_LOG.read_text().splitlines()[0]
    log = tmp_path / "kafka-request.log"
    log.write_text(line + "\n")
    utc_rows, _ = _request_rows(log)
    berlin_rows, _ = _request_rows(log, timezone("Europe/Berlin"))
    assert utc_rows[0]["time"] - berlin_rows[0]["time"] == 3_600_000_000  # CET in November is UTC+1
    assert parse_timestamp("2026-11-23T17:38:33.534Z INFO", timezone("+05:00")) == _us("2026-11-23T17:38:33.534+00:00")
    assert parse_timestamp("[2026-11-23 17:38:33,534]", timezone("+05:00")) == _us("2026-11-23T12:38:33.534+00:00")
    with pytest.raises(ValueError, match="unknown time zone"):
        timezone("Mars/Olympus")


def test_other_prefixes_read_too(tmp_path: Path) -> None:
    line = REQUEST_LOG.read_text().splitlines()[0]
    message = line[line.index("Completed request:"):]
    log = tmp_path / "shipped.log"
    # A log4j2 JSON-ish shipper prefix with an ISO time and zone, and a thread name.
    log.write_text(f"2026-11-23T20:34:17.507Z [data-plane-kafka-request-handler-1] DEBUG kafka.request.logger - {message}\n")
    rows, report = _request_rows(log)
    original, _ = _request_rows(REQUEST_LOG)
    assert report.bad_lines == 0
    assert rows[0]["time"] == original[0]["time"] and rows[0]["request_json"] == original[0]["request_json"]


def test_real_authorizer_lines_become_authorization_rows() -> None:
    rows, report = _authorizer_rows()
    assert report.bad_lines == 0 and len(rows) == report.lines
    denied = next(r for r in rows if not r["decisions"][0]["allowed"])
    assert denied["kind"] == "authorization" and denied["source"] == "authorizer-log"
    assert (denied["principal"], denied["client_host"], denied["api_key"]) == ("User:alice", "127.0.0.1", 3)
    assert denied["time"] == _us("2026-11-23T20:35:00.191+00:00")
    assert denied["decisions"] == [{"kind": "authorize", "operation": "DESCRIBE", "resource_type": "TOPIC",
                                    "resource_name": "payments", "allowed": False, "rule": "DefaultDeny",
                                    "resource_ref_count": 1, "authorized_operations": None}]
    assert json.loads(denied["request_json"]) == {"pattern_type": "LITERAL", "request": "Metadata"}
    acl = next(r for r in rows if r["decisions"][0]["rule"].startswith("MatchingAcl"))
    assert acl["decisions"][0]["rule"].endswith("permissionType=ALLOW))")
    assert {r["decisions"][0]["rule"] for r in rows} >= {"SuperUser", "DefaultDeny"}


def test_the_acl_authorizer_line_of_kafka_before_4(tmp_path: Path) -> None:
    log = tmp_path / "kafka-authorizer.log"
    log.write_text(
        "[2026-11-23 17:38:33,534] DEBUG Principal = User:alice is Allowed Operation = IdempotentWrite from host = "
        "10.0.0.7 on resource = Cluster:LITERAL:kafka-cluster for request = InitProducerId with resourceRefCount = 1 "
        "(kafka.authorizer.logger)\n"
        "[2026-11-23 17:38:34,001] INFO Principal = User:bob is Denied Operation = Describe from host = 10.0.0.8 on "
        "resource = TransactionalId:LITERAL:tx:1 (kafka.authorizer.logger)\n")
    rows, report = _authorizer_rows(log)
    assert report.bad_lines == 0
    first, second = rows
    assert first["decisions"][0] == {"kind": "authorize", "operation": "IDEMPOTENT_WRITE", "resource_type": "CLUSTER",
                                          "resource_name": "kafka-cluster", "allowed": True, "rule": None,
                                          "resource_ref_count": 1, "authorized_operations": None}
    assert first["api_key"] == 22
    assert (second["api_key"], second["decisions"][0]["resource_type"], second["decisions"][0]["resource_name"]) == (
        None, "TRANSACTIONAL_ID", "tx:1")


def test_authorizer_decisions_attach_to_their_requests() -> None:
    requests, _ = _request_rows()
    authorizations, _ = _authorizer_rows()
    matching = attach(requests, authorizations)
    assert matching.attached + matching.ambiguous + matching.unmatched == len(authorizations)
    assert matching.attached >= len(authorizations) // 2
    produce = next(r for r in requests if r["api_key"] == 0)
    assert produce["decisions"] == [{"kind": "authorize", "operation": "WRITE", "resource_type": "TOPIC",
                                     "resource_name": "payments", "allowed": True,
                                     "rule": "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=payments, "
                                             "patternType=LITERAL, principal=User:alice, host=*, operation=WRITE, "
                                             "permissionType=ALLOW))",
                                     "resource_ref_count": 1, "authorized_operations": None}]
    # Every attached decision lies in its request's span and names its principal's request.
    for r in requests:
        for d in r["decisions"] or ():
            assert d["kind"] == "authorize"


def test_a_decision_two_requests_could_have_asked_is_attached_to_neither() -> None:
    base = {"kind": "request", "principal": "User:alice", "client_host": "10.0.0.7", "api_key": 3, "decisions": None}
    first = {**base, "time": 1_000_000, "response_time_us": 50_000}
    second = {**base, "time": 1_020_000, "response_time_us": 50_000}
    alone = {**base, "time": 2_000_000, "response_time_us": 5_000}
    decision = {"kind": "authorize", "operation": "DESCRIBE", "resource_type": "TOPIC", "resource_name": "t",
                "allowed": False, "rule": "DefaultDeny", "resource_ref_count": 1, "authorized_operations": None}

    def line(t: int) -> dict:
        return {"kind": "authorization", "time": t, "principal": "User:alice", "client_host": "10.0.0.7", "api_key": 3,
                "decisions": [decision]}

    matching = attach([first, second, alone], [line(1_030_000), line(2_003_000), line(9_000_000)])
    assert (matching.attached, matching.ambiguous, matching.unmatched) == (1, 1, 1)
    assert first["decisions"] is None and second["decisions"] is None
    assert alone["decisions"] == [decision]
    assert [a["time"] for a in matching.leftover] == [1_030_000, 9_000_000]


def test_an_unreadable_line_is_a_structured_log_event(tmp_path: Path) -> None:
    from structlog.testing import capture_logs

    log = tmp_path / "kafka-request.log"
    log.write_text("[2026-11-23 20:35:01,331] DEBUG Completed request:{oops} (kafka.request.logger)\n")
    with capture_logs() as events:
        rows, report = _request_rows(log)
    assert rows == [] and report.bad_lines == 1
    (event,) = [e for e in events if e["event"] == "import_line_unreadable"]
    assert (event["file"], event["line"], event["kind"], event["log_level"]) == (str(log), 1, "bad_json", "warning")


def test_progress_is_plain_lines_off_a_terminal() -> None:
    import io

    from kafka_shim.traces.importers.logfiles import Progress

    stream = io.StringIO()
    progress = Progress(2_000_000, stream)
    progress._interval = 0.0  # every advance shows; the real interval is 10 s off a terminal
    progress.advance(1_000_000, "kafka-request.log")
    progress.finish()
    assert stream.getvalue() == "kafka-shim import:  50.0% of 2.0 MB (kafka-request.log)\n"


def test_of_two_candidate_requests_the_one_naming_the_resource_takes_the_decision() -> None:
    base = {"kind": "request", "principal": "User:alice", "client_host": "10.0.0.7", "api_key": 3, "decisions": None,
            "response_time_us": 50_000}
    orders = {**base, "time": 1_000_000, "request_json": json.dumps({"topics": [{"name": "orders"}]})}
    payments = {**base, "time": 1_010_000, "request_json": json.dumps({"topics": [{"name": "payments"}]})}
    decision = {"kind": "authorize", "operation": "DESCRIBE", "resource_type": "TOPIC", "resource_name": "payments",
                "allowed": True, "rule": "SuperUser", "resource_ref_count": 1, "authorized_operations": None}
    line = {"kind": "authorization", "time": 1_020_000, "principal": "User:alice", "client_host": "10.0.0.7",
            "api_key": 3, "decisions": [decision]}
    matching = attach([orders, payments], [line])
    assert (matching.attached, matching.ambiguous) == (1, 0)
    assert payments["decisions"] == [decision] and orders["decisions"] is None


def _fuzz_lines() -> object:
    from hypothesis import strategies as st

    real = REQUEST_LOG.read_text().splitlines()[:8] + AUTHORIZER_LOG.read_text().splitlines()[:8]
    cut = st.tuples(st.sampled_from(real), st.integers(0, 4000), st.text(max_size=30)).map(
        lambda t: t[0][: t[1]] + t[2])
    spliced = st.tuples(st.sampled_from(real), st.integers(0, 4000), st.text(max_size=30)).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1]:])
    marker = st.text(max_size=80).map(lambda s: "[2026-11-23 17:38:33,534] DEBUG Completed request:" + s)
    principal = st.text(max_size=80).map(lambda s: "[2026-11-23 17:38:33,534] INFO Principal = " + s)
    return st.lists(st.one_of(cut, spliced, marker, principal, st.text(max_size=60)), max_size=8)


def test_no_line_crashes_either_parser(tmp_path_factory: pytest.TempPathFactory) -> None:
    from hypothesis import HealthCheck, given, settings

    directory = tmp_path_factory.mktemp("fuzz")

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(lines=_fuzz_lines())
    def check(lines: list[str]) -> None:
        log = directory / "fuzz.log"
        log.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
        for parse in (_request_rows, _authorizer_rows):
            rows, report = parse(log)
            assert report.rows == len(rows)
            assert report.rows + report.bad_lines + report.skipped_lines <= report.lines

    check()


def test_a_decision_logged_before_its_requests_computed_start_goes_to_the_request_that_asks_it() -> None:
    # Real Kafka 3.9 lines (one librdkafka connection): Metadata v12 (correlation 5, topic orders) was logged at ,937
    # and v10 (correlation 6, includeClusterAuthorizedOperations) at ,939 after 0.831 ms; the v10 request's DESCRIBE
    # on the cluster was logged at ,937, before its computed start. Only the v10 request asks about the cluster.
    requests, _ = _request_rows(DATA / "kafka-3.9-pipelined-request.log")
    authorizations, _ = _authorizer_rows(DATA / "kafka-3.9-pipelined-authorizer.log")
    matching = attach(requests, authorizations)
    assert (matching.attached, matching.ambiguous, matching.unmatched) == (2, 0, 0)
    by_correlation = {r["correlation_id"]: r for r in requests if r["client_id"] == "corpus-alice"}
    cluster = authorizations[1]["decisions"][0]
    assert cluster["resource_type"] == "CLUSTER" and authorizations[1]["time"] < by_correlation[6]["time"]
    assert by_correlation[6]["decisions"] == [cluster]
    assert [d["resource_name"] for d in by_correlation[5]["decisions"]] == ["orders"]

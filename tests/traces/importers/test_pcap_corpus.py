"""The pcap importer on a capture of real clients talking to Apache Kafka 3.9 (tests/traces/real_kafka_corpus.py),
checked against what Kafka itself logged of the same traffic: its request log and its authorizer log."""

from __future__ import annotations

import json
import re
import struct
from collections import Counter
from typing import Any

import pytest

from kafka_shim.authorizer.api_checks import requirements
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import api_name
from kafka_shim.traces.format import TracedRequest, iter_requests
from kafka_shim.traces.importers.pcap import import_pcap
from kafka_shim.traces.importers.report import ImportReport
from tests.traces.real_kafka_corpus import Corpus

pytestmark = [pytest.mark.oracle, pytest.mark.slow]

# Handled by Kafka's SaslServerAuthenticator before the connection is authenticated: never in the request log.
AUTHENTICATION_APIS = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}


@pytest.fixture(scope="module")
def imported(real_kafka_corpus: Corpus) -> tuple[list[TracedRequest], ImportReport]:
    report = ImportReport("pcap")
    return list(iter_requests(import_pcap([real_kafka_corpus.pcap], report, check_bodies=True))), report


def _request_log(corpus: Corpus) -> list[dict[str, Any]]:
    """The corpus request log's client requests (the SASL listener's; the broker's own traffic left out)."""
    entries = []
    for line in corpus.request_log.read_text().splitlines():
        if "Completed request:" not in line:
            continue
        entry = json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
        local, remote = entry["connection"].split("-")[:2]
        if int(local.rsplit(":", 1)[1]) == corpus.info["port"]:
            entry["_broker"], entry["_client"] = local, remote
            entries.append(entry)
    return entries


def test_the_capture_imports_without_problems_and_every_body_decodes(imported: tuple[list[TracedRequest], ImportReport]) -> None:
    requests, report = imported
    assert report.ok, report.summary()
    assert requests and all(r.decode_error is None for r in requests)
    assert all(r.request_body is not None for r in requests if r.row["request"] is not None)


def test_every_response_is_paired_with_its_request(imported: tuple[list[TracedRequest], ImportReport]) -> None:
    requests, _ = imported
    for r in requests:
        if r.row["outcome"] == "no_response":
            assert r.row["api_key"] == ApiKey.PRODUCE and r.request_body.acks == 0
            continue
        assert r.row["outcome"] == "response", r.row
        assert struct.unpack_from(">i", r.row["response"])[0] == r.row["correlation_id"]
        assert r.response_body is not None
    assert sum(r.row["outcome"] == "no_response" for r in requests) >= 1  # kafka-python's acks=0 producer


def test_every_request_kafka_logged_is_in_the_capture_with_the_same_header_and_principal(
        real_kafka_corpus: Corpus, imported: tuple[list[TracedRequest], ImportReport]) -> None:
    requests, _ = imported
    logged = _request_log(real_kafka_corpus)
    assert logged
    captured = {(r.row["connection_id"].split("-")[1], r.row["correlation_id"]): r for r in requests if r.row["api_key"] is not None}
    for entry in logged:
        header = entry["requestHeader"]
        r = captured.pop((entry["_client"], header["correlationId"]))
        assert (r.row["api_key"], r.row["api_version"], r.row["client_id"], r.row["principal"]) == (
            header["requestApiKey"], header["requestApiVersion"], header["clientId"], entry["principal"])
        assert r.row["connection_id"].split("-")[0] == entry["_broker"]
        software = entry.get("clientInformation", {})
        assert (r.row["client_software_name"], r.row["client_software_version"]) == (
            software.get("softwareName"), software.get("softwareVersion"))
    # what the capture has beyond the log is the authentication Kafka does before its request handling
    assert {(r.row["api_key"], r.row["principal"]) for r in captured.values()} <= {
        (k, "User:ANONYMOUS") for k in AUTHENTICATION_APIS}


def test_the_workload_is_all_there(real_kafka_corpus: Corpus, imported: tuple[list[TracedRequest], ImportReport]) -> None:
    requests, _ = imported
    principals = Counter(r.row["principal"] for r in requests)
    assert set(principals) == {"User:ANONYMOUS", "User:admin", "User:alice", "User:bob"}
    software = {r.row["client_software_name"] for r in requests}
    assert software == {"confluent-kafka-python", "kafka-python"}
    produced = sum(bool(p.records) for r in requests if r.row["api_key"] == ApiKey.PRODUCE
                   for t in r.request_body.topic_data for p in t.partition_data)
    assert produced >= 3
    logins = Counter(r.request_body.mechanism for r in requests if r.row["api_key"] == ApiKey.SASL_HANDSHAKE)
    assert set(logins) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    metadata_ops = [r for r in requests if r.row["api_key"] == ApiKey.METADATA and r.request_body.include_topic_authorized_operations]
    assert metadata_ops and all(t.topic_authorized_operations != -2147483648 for r in metadata_ops for t in r.response_body.topics)


_AUTHZ = re.compile(r"Principal = (?P<principal>\S+) is (?P<decision>Allowed|Denied) operation = (?P<operation>\w+) "
                    r"from host = (?P<host>\S+) on resource = (?P<type>\w+):(?P<pattern>\w+):(?P<name>.*) for request = "
                    r"(?P<api>\w+) with resourceRefCount = (?P<refs>\d+) based on rule")
_TYPES = {"Topic": "TOPIC", "Group": "GROUP", "Cluster": "CLUSTER", "TransactionalId": "TRANSACTIONAL_ID",
          "DelegationToken": "DELEGATION_TOKEN", "User": "USER"}


def test_every_decision_kafka_logged_is_one_the_captured_requests_needed(
        real_kafka_corpus: Corpus, imported: tuple[list[TracedRequest], ImportReport]) -> None:
    requests, _ = imported
    needed: Counter[tuple[str, str, str, str, str]] = Counter()
    for r in requests:
        if r.row["api_key"] is None or r.request_body is None or r.row["principal"] == "User:ANONYMOUS":
            continue
        try:
            asked = requirements(r.row["api_key"], r.row["api_version"], r.request_body)
        except KeyError:
            continue  # an API without ACL checks
        for q in {(q.operation.name, q.resource_type.name, q.name) for q in asked}:
            needed[(r.row["principal"], api_name(r.row["api_key"]), *q)] += 1
    decisions = [m.groupdict() for m in map(_AUTHZ.search, real_kafka_corpus.authorizer_log.read_text().splitlines()) if m]
    client_decisions = [d for d in decisions if d["principal"] != "User:broker"]
    assert {d["decision"] for d in client_decisions} == {"Allowed", "Denied"}
    logged = Counter((d["principal"], d["api"], d["operation"], _TYPES[d["type"]], d["name"]) for d in client_decisions)
    for key, times in logged.items():
        principal, api, operation, resource_type, _name = key
        # the request needed this very check, as many times as Kafka logged it at least
        matching = needed[key] + needed[(principal, api, operation, resource_type, None)]
        assert matching >= times, f"Kafka logged {key} {times}x, the captured requests needed it {matching}x"


def test_tcpdump_on_any_interface_yields_the_same_rows_or_reports_what_it_lost(
        real_kafka_corpus: Corpus, imported: tuple[list[TracedRequest], ImportReport]) -> None:
    """``tcpdump -i any`` writes Linux cooked capture (SLL2); on a busy machine it may also miss packets. Whatever it
    holds imports to the rows of the loopback capture, and what it lost is reported, never answered wrongly."""
    import dpkt

    with open(real_kafka_corpus.pcap_any, "rb") as f:
        assert dpkt.pcap.Reader(f).datalink() in (113, 276)  # LINUX_SLL, LINUX_SLL2
    report = ImportReport("pcap")
    from_any = import_pcap([real_kafka_corpus.pcap_any], report).to_pylist()
    assert set(report.problems) <= {"request_stream_unreadable", "response_stream_unreadable", "unanswered_requests",
                                    "unpaired_response", "non_kafka_stream", "stream_start_lost"}, report.summary()
    columns = ("api_key", "api_version", "correlation_id", "request", "response", "outcome")
    by_key = {(r.row["client_port"], r.row["correlation_id"], r.row["api_key"]): r.row for r in imported[0]}
    for row in from_any:
        same = by_key[(row["client_port"], row["correlation_id"], row["api_key"])]
        assert [row[c] for c in columns] == [same[c] for c in columns]
        assert row["connection_id"].split("-")[:2] == same["connection_id"].split("-")[:2]
        # a connection cut before its SaslHandshake was seen cannot be known to be SASL: no principal then
        assert row["principal"] in (same["principal"], None)
    assert len(from_any) >= len(imported[0]) // 2
    if real_kafka_corpus.info.get("tcpdump_dropped", {}).get("any") == 0:
        assert report.ok, report.summary()  # nothing lost: every row is there
        assert len(from_any) == len(imported[0])
    else:
        assert len(from_any) == len(imported[0]) or not report.ok


def test_the_acls_created_on_the_wire_are_the_corpus_acl_set(real_kafka_corpus: Corpus,
                                                             imported: tuple[list[TracedRequest], ImportReport]) -> None:
    from kafka_shim.shim.tools.acl_file import load_acl_file

    created = {(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation, c.permission_type)
               for r in imported[0] if r.row["api_key"] == ApiKey.CREATE_ACLS and r.row["principal"] == "User:admin"
               for c in r.request_body.creations}
    declared = {(int(b.pattern.resource_type), b.pattern.name, int(b.pattern.pattern_type), b.entry.principal, b.entry.host,
                 int(b.entry.operation), int(b.entry.permission_type)) for b in load_acl_file(real_kafka_corpus.acls)}
    assert created == declared
    answers = [r.response_body for r in imported[0] if r.row["api_key"] == ApiKey.CREATE_ACLS]
    assert all(result.error_code == 0 for a in answers for result in a.results)

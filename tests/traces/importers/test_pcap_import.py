"""The pcap importer on crafted captures: Kafka frames in TCP segments that arrive out of order, twice, cut, over
IPv6 and Linux cooked capture, and streams that are not Kafka at all."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka_shim.traces.format import iter_requests, read_trace
from kafka_shim.traces.importers.cli import main as import_main
from kafka_shim.traces.importers.pcap import import_pcap
from kafka_shim.traces.importers.report import ImportReport
from tests.traces.importers import pcap_craft as craft

CLIENT, BROKER = ("10.1.2.3", 51000), ("10.1.2.4", 29092)


def _metadata_exchange(correlation_ids: range = range(1, 4)) -> list[tuple[bool, bytes]]:
    exchange = [(True, craft.request(ApiKey.API_VERSIONS, 3, 0, ApiVersionsRequest(
        client_software_name="craft-client", client_software_version="9.9"))),
        (False, craft.response(ApiKey.API_VERSIONS, 3, 0, ApiVersionsResponse()))]
    for cid in correlation_ids:
        exchange.append((True, craft.request(ApiKey.METADATA, 12, cid, MetadataRequest(topics=None))))
        exchange.append((False, craft.response(ApiKey.METADATA, 12, cid, MetadataResponse(cluster_id=f"c{cid}"))))
    return exchange


def _import(path: Path) -> tuple[list, ImportReport]:
    report = ImportReport("pcap")
    table = import_pcap([path], report)
    return list(iter_requests(table)), report


def _summary(requests: list) -> list[tuple]:
    return [(r.row["api_key"], r.row["api_version"], r.row["correlation_id"], r.row["outcome"]) for r in requests]


EXPECTED = [(18, 3, 0, "response"), (3, 12, 1, "response"), (3, 12, 2, "response"), (3, 12, 3, "response")]


@pytest.mark.parametrize("link", ["ethernet", "sll", "sll2", "null", "raw"])
@pytest.mark.parametrize("pcapng", [False, True], ids=["pcap", "pcapng"])
def test_every_link_type_and_file_format_reads_the_same_requests(tmp_path: Path, link: str, pcapng: bool) -> None:
    path = craft.write(tmp_path / "c.pcap", craft.conversation(_metadata_exchange(), mss=40), client=CLIENT,
                       broker=BROKER, link=link, pcapng=pcapng)
    requests, report = _import(path)
    assert report.ok, report.summary()
    assert _summary(requests) == EXPECTED
    assert all(r.decode_error is None for r in requests)
    assert [r.response_body.cluster_id for r in requests[1:]] == ["c1", "c2", "c3"]
    row = requests[1].row
    assert row["connection_id"] == "10.1.2.4:29092-10.1.2.3:51000-0"
    assert (row["client_host"], row["client_port"], row["source"]) == ("10.1.2.3", 51000, "pcap")
    assert (row["client_software_name"], row["client_software_version"], row["client_id"]) == ("craft-client", "9.9", "craft")
    assert row["principal"] is None and row["listener"] is None and row["decisions"] is None


def test_ipv6_addresses_are_written_as_java_writes_them(tmp_path: Path) -> None:
    path = craft.write(tmp_path / "v6.pcap", craft.conversation(_metadata_exchange()), client=("::1", 40000),
                       broker=("::1", 9093), link="sll2")
    requests, report = _import(path)
    assert report.ok, report.summary()
    assert _summary(requests) == EXPECTED
    assert requests[0].row["connection_id"] == "0:0:0:0:0:0:0:1:9093-0:0:0:0:0:0:0:1:40000-0"
    assert requests[0].row["client_host"] == "0:0:0:0:0:0:0:1"


def test_out_of_order_retransmitted_and_overlapping_segments_reassemble_in_sequence_order(tmp_path: Path) -> None:
    packets = craft.conversation(_metadata_exchange(), mss=7)
    data = [i for i, p in enumerate(packets) if p.payload]
    shuffled = list(packets)
    # swap neighbours throughout (out of order), send every fifth data segment twice (retransmission) and add a
    # segment overlapping two others
    for i in range(0, len(data) - 1, 2):
        a, b = data[i], data[i + 1]
        shuffled[a], shuffled[b] = shuffled[b], shuffled[a]
    for i in data[::5]:
        shuffled.append(packets[i])
    first, second = packets[data[0]], packets[data[1]]
    overlap = replace(first, seq=first.seq + 3, payload=(first.payload + second.payload)[3:11])
    shuffled.insert(data[3], overlap)
    requests, report = _import(craft.write(tmp_path / "messy.pcap", craft.retimed(shuffled), client=CLIENT, broker=BROKER))
    assert report.ok, report.summary()
    assert _summary(requests) == EXPECTED
    assert all(r.decode_error is None for r in requests)


def test_times_come_from_the_packets(tmp_path: Path) -> None:
    packets = craft.conversation(_metadata_exchange(range(1, 2)), mss=10_000)
    requests, _ = _import(craft.write(tmp_path / "t.pcap", packets, client=CLIENT, broker=BROKER))
    metadata_request = next(p for p in packets if p.from_client and p.payload[6:8] == b"\x00\x0c" and p.payload[4:6] == b"\x00\x03")
    answer = packets[packets.index(metadata_request) + 1]
    row = requests[1].row
    assert int(row["time"].timestamp() * 1_000_000) == round(metadata_request.time * 1_000_000)
    assert row["response_time_us"] == round(answer.time * 1_000_000) - round(metadata_request.time * 1_000_000)


def test_a_missing_segment_stops_the_connection_there_and_is_reported(tmp_path: Path) -> None:
    packets = craft.conversation(_metadata_exchange(), mss=30)
    client_data = [i for i, p in enumerate(packets) if p.from_client and p.payload]
    lost = client_data[len(client_data) // 2]
    del packets[lost]
    requests, report = _import(craft.write(tmp_path / "gap.pcap", packets, client=CLIENT, broker=BROKER))
    assert report.problems["request_stream_unreadable"] == 1
    assert "misses bytes" in report.examples["request_stream_unreadable"][0]
    # the requests before the gap are there, each with its own answer; nothing after it is guessed
    assert _summary(requests) == EXPECTED[:len(requests)]
    assert 0 < len(requests) < len(EXPECTED)


def test_a_lost_response_segment_never_pairs_a_wrong_answer(tmp_path: Path) -> None:
    packets = craft.conversation(_metadata_exchange(), mss=30)
    broker_data = [i for i, p in enumerate(packets) if not p.from_client and p.payload]
    del packets[broker_data[len(broker_data) // 2]]
    requests, report = _import(craft.write(tmp_path / "gap2.pcap", packets, client=CLIENT, broker=BROKER))
    assert report.problems["response_stream_unreadable"] == 1
    for r in requests:
        assert r.decode_error is None
        assert struct.unpack_from(">i", r.row["response"])[0] == r.row["correlation_id"]
    assert len(requests) < len(EXPECTED)


def test_a_file_cut_mid_packet_keeps_what_was_whole_and_reports_the_rest(tmp_path: Path) -> None:
    path = craft.write(tmp_path / "cut.pcap", craft.conversation(_metadata_exchange(), mss=30, close=False),
                       client=CLIENT, broker=BROKER)
    whole = path.read_bytes()
    for cut in (len(whole) - 20, len(whole) - 60, len(whole) - 7):
        path.write_bytes(whole[:cut])
        requests, report = _import(path)
        assert not report.ok
        assert set(report.problems) <= {"truncated_packet", "truncated_file", "response_stream_unreadable",
                                        "unanswered_requests"}, report.summary()
        assert _summary(requests) == EXPECTED[:len(requests)]
        assert len(requests) >= 3


def test_not_kafka_and_tls_streams_are_reported_not_misread(tmp_path: Path) -> None:
    http = craft.conversation([(True, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), (False, b"HTTP/1.1 200 OK\r\n\r\n")])
    tls = craft.conversation([(True, bytes.fromhex("160301003a") + b"\x01" * 58), (False, bytes.fromhex("1603030040") + b"\x02" * 64)])
    report = ImportReport("pcap")
    table = import_pcap([craft.write(tmp_path / "http.pcap", http, client=CLIENT, broker=("10.1.2.4", 80)),
                         craft.write(tmp_path / "tls.pcap", tls, client=CLIENT, broker=("10.1.2.4", 9094)),
                         tmp_path / "missing.pcap"], report)
    assert table.num_rows == 0
    assert report.problems == {"non_kafka_stream": 1, "tls_stream": 1, "unreadable_file": 1}


def test_not_a_capture_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "x.pcap").write_bytes(b"this is not a capture file at all")
    (tmp_path / "empty.pcap").write_bytes(b"")
    report = ImportReport("pcap")
    assert import_pcap([tmp_path / "x.pcap", tmp_path / "empty.pcap"], report).num_rows == 0
    assert report.problems == {"not_a_capture": 2}


def test_an_unknown_api_version_is_kept_with_its_bytes_and_reported(tmp_path: Path) -> None:
    request = craft.request(ApiKey.METADATA, 12, 7, MetadataRequest(topics=None))
    request = request[:6] + struct.pack(">h", 99) + request[8:]  # Metadata v99
    answer = craft.response(ApiKey.METADATA, 0, 7, MetadataResponse())
    exchange = [*_metadata_exchange(range(1, 2)), (True, request), (False, answer)]
    requests, report = _import(craft.write(tmp_path / "v99.pcap", craft.conversation(exchange), client=CLIENT, broker=BROKER))
    assert report.problems == {"unknown_api_version": 1}
    assert _summary(requests)[-1] == (3, 99, 7, "response")
    assert requests[-1].row["request"] == request[4:]


def test_produce_with_acks_0_has_no_response_and_the_next_answer_pairs_by_correlation_id(tmp_path: Path) -> None:
    fire = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[])
    exchange = [
        (True, craft.request(ApiKey.PRODUCE, 9, 1, fire)),
        (True, craft.request(ApiKey.PRODUCE, 9, 2, replace_acks(fire, 1))),
        (False, craft.response(ApiKey.PRODUCE, 9, 2, ProduceResponse())),
    ]
    requests, report = _import(craft.write(tmp_path / "acks0.pcap", craft.conversation(exchange), client=CLIENT, broker=BROKER))
    assert report.ok, report.summary()
    assert _summary(requests) == [(0, 9, 1, "no_response"), (0, 9, 2, "response")]
    assert requests[0].row["response"] is None


def replace_acks(body: ProduceRequest, acks: int) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=body.timeout_ms, topic_data=body.topic_data)


def test_requests_waiting_when_the_connection_closes_are_closed(tmp_path: Path) -> None:
    exchange = [*_metadata_exchange(range(1, 2)), (True, craft.request(ApiKey.METADATA, 12, 2, MetadataRequest(topics=None)))]
    requests, report = _import(craft.write(tmp_path / "closed.pcap", craft.conversation(exchange), client=CLIENT, broker=BROKER))
    assert report.ok, report.summary()
    assert _summary(requests)[-1] == (3, 12, 2, "closed")


def _sasl_v1_plain(user: str, password: str, ok: bool = True) -> list[tuple[bool, bytes]]:
    token = b"\0" + user.encode() + b"\0" + password.encode()
    return [
        (True, craft.request(ApiKey.SASL_HANDSHAKE, 1, 1, SaslHandshakeRequest(mechanism="PLAIN"))),
        (False, craft.response(ApiKey.SASL_HANDSHAKE, 1, 1, SaslHandshakeResponse(mechanisms=["PLAIN"]))),
        (True, craft.request(ApiKey.SASL_AUTHENTICATE, 2, 2, SaslAuthenticateRequest(auth_bytes=token))),
        (False, craft.response(ApiKey.SASL_AUTHENTICATE, 2, 2, SaslAuthenticateResponse(
            error_code=0 if ok else 58, auth_bytes=b""))),
    ]


def test_sasl_plain_names_the_principal_and_never_records_the_password(tmp_path: Path) -> None:
    exchange = [*_metadata_exchange(range(0)), *_sasl_v1_plain("alice", "alice-secret"),
                (True, craft.request(ApiKey.METADATA, 12, 3, MetadataRequest(topics=None))),
                (False, craft.response(ApiKey.METADATA, 12, 3, MetadataResponse()))]
    path = craft.write(tmp_path / "sasl.pcap", craft.conversation(exchange), client=CLIENT, broker=BROKER)
    requests, report = _import(path)
    assert report.ok, report.summary()
    assert [(r.row["api_key"], r.row["principal"], r.row["security_protocol"]) for r in requests] == [
        (18, "User:ANONYMOUS", "SASL_PLAINTEXT"), (17, "User:ANONYMOUS", "SASL_PLAINTEXT"),
        (36, "User:ANONYMOUS", "SASL_PLAINTEXT"), (3, "User:alice", "SASL_PLAINTEXT")]
    assert requests[2].row["request"] is None and requests[2].row["correlation_id"] == 2
    assert b"alice-secret" in path.read_bytes()  # it was on the wire ...
    assert import_main(["pcap", str(path), "--out", str(tmp_path / "trace"), "--quiet"]) == 0
    assert not any(b"alice-secret" in f.read_bytes() for f in (tmp_path / "trace").rglob("*.parquet"))  # ... not in the trace


def test_a_failed_authentication_leaves_the_principal_anonymous(tmp_path: Path) -> None:
    exchange = _sasl_v1_plain("alice", "wrong", ok=False)
    requests, _ = _import(craft.write(tmp_path / "fail.pcap", craft.conversation(exchange), client=CLIENT, broker=BROKER))
    assert [(r.row["principal"], r.row["outcome"]) for r in requests] == [
        ("User:ANONYMOUS", "response"), ("User:ANONYMOUS", "authentication_failed")]


def test_sasl_v0_bare_tokens_are_rows_without_header_or_bytes(tmp_path: Path) -> None:
    token = b"\0bob\0bob-secret"
    exchange = [
        (True, craft.request(ApiKey.SASL_HANDSHAKE, 0, 1, SaslHandshakeRequest(mechanism="PLAIN"))),
        (False, craft.response(ApiKey.SASL_HANDSHAKE, 0, 1, SaslHandshakeResponse(mechanisms=["PLAIN"]))),
        (True, struct.pack(">i", len(token)) + token),
        (False, struct.pack(">i", 0)),
        (True, craft.request(ApiKey.METADATA, 4, 2, MetadataRequest(topics=None))),
        (False, craft.response(ApiKey.METADATA, 4, 2, MetadataResponse())),
    ]
    path = craft.write(tmp_path / "v0.pcap", craft.conversation(exchange), client=CLIENT, broker=BROKER)
    requests, report = _import(path)
    assert report.ok, report.summary()
    assert [(r.row["api_key"], r.row["correlation_id"], r.row["principal"], r.row["request"]) for r in requests] == [
        (17, 1, "User:ANONYMOUS", requests[0].row["request"]), (None, None, "User:ANONYMOUS", None),
        (3, 2, "User:bob", requests[2].row["request"])]
    assert requests[1].row["response"] == b""


def test_alter_configs_values_are_redacted(tmp_path: Path) -> None:
    body = AlterConfigsRequest(resources=[AlterConfigsRequest.AlterConfigsResource(
        resource_type=2, resource_name="t", configs=[AlterConfigsRequest.AlterableConfig(name="k", value="hunter2")])])
    exchange = [(True, craft.request(ApiKey.ALTER_CONFIGS, 2, 5, body)),
                (False, craft.response(ApiKey.ALTER_CONFIGS, 2, 5, AlterConfigsResponse()))]
    requests, _ = _import(craft.write(tmp_path / "ac.pcap", craft.conversation(exchange), client=CLIENT, broker=BROKER))
    row = requests[0].row
    assert row["request"] is None and "hunter2" not in row["request_json"] and '"REDACTED"' in row["request_json"]


def test_kafka_is_found_on_any_port_and_connections_are_numbered_per_broker(tmp_path: Path) -> None:
    first = craft.conversation(_metadata_exchange(range(1, 2)))
    second = craft.conversation(_metadata_exchange(range(1, 2)), start=1_700_000_001.0)
    paths = [craft.write(tmp_path / "a.pcap", first, client=("10.0.0.9", 40001), broker=("10.0.0.1", 443)),
             craft.write(tmp_path / "b.pcap", second, client=("10.0.0.9", 40002), broker=("10.0.0.1", 443))]
    report = ImportReport("pcap")
    rows = import_pcap(paths, report).to_pylist()
    assert report.ok, report.summary()
    assert sorted({r["connection_id"] for r in rows}) == ["10.0.0.1:443-10.0.0.9:40001-0", "10.0.0.1:443-10.0.0.9:40002-1"]


def test_a_capture_that_starts_mid_connection_finds_the_client_by_its_requests(tmp_path: Path) -> None:
    packets = craft.conversation(_metadata_exchange(), handshake=False, close=False)
    requests, report = _import(craft.write(tmp_path / "mid.pcap", packets, client=CLIENT, broker=BROKER))
    assert report.ok, report.summary()
    assert _summary(requests) == EXPECTED


def test_written_trace_reads_back(tmp_path: Path) -> None:
    path = craft.write(tmp_path / "c.pcap", craft.conversation(_metadata_exchange()), client=CLIENT, broker=BROKER)
    assert import_main(["pcap", str(path), "--out", str(tmp_path / "trace"), "--quiet"]) == 0
    assert [f.parent.name for f in (tmp_path / "trace").rglob("*.parquet")] == ["day=2023-11-14"]
    assert _summary(list(iter_requests(read_trace(tmp_path / "trace")))) == EXPECTED


def test_check_bodies_reports_bodies_that_do_not_decode_and_keeps_their_rows(tmp_path: Path) -> None:
    broken = craft.request(ApiKey.METADATA, 12, 1, MetadataRequest(topics=None))
    broken = broken[:-2] + b"\xff\xff"  # the end of the body: not a valid tagged-field section
    broken = struct.pack(">i", len(broken) - 4) + broken[4:]
    answer = craft.response(ApiKey.METADATA, 12, 1, MetadataResponse())[:-3]
    answer = struct.pack(">i", len(answer) - 4) + answer[4:]
    path = craft.write(tmp_path / "bad.pcap", craft.conversation([(True, broken), (False, answer)]), client=CLIENT, broker=BROKER)
    quick = ImportReport("pcap")
    import_pcap([path], quick)
    assert quick.ok  # without the check bodies are left to the readers
    checked = ImportReport("pcap")
    [row] = import_pcap([path], checked, check_bodies=True).to_pylist()
    assert checked.problems == {"undecodable_request_body": 1, "undecodable_response_body": 1}
    assert (row["request"], row["response"], row["outcome"]) == (broken[4:], answer[4:], "response")


@pytest.mark.parametrize("lost_from_client", [False, True], ids=["last-response", "last-request"])
def test_a_lost_last_segment_is_seen_from_the_fin_and_acks_not_taken_for_a_close(tmp_path: Path, lost_from_client: bool) -> None:
    packets = craft.conversation(_metadata_exchange(), mss=10_000)
    last = max(i for i, p in enumerate(packets) if p.payload and p.from_client == lost_from_client)
    del packets[last]
    requests, report = _import(craft.write(tmp_path / "lostlast.pcap", packets, client=CLIENT, broker=BROKER))
    assert not report.ok
    assert "closed" not in [r.row["outcome"] for r in requests]  # the broker did answer: that answer is lost
    assert _summary(requests) == EXPECTED[:-1]


def test_damaged_captures_never_crash_the_import_nor_pair_a_wrong_answer(tmp_path: Path) -> None:
    import random

    whole = craft.write(tmp_path / "c.pcap", craft.conversation(_metadata_exchange(range(1, 8)), mss=25),
                        client=CLIENT, broker=BROKER).read_bytes()
    rng = random.Random(15)
    for attempt in range(300):
        damaged = bytearray(whole)
        for _ in range(rng.randint(1, 6)):
            position = rng.randrange(24, len(damaged))  # past the file header: the packets themselves
            damaged[position] = rng.randrange(256)
        path = tmp_path / f"d{attempt}.pcap"
        path.write_bytes(bytes(damaged[:rng.randrange(len(damaged) // 2, len(damaged) + 1)]))
        for row in import_pcap([path], ImportReport("pcap")).to_pylist():
            if row["response"] is not None and row["api_key"] is not None:
                assert struct.unpack_from(">i", row["response"])[0] == row["correlation_id"]


def test_without_the_syn_a_broker_whose_answers_read_as_requests_is_not_taken_for_the_client(tmp_path: Path) -> None:
    # The capture lost the SYN and the client's first request: the broker's answer is the first data seen, and a
    # response (size, correlation id 0x00000001, ...) reads as a Produce v1 request header.
    exchange = [(True, craft.request(ApiKey.METADATA, 12, 1, MetadataRequest(topics=None))),
                (False, craft.response(ApiKey.METADATA, 12, 1, MetadataResponse(cluster_id="x" * 40))),
                (True, craft.request(ApiKey.METADATA, 12, 2, MetadataRequest(topics=None))),
                (False, craft.response(ApiKey.METADATA, 12, 2, MetadataResponse(cluster_id="y" * 40)))]
    packets = craft.conversation(exchange, handshake=False)
    del packets[0]
    requests, report = _import(craft.write(tmp_path / "nosyn.pcap", packets, client=CLIENT, broker=BROKER))
    assert requests == []
    assert report.problems == {"non_kafka_stream": 1}


def test_packets_lost_anywhere_never_give_a_row_the_whole_capture_does_not_have(tmp_path: Path) -> None:
    import random

    fire = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[])
    exchange = _metadata_exchange(range(1, 6))
    exchange[4:4] = [(True, craft.request(ApiKey.PRODUCE, 9, 100, fire))]  # an acks=0 request among them
    packets = craft.conversation(exchange, mss=30)
    whole = {(r["correlation_id"], r["api_key"]): r for r in
             import_pcap([craft.write(tmp_path / "whole.pcap", packets, client=CLIENT, broker=BROKER)]).to_pylist()}
    assert len(whole) == 7  # ApiVersions, 5 Metadata, the acks=0 Produce
    rng = random.Random(1515)
    for attempt in range(200):
        loss = rng.uniform(0.01, 0.3)
        kept = [p for p in packets if rng.random() > loss]
        path = craft.write(tmp_path / f"lossy{attempt}.pcap", kept, client=CLIENT, broker=BROKER)
        report = ImportReport("pcap")
        for row in import_pcap([path], report).to_pylist():
            same = whole[(row["correlation_id"], row["api_key"])]
            assert (row["request"], row["response"], row["outcome"]) == (same["request"], same["response"], same["outcome"])
        if len(kept) < len(packets) and any(p.payload for p in packets if p not in kept):
            assert not report.ok

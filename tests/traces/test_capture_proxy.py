"""kafka-shim capture-proxy with real clients: confluent-kafka and kafka-python produce, consume in a group and
administer a kafka-shim broker (EmbeddedBroker, authorizer on) through the proxy, PLAINTEXT and SASL_PLAINTEXT
(PLAIN and SCRAM-SHA-256); the trace is read back and checked against what the clients did. Then bad input: a
client sending garbage, an upstream that closes or cannot be reached.
"""

from __future__ import annotations

import socket
import threading
from collections import Counter
from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import decode_response
from kafka_shim.protocol.messages import MetadataRequest
from kafka_shim.protocol.sasl_oauthbearer import first_message, unsecured_token
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.tap import TappedRequest, TappedSession
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.traces.capture_rows import RECORD_FIELDS, ROW_FIELDS, SESSION_FIELDS
from kafka_shim.traces.format import SOURCE_KEY, iter_requests, read_trace
from kafka_shim.traces.proxy import ProxiedRequest
from kafka_shim.traces.proxy_rewrite import rewrite_addresses
from tests.support.proxy_thread import TIMEOUT, ProxyThread
from tests.support.sasl_setup import USERS, listener_address, sasl_properties
from tests.support.wire import Wire

pytestmark = pytest.mark.clients


def _sasl(user: str, mechanism: str = "PLAIN") -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": USERS[user]}


def _allow(principal: str, resource_type, name: str, operation):
    from confluent_kafka.admin import AclBinding, AclPermissionType, ResourcePatternType

    return AclBinding(resource_type, name, ResourcePatternType.LITERAL, principal, "*", operation, AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    """Clients through two proxies (SASL_PLAINTEXT and PLAINTEXT) in front of one broker; the traces and what the
    clients saw."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AclOperation, AdminClient, NewTopic, ResourceType
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

    sasl_trace, plain_trace = tmp_path_factory.mktemp("sasl-trace"), tmp_path_factory.mktemp("plain-trace")
    seen: dict[str, object] = {}
    props = sasl_properties() | {"offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1"}
    with EmbeddedBroker(BrokerConfig.from_properties(props)) as broker:
        sasl_upstream = listener_address(broker.broker, "SASL_PLAINTEXT")
        plain_upstream = listener_address(broker.broker, "PLAINTEXT")
        seen["upstreams"] = {sasl_upstream, plain_upstream}
        with ProxyThread(sasl_upstream, sasl_trace, "SASL_PLAINTEXT") as sasl, ProxyThread(plain_upstream, plain_trace) as plain:
            seen["sasl_proxy"], seen["plain_proxy"] = sasl.address, plain.address
            admin = AdminClient({"bootstrap.servers": sasl.bootstrap, **_sasl("admin")})
            for future in admin.create_topics([NewTopic("orders", 1, 1), NewTopic("plain", 1, 1)]).values():
                future.result(timeout=TIMEOUT)
            acls = [_allow("User:alice", ResourceType.TOPIC, "orders", AclOperation.ALL),
                    _allow("User:alice", ResourceType.GROUP, "alice-group", AclOperation.READ),
                    _allow("User:ANONYMOUS", ResourceType.TOPIC, "plain", AclOperation.ALL),
                    _allow("User:ANONYMOUS", ResourceType.GROUP, "plain-group", AclOperation.READ)]
            for future in admin.create_acls(acls).values():
                future.result(timeout=TIMEOUT)
            # The Metadata answer the admin client got names the proxy, not the broker.
            metadata = admin.list_topics(timeout=TIMEOUT)
            seen["admin_brokers"] = {(b.host, b.port) for b in metadata.brokers.values()}
            described = admin.describe_cluster().result(timeout=TIMEOUT)
            seen["described_nodes"] = {(n.host, n.port) for n in described.nodes}

            # SASL PLAIN producer (confluent-kafka, idempotent), SCRAM consumer in a group (kafka-python).
            producer = Producer({"bootstrap.servers": sasl.bootstrap, **_sasl("alice"), "enable.idempotence": True})
            delivered: list = []
            for i in range(3):
                producer.produce("orders", f"o{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
            assert producer.flush(TIMEOUT) == 0
            seen["sasl_delivered"] = delivered
            consumer = KafkaConsumer("orders", bootstrap_servers=sasl.bootstrap, security_protocol="SASL_PLAINTEXT",
                                     sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                                     sasl_plain_password=USERS["alice"], group_id="alice-group",
                                     auto_offset_reset="earliest", consumer_timeout_ms=TIMEOUT * 1000)
            seen["sasl_consumed"] = [r.value for _, r in zip(range(3), consumer, strict=False)]
            consumer.commit()
            consumer.close()

            # PLAINTEXT: kafka-python produces, confluent-kafka consumes in a group.
            kp = KafkaProducer(bootstrap_servers=plain.bootstrap, acks="all")
            for i in range(3):
                kp.send("plain", f"p{i}".encode()).get(timeout=TIMEOUT)
            kp.close()
            cc = Consumer({"bootstrap.servers": plain.bootstrap, "group.id": "plain-group", "auto.offset.reset": "earliest"})
            cc.subscribe(["plain"])
            got: list[bytes] = []
            while len(got) < 3:
                message = cc.poll(TIMEOUT)
                assert message is not None, "no message through the proxy within the bound"
                assert message.error() is None, message.error()
                got.append(message.value())
            cc.close()
            seen["plain_consumed"] = got
            kadmin = KafkaAdminClient(bootstrap_servers=plain.bootstrap)
            seen["kafka_python_topics"] = set(kadmin.list_topics())
            seen["kafka_python_brokers"] = {(b["host"], b["port"]) for b in kadmin.describe_cluster()["brokers"]}
            kadmin.close()
    return sasl_trace, plain_trace, seen


def _rows(trace: Path) -> list:
    return list(iter_requests(trace))


def test_the_clients_work_through_the_proxy(proxied) -> None:
    _, _, seen = proxied
    assert seen["sasl_delivered"] == [None, None, None]
    assert seen["sasl_consumed"] == [b"o0", b"o1", b"o2"]
    assert seen["plain_consumed"] == [b"p0", b"p1", b"p2"]
    assert seen["admin_brokers"] == seen["described_nodes"] == {seen["sasl_proxy"]}
    assert seen["kafka_python_topics"] == {"plain"}  # User:ANONYMOUS may describe only that one
    assert seen["kafka_python_brokers"] == {seen["plain_proxy"]}


def test_every_request_is_recorded_paired_and_decodes(proxied) -> None:
    for trace in proxied[:2]:
        rows = _rows(trace)
        assert rows
        assert {f.name for f in trace.rglob("*.parquet")}  # finished files, the hidden in-progress ones renamed
        assert not [p for p in trace.rglob(".*")]
        for traced in rows:
            row = traced.row
            assert row["source"] == "proxy" and row["kind"] == "request", row
            assert traced.decode_error is None, row
            assert row["decisions"] is None  # the proxy cannot see the broker's authorization
            if row["outcome"] == "response":
                correlation_id, _ = decode_response(row["api_key"], row["api_version"], row["response"])
                assert correlation_id == row["correlation_id"]
            assert row["response_time_us"] >= 0
        per_connection = Counter((r.row["connection_id"], r.row["correlation_id"]) for r in rows)
        assert max(per_connection.values()) == 1


def test_files_say_they_come_from_the_proxy(proxied) -> None:
    import pyarrow.parquet as pq

    for trace in proxied[:2]:
        for f in trace.rglob("*.parquet"):
            assert pq.read_schema(f).metadata[SOURCE_KEY] == b"proxy"


def test_sasl_usernames_are_recovered_and_passwords_never_written(proxied) -> None:
    sasl_trace, _, _ = proxied
    rows = [r.row for r in _rows(sasl_trace)]
    by_api = Counter((r["api_key"], r["principal"]) for r in rows)
    assert by_api[(ApiKey.CREATE_TOPICS, "User:admin")] == 1
    assert by_api[(ApiKey.CREATE_ACLS, "User:admin")] == 1
    assert by_api[(ApiKey.PRODUCE, "User:alice")] >= 1  # PLAIN
    assert by_api[(ApiKey.FETCH, "User:alice")] >= 1  # SCRAM-SHA-256
    assert by_api[(ApiKey.JOIN_GROUP, "User:alice")] >= 1
    sasl_rows = [r for r in rows if r["api_key"] == ApiKey.SASL_AUTHENTICATE]
    assert sasl_rows and all(r["principal"] == "User:ANONYMOUS" and r["request"] is None for r in sasl_rows)
    assert all(r["outcome"] == "response" for r in sasl_rows)
    # SCRAM: two SaslAuthenticate rounds on the consumer's connections.
    assert any(n == 2 for n in Counter(r["connection_id"] for r in sasl_rows).values())
    for f in sasl_trace.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for password in USERS.values():
                assert password.encode() not in data, f


def test_addresses_are_rewritten_and_the_original_answer_kept(proxied) -> None:
    _, _, seen = proxied
    for trace, proxy in ((proxied[0], seen["sasl_proxy"]), (proxied[1], seen["plain_proxy"])):
        rows = [r for r in _rows(trace) if r.row["outcome"] == "response"]  # a client's close can leave one unanswered
        metadata = [r for r in rows if r.row["api_key"] == ApiKey.METADATA]
        coordinators = [r for r in rows if r.row["api_key"] == ApiKey.FIND_COORDINATOR]
        assert metadata and coordinators
        for traced in metadata:
            assert traced.row["response_rewritten"] is True
            # The trace keeps the upstream's own answer: the broker's address.
            assert {(b.host, b.port) for b in traced.response_body.brokers} <= seen["upstreams"]
        for traced in metadata + [r for r in rows if r.row["api_key"] == ApiKey.DESCRIBE_CLUSTER]:
            # Re-encoding loses nothing: rewritten to the proxy and back, the answer is the broker's byte for byte.
            key, version, original = traced.row["api_key"], traced.row["api_version"], traced.row["response"]
            upstream = next(iter(traced.response_body.brokers))
            there = rewrite_addresses(key, version, original, lambda node, to=proxy: to)
            back = rewrite_addresses(key, version, there, lambda node, to=(upstream.host, upstream.port): to)
            assert there != original and back == original
        found = [r for r in coordinators if _coordinator_found(r)]
        assert found and all(r.row["response_rewritten"] for r in found)
        others = [r for r in rows if r.row["api_key"] not in (ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER)]
        assert all(r.row["response_rewritten"] is None for r in others)
        assert proxy[1] not in {p for _, p in seen["upstreams"]}


def _coordinator_found(traced) -> bool:
    body = traced.response_body
    if traced.row["api_version"] < 4:
        return body.error_code == 0
    return any(c.error_code == 0 for c in body.coordinators)  # v4+: one entry per key


def test_client_software_and_listener_columns(proxied) -> None:
    sasl_trace, plain_trace, _ = proxied
    sasl_rows = [r.row for r in _rows(sasl_trace)]
    assert {r["client_software_name"] for r in sasl_rows if r["api_key"] == ApiKey.CREATE_TOPICS} == {"confluent-kafka-python"}
    assert {r["client_software_name"] for r in sasl_rows if r["api_key"] == ApiKey.JOIN_GROUP} == {"kafka-python"}
    assert {(r["listener"], r["security_protocol"]) for r in sasl_rows} == {("SASL_PLAINTEXT", "SASL_PLAINTEXT")}
    plain_rows = [r.row for r in _rows(plain_trace)]
    assert {r["principal"] for r in plain_rows} == {"User:ANONYMOUS"}
    assert {r["client_host"] for r in plain_rows} == {"127.0.0.1"}


def test_the_record_types_repeat_the_brokers(proxied) -> None:
    # traces may not import shim: the capture's field names repeat shim.tap's, and must keep doing so; the proxy's
    # rows hold the trace's columns themselves.
    assert RECORD_FIELDS == TappedRequest._fields and SESSION_FIELDS == TappedSession._fields
    assert ProxiedRequest._fields == (*ROW_FIELDS, "response_rewritten")


# -- bad input ---------------------------------------------------------------------------------------
def _closed(sock: socket.socket) -> bool:
    """Whether the peer closed the connection (waits up to TIMEOUT for it)."""
    sock.settimeout(TIMEOUT)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.parametrize("garbage", [b"\xff\xff\xff\xff", (2**30).to_bytes(4, "big"),
                                     (6).to_bytes(4, "big") + b"\x03\xe7\x00\x00\x00\x01"],
                         ids=["negative-size", "oversized", "unknown-api-key"])
def test_a_client_sending_garbage_is_closed_and_others_go_on(tmp_path, garbage: bytes) -> None:
    with EmbeddedBroker() as broker, ProxyThread(("127.0.0.1", broker.broker.bound[0].port), tmp_path) as proxy:
        with Wire(proxy.address) as good:
            bad = socket.create_connection(proxy.address, timeout=TIMEOUT)
            bad.sendall(garbage)
            assert _closed(bad)
            bad.close()
            answer = good.request(ApiKey.METADATA, 12, MetadataRequest(topics=[]))
            assert not answer.closed and answer.body.brokers[0].port == proxy.address[1]
    rows = [r.row for r in iter_requests(tmp_path)]
    assert [r["api_key"] for r in rows if r["outcome"] == "response"] == [ApiKey.METADATA]
    if garbage.startswith(b"\x00\x00\x00\x06"):
        (closed,) = [r for r in rows if r["outcome"] == "closed"]
        assert closed["api_key"] is None and closed["request"] == garbage[4:]


def test_an_upstream_that_closes_closes_only_that_client(tmp_path) -> None:
    """An upstream that drops every connection: each client is closed, with its request recorded as closed, and
    the proxy goes on accepting."""
    accepted = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))

    def drop_all() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            accepted.set()  # before the close the proxy reacts to
            conn.close()

    threading.Thread(target=drop_all, daemon=True).start()
    try:
        with ProxyThread(listener.getsockname(), tmp_path) as proxy:
            for _ in range(2):
                with Wire(proxy.address) as wire:
                    assert wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[])).closed
            assert accepted.is_set()
    finally:
        listener.close()
    rows = [r.row for r in iter_requests(tmp_path)]
    assert [(r["api_key"], r["outcome"]) for r in rows] == [(ApiKey.METADATA, "closed")] * 2


def test_an_unreachable_upstream_closes_the_client(tmp_path) -> None:
    spare = socket.create_server(("127.0.0.1", 0))
    port = spare.getsockname()[1]
    spare.close()  # nothing listens there now
    with ProxyThread(("127.0.0.1", port), tmp_path) as proxy, Wire(proxy.address) as wire:
        assert wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[])).closed
    assert read_trace(tmp_path).num_rows == 0



# -- SASL details ------------------------------------------------------------------------------------
def _sasl_broker() -> EmbeddedBroker:
    return EmbeddedBroker(BrokerConfig.from_properties(sasl_properties()))


def test_a_v0_handshake_with_bare_plain_token_is_followed(tmp_path) -> None:
    """SaslHandshake v0: the PLAIN token then goes as a bare frame (no header) and its answer too; the proxy pairs
    them by order, records the token row without bytes, and names the user from then on."""
    from kafka_shim.protocol.framing import encode_request
    from kafka_shim.protocol.messages import SaslHandshakeRequest

    with _sasl_broker() as broker, ProxyThread(listener_address(broker.broker, "SASL_PLAINTEXT"), tmp_path, "SASL_PLAINTEXT") as proxy:
        with Wire(proxy.address) as wire:
            assert wire.request(ApiKey.SASL_HANDSHAKE, 0, SaslHandshakeRequest(mechanism="PLAIN")).body.error_code == 0
            wire.send_frame(len(token := b"\x00bob\x00" + USERS["bob"].encode()).to_bytes(4, "big") + token)
            size = int.from_bytes(wire._read_exact(4), "big")
            assert size == 0 or wire._read_exact(size) is not None  # the broker's (empty) bare answer
            wire.send_frame(encode_request(ApiKey.METADATA, 12, 7, MetadataRequest(topics=[]), client_id="after-v0"))
            assert not wire.read_answer(ApiKey.METADATA, 12).closed
    rows = [r.row for r in iter_requests(tmp_path)]
    assert [(r["api_key"], r["principal"], r["request"] is None) for r in rows] == [
        (ApiKey.SASL_HANDSHAKE, "User:ANONYMOUS", False), (None, "User:ANONYMOUS", True), (ApiKey.METADATA, "User:bob", False)]
    for f in tmp_path.rglob("*.parquet"):
        assert USERS["bob"].encode() not in f.read_bytes()


def test_a_failed_authentication_is_recorded_and_names_no_one(tmp_path) -> None:
    with _sasl_broker() as broker, ProxyThread(listener_address(broker.broker, "SASL_PLAINTEXT"), tmp_path, "SASL_PLAINTEXT") as proxy:
        with Wire(proxy.address) as wire, pytest.raises(ConnectionError):
            wire.sasl_plain("alice", "wrong-password")
    rows = [r.row for r in iter_requests(tmp_path)]
    (auth,) = [r for r in rows if r["api_key"] == ApiKey.SASL_AUTHENTICATE]
    assert (auth["outcome"], auth["principal"], auth["request"]) == ("authentication_failed", "User:ANONYMOUS", None)
    assert all(b"wrong-password" not in f.read_bytes() for f in tmp_path.rglob("*.parquet"))


def test_oauthbearer_names_the_tokens_subject_once_the_broker_accepts_it(tmp_path) -> None:
    """An OAUTHBEARER exchange through the proxy: a refused token's error challenge completes nothing (the rows
    name no one), a retried good token names its subject from then on."""
    from kafka_shim.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest

    props = sasl_properties() | {
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}
    expired = unsecured_token("mallory", lifetime_s=-60)
    with EmbeddedBroker(BrokerConfig.from_properties(props)) as broker, \
            ProxyThread(listener_address(broker.broker, "SASL_PLAINTEXT"), tmp_path, "SASL_PLAINTEXT") as proxy:
        with Wire(proxy.address) as wire:
            assert wire.request(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism="OAUTHBEARER")).body.error_code == 0
            refused = wire.request(ApiKey.SASL_AUTHENTICATE, 2, SaslAuthenticateRequest(auth_bytes=first_message(expired)))
            assert refused.body.auth_bytes == b'{"status":"invalid_token"}'
            accepted = wire.request(ApiKey.SASL_AUTHENTICATE, 2, SaslAuthenticateRequest(auth_bytes=first_message(unsecured_token("carol"))))
            assert (accepted.body.error_code, accepted.body.auth_bytes) == (0, b"")
            assert not wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[])).closed
    rows = [r.row for r in iter_requests(tmp_path)]
    assert [(r["api_key"], r["principal"]) for r in rows] == [
        (ApiKey.SASL_HANDSHAKE, "User:ANONYMOUS"), (ApiKey.SASL_AUTHENTICATE, "User:ANONYMOUS"),
        (ApiKey.SASL_AUTHENTICATE, "User:ANONYMOUS"), (ApiKey.METADATA, "User:carol")]
    assert all(r["request"] is None for r in rows if r["api_key"] == ApiKey.SASL_AUTHENTICATE)  # tokens are credentials


@pytest.mark.parametrize(("mechanism", "token", "user"), [
    ("PLAIN", b"\x00alice\x00secret", "alice"),
    ("PLAIN", b"alice\x00alice\x00secret", "alice"),
    ("PLAIN", b"mallory\x00alice\x00secret", None),  # Kafka refuses an authzid naming someone else
    ("PLAIN", b"alice\x00secret", None),
    ("SCRAM-SHA-256", b"n,,n=al=2Cice=3D,r=abc", "al,ice="),
    ("SCRAM-SHA-512", b"n,a=bob,n=bob,r=abc", "bob"),
    ("SCRAM-SHA-512", b"garbage", None),
    ("OAUTHBEARER", first_message(unsecured_token("carol")), "carol"),
    ("OAUTHBEARER", first_message(unsecured_token("carol"), authorization_id="carol"), "carol"),
    ("OAUTHBEARER", first_message(unsecured_token("carol"), authorization_id="dave"), None),
    ("OAUTHBEARER", first_message("not.a.jwt"), None),
    ("OAUTHBEARER", first_message("eyJhbGciOiJub25lIn0.eyJzdWIiOnRydWV9."), "true"),  # {"sub":true}: User:true in Kafka
    ("OAUTHBEARER", first_message("eyJhbGciOiJub25lIn0.eyJzdWIiOjF9."), None),  # {"sub":1}: refused by Kafka
    ("OAUTHBEARER", b"\x01", None),
    ("GSSAPI", b"\x60\x82", None),
])
def test_usernames_from_first_tokens(mechanism: str, token: bytes, user: str | None) -> None:
    from kafka_shim.traces.proxy_sasl import username

    assert username(mechanism, token) == user


# -- the command line and the format ---------------------------------------------------------------
def test_the_command_prints_its_address_forwards_and_finishes_the_trace_on_sigterm(tmp_path) -> None:
    import signal
    import subprocess
    import sys

    with EmbeddedBroker() as broker:
        upstream = broker.broker.bound[0]
        process = subprocess.Popen(
            [sys.executable, "-m", "kafka_shim.shim.tools.cli", "capture-proxy", "--upstream", f"127.0.0.1:{upstream.port}",
             "--capture", str(tmp_path), "--log-level", "warning"], stdout=subprocess.PIPE, text=True)
        try:
            host, port = process.stdout.readline().strip().rsplit(":", 1)  # blocks until the proxy listens
            with Wire((host, int(port))) as wire:
                answer = wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[]))
                assert answer.body.brokers[0].port == int(port)
            process.send_signal(signal.SIGTERM)
            assert process.wait(TIMEOUT) == 0
        finally:
            if process.poll() is None:
                process.kill()
            process.stdout.close()
    rows = [r.row for r in iter_requests(tmp_path)]
    assert [(r["api_key"], r["response_rewritten"], r["source"]) for r in rows] == [(ApiKey.METADATA, True, "proxy")]


def test_the_command_refuses_a_bad_address() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "kafka_shim.shim.tools.cli", "capture-proxy", "--upstream", "nowhere",
                           "--capture", "x"], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2 and "expected HOST:PORT" in done.stderr


def test_files_written_before_the_rewrite_column_still_read(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kafka_shim.traces.format import CAPTURE, SCHEMA, file_metadata

    older = pa.schema(list(SCHEMA)[:-1], metadata=file_metadata(CAPTURE))
    row = {"kind": "request", "time": 1_700_000_000_000_000, "source": CAPTURE, "api_key": 3}
    pq.write_table(pa.Table.from_pylist([row], schema=older), tmp_path / "old.parquet")
    table = read_trace(tmp_path / "old.parquet")
    assert table.column("response_rewritten").to_pylist() == [None] and table.column("api_key").to_pylist() == [3]


# -- a multi-broker upstream ---------------------------------------------------------------------------
class FakeMetadataBroker:
    """A stand-in broker of a two-node cluster: answers every request as a Metadata response advertising both
    nodes (enough to follow where the proxy routes a client), counting its connections."""

    def __init__(self, cluster: list[tuple[int, tuple[str, int]]] | None = None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()
        self.cluster = cluster or []
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        from kafka_shim.protocol.framing import encode_response, parse_request
        from kafka_shim.protocol.messages import MetadataResponse

        with conn:
            while (prefix := conn.recv(4, socket.MSG_WAITALL)) and len(prefix) == 4:
                frame = conn.recv(int.from_bytes(prefix, "big"), socket.MSG_WAITALL)
                header = parse_request(frame)
                brokers = [MetadataResponse.MetadataResponseBroker(node_id=n, host=h, port=p, rack=None) for n, (h, p) in self.cluster]
                body = MetadataResponse(brokers=brokers, cluster_id="fake", controller_id=1, topics=[])
                conn.sendall(encode_response(ApiKey.METADATA, header.api_version, header.correlation_id, body))

    def close(self) -> None:
        self.listener.close()


def test_listener_per_broker_gives_each_node_its_own_port(tmp_path) -> None:
    first, second = FakeMetadataBroker(), FakeMetadataBroker()
    cluster = [(1, first.address), (2, second.address)]
    first.cluster = second.cluster = cluster
    try:
        with ProxyThread(first.address, tmp_path, listener_per_broker=True) as proxy:
            with Wire(proxy.address) as wire:
                nodes = {b.node_id: (b.host, b.port) for b in wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[])).body.brokers}
            # Node 1 is the one --upstream names: the main port. Node 2 got a port of its own.
            assert nodes[1] == proxy.address and nodes[2][0] == proxy.address[0] and nodes[2][1] != proxy.address[1]
            with Wire(nodes[2]) as wire:
                again = {b.node_id: (b.host, b.port) for b in wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[])).body.brokers}
            assert again == nodes
            assert (first.connections, second.connections) == (1, 1)  # node 2's port forwarded to node 2
    finally:
        first.close()
        second.close()
    rows = list(iter_requests(tmp_path))
    assert len(rows) == 2 and all(r.row["response_rewritten"] for r in rows)
    assert [{(b.host, b.port) for b in r.response_body.brokers} for r in rows] == [{first.address, second.address}] * 2


# -- the rewrite, per API and version --------------------------------------------------------------------
def _encoded(api_key: int, version: int, body) -> bytes:
    from kafka_shim.protocol.framing import encode_response

    return encode_response(api_key, version, 42, body)[4:]


@pytest.mark.parametrize("version", [0, 3])
def test_find_coordinator_before_v4_is_rewritten_unless_it_names_no_node(version: int) -> None:
    from kafka_shim.protocol.messages import FindCoordinatorResponse

    found = _encoded(ApiKey.FIND_COORDINATOR, version, FindCoordinatorResponse(error_code=0, node_id=1, host="kafka1", port=9092))
    correlation_id, body = decode_response(ApiKey.FIND_COORDINATOR, version,
                                           rewrite_addresses(ApiKey.FIND_COORDINATOR, version, found, lambda n: ("proxy", 1)))
    assert (correlation_id, body.node_id, body.host, body.port) == (42, 1, "proxy", 1)
    missing = _encoded(ApiKey.FIND_COORDINATOR, version, FindCoordinatorResponse(error_code=15, node_id=-1, host="", port=-1))
    assert rewrite_addresses(ApiKey.FIND_COORDINATOR, version, missing, lambda n: ("proxy", 1)) is None


def test_batched_find_coordinator_rewrites_each_found_coordinator() -> None:
    from kafka_shim.protocol.messages import FindCoordinatorResponse

    coordinator = FindCoordinatorResponse.Coordinator
    body = FindCoordinatorResponse(coordinators=[
        coordinator(key="g1", node_id=1, host="kafka1", port=9092, error_code=0),
        coordinator(key="g2", node_id=-1, host="", port=-1, error_code=15),
        coordinator(key="g3", node_id=2, host="kafka2", port=9092, error_code=0)])
    frame = rewrite_addresses(ApiKey.FIND_COORDINATOR, 4, _encoded(ApiKey.FIND_COORDINATOR, 4, body),
                              lambda n: ("proxy", 1000 + n))
    _, out = decode_response(ApiKey.FIND_COORDINATOR, 4, frame)
    assert [(c.key, c.node_id, c.host, c.port) for c in out.coordinators] == [
        ("g1", 1, "proxy", 1001), ("g2", -1, "", -1), ("g3", 2, "proxy", 1002)]


@pytest.mark.parametrize(("api_key", "version"), [(ApiKey.METADATA, 0), (ApiKey.METADATA, 9), (ApiKey.DESCRIBE_CLUSTER, 0),
                                                  (ApiKey.DESCRIBE_CLUSTER, 1)])
def test_metadata_and_describe_cluster_brokers_are_rewritten(api_key: int, version: int) -> None:
    from kafka_shim.protocol.messages import DescribeClusterResponse, MetadataResponse

    if api_key == ApiKey.METADATA:
        body = MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=n, host=f"kafka{n}", port=9092, rack=None)
                                         for n in (1, 2)], controller_id=1, topics=[])
    else:
        body = DescribeClusterResponse(cluster_id="c", controller_id=1, brokers=[
            DescribeClusterResponse.DescribeClusterBroker(broker_id=n, host=f"kafka{n}", port=9092, rack=None) for n in (1, 2)])
    frame = rewrite_addresses(api_key, version, _encoded(api_key, version, body), lambda n: ("proxy", 1000 + n))
    _, out = decode_response(api_key, version, frame)
    assert [(b.host, b.port) for b in out.brokers] == [("proxy", 1001), ("proxy", 1002)]
    # Nothing else changed: rewriting back gives the original bytes.
    back = rewrite_addresses(api_key, version, frame, lambda n: (f"kafka{n}", 9092))
    assert back == _encoded(api_key, version, body)

"""kafka-shim replay against kafka-shim: a workload of real clients (confluent-kafka with PLAIN, kafka-python with
SCRAM-SHA-256 in a consumer group) captured by one broker, replayed against a fresh broker with the same config:
no difference; replayed against a fresh broker where one ACL changed: exactly the requests that ACL decides differ,
with the denied error code. Plus the command's bad inputs: a truncated Parquet file, a row of an unknown API version,
an unreachable broker, missing credentials.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.traces.format import file_metadata, iter_requests, read_trace
from kafka_shim.traces.replay.cli import main
from tests.support.sasl_setup import USERS, listener_address, sasl_properties
from tests.traces.replay.workload import GROUP, TOPIC, acl, plain, run_workload

pytestmark = pytest.mark.clients
TIMEOUT = 30


def _sasl_bootstrap(broker: EmbeddedBroker) -> str:
    host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
    return f"{host}:{port}"


def _config() -> BrokerConfig:
    # No initial rebalance delay: the group forms as soon as the member joins, in the capture and in the replays.
    return BrokerConfig.from_properties(sasl_properties() | {"group.initial.rebalance.delay.ms": "0",
                                                             "offsets.topic.replication.factor": "1"})


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    capture = tmp_path_factory.mktemp("trace")
    with EmbeddedBroker(_config(), capture_dir=capture) as broker:
        assert run_workload(_sasl_bootstrap(broker), TOPIC, GROUP) == [b"m0", b"m1", b"m2"]
    return capture


@pytest.fixture(scope="module")
def credentials(tmp_path_factory):
    path = tmp_path_factory.mktemp("creds") / "credentials.txt"
    path.write_text("# principal mechanism username password\n"
                    f"User:admin PLAIN admin {USERS['admin']}\n"
                    f"User:alice SCRAM-SHA-512 alice {USERS['alice']}\n")
    return path


def _replay(trace, broker: EmbeddedBroker, credentials, out, *extra: str) -> int:
    return main([str(trace), "--bootstrap-server", _sasl_bootstrap(broker), "--credentials", str(credentials),
                 "--out", str(out), *extra])


def _differences(out) -> list[dict]:
    return [json.loads(line) for line in (out / "differences.jsonl").read_text().splitlines()]


def test_replay_against_a_fresh_broker_with_the_same_config_has_no_difference(trace, credentials, tmp_path, capsys) -> None:
    with EmbeddedBroker(_config()) as fresh:
        code = _replay(trace, fresh, credentials, tmp_path, "--pace", "fast")
    out = capsys.readouterr().out
    assert _differences(tmp_path) == [], out
    assert code == 0
    statuses = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    recorded = list(iter_requests(trace))
    assert len(statuses) == len(recorded)
    by_api = {s["api"] for s in statuses if s["status"] == "identical"}
    # The workload's APIs were re-sent and answered alike: ids re-mapped (producer, member, topic, fetch session).
    assert {"CreateTopics", "CreateAcls", "InitProducerId", "Produce", "JoinGroup", "SyncGroup", "Fetch",
            "OffsetCommit", "LeaveGroup"} <= by_api
    # The SASL rows are not compared: the replayer authenticated on its own.
    skipped = {s["api"] for s in statuses if s["status"] == "skipped"}
    assert skipped == {"SaslHandshake", "SaslAuthenticate"}
    assert "0 different" in out and (tmp_path / "report.md").read_text().count("No differences.") == 1
    # librdkafka's fetches name the topic by id: the fresh broker's id was re-mapped into them.
    assert any(r.row["api_key"] == ApiKey.FETCH and r.row["api_version"] >= 13 for r in recorded)


def test_replay_after_denying_one_acl_differs_in_exactly_the_requests_it_decides(trace, credentials, tmp_path) -> None:
    from confluent_kafka.admin import AclOperation, AclPermissionType, AdminClient, ResourceType

    with EmbeddedBroker(_config()) as changed:
        # Set on the target only (not in the trace): alice may no longer read the topic.
        admin = AdminClient({"bootstrap.servers": _sasl_bootstrap(changed), **plain("admin")})
        deny = acl("User:alice", ResourceType.TOPIC, TOPIC, AclOperation.READ, AclPermissionType.DENY)
        for future in admin.create_acls([deny]).values():
            future.result(timeout=TIMEOUT)
        code = _replay(trace, changed, credentials, tmp_path, "--pace", "fast")
    assert code == 1
    differences = _differences(tmp_path)
    rows = {(r.row["connection_id"], r.row["correlation_id"]): r for r in iter_requests(trace)}
    differing = {(d["connection_id"], d["correlation_id"]) for d in differences}
    # Reading the topic needs READ on it: Fetch, and OffsetCommit's READ per topic. Nothing else changed.
    # (A request recorded unanswered on a closing connection is not compared: see "closed" in README.)
    expected = {key for key, r in rows.items() if r.row["principal"] == "User:alice" and r.row["outcome"] == "response"
                and r.row["api_key"] in (ApiKey.FETCH, ApiKey.OFFSET_COMMIT) and _names_topic(r)}
    assert expected and differing == expected
    codes = {(d["api"], d["recorded"], d["replayed"]) for d in differences if d["path"].endswith("error_code")}
    assert ("Fetch", 0, 29) in codes and ("OffsetCommit", 0, 29) in codes


def _names_topic(traced) -> bool:
    body = traced.request_body
    topics = getattr(body, "topics", None) or []
    return bool(topics)


def test_a_truncated_trace_file_is_a_usage_error_naming_it(trace, tmp_path, capsys) -> None:
    source = sorted(trace.rglob("*.parquet"))[0]
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    assert main([str(broken), "--bootstrap-server", "127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "not a readable Parquet file" in err


def test_a_row_of_an_unknown_api_version_is_sent_as_recorded_and_its_answer_compared(trace, tmp_path, capsys) -> None:
    table = read_trace(trace).drop_columns(["day"])
    rows = table.to_pylist()
    raw = next(r for r in rows if r["principal"] == "User:ANONYMOUS" and r["api_key"] == ApiKey.API_VERSIONS)
    # One connection: an ApiVersions request at version 99 (a newer client's), recorded as answered.
    rows = [raw | {"request": raw["request"][:2] + (99).to_bytes(2, "big") + raw["request"][4:], "api_version": 99,
                   "connection_id": "127.0.0.1:1-127.0.0.1:2-0"}]
    path = tmp_path / "one.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema.with_metadata(file_metadata("capture"))), path)
    with EmbeddedBroker(_config()) as fresh:
        host, port = listener_address(fresh.broker, "PLAINTEXT")
        code = main([str(path), "--bootstrap-server", f"{host}:{port}", "--out", str(tmp_path / "out"), "--timeout", "60"])
    err = capsys.readouterr().err
    assert "api key 18 v99, a version this kafka-shim does not know" in err
    # Kafka answers an unknown ApiVersions version with error 35 in a v0 body; the recorded answer was a v-current one.
    assert code == 1
    [difference] = _differences(tmp_path / "out")
    assert difference["api_version"] == 99 and difference["path"] == "response"


def test_an_unreachable_broker_is_a_clear_message_and_exit_1(trace, credentials, capsys) -> None:
    with socket.socket() as s:  # a port nobody listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        code = main([str(trace), "--bootstrap-server", f"127.0.0.1:{port}", "--credentials", str(credentials)])
    assert code == 1
    assert f"cannot reach the broker at 127.0.0.1:{port}" in capsys.readouterr().err


def test_missing_credentials_name_the_principals(trace, tmp_path, capsys) -> None:
    creds = tmp_path / "c.txt"
    creds.write_text(f"User:admin PLAIN admin {USERS['admin']}\n")
    assert main([str(trace), "--bootstrap-server", "127.0.0.1:9", "--credentials", str(creds)]) == 2
    assert "has no line for User:alice" in capsys.readouterr().err


def test_the_command_line_runs_it(trace, credentials, tmp_path) -> None:
    kafka_shim = shutil.which("kafka-shim", path=str(__import__("pathlib").Path(sys.executable).parent))
    assert kafka_shim
    with EmbeddedBroker(_config()) as fresh:
        done = subprocess.run([kafka_shim, "replay", str(trace), "--bootstrap-server", _sasl_bootstrap(fresh),
                               "--credentials", str(credentials)],  # the recorded pace
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 different" in done.stdout
    assert "Fetch" in done.stdout


def test_an_oauthbearer_workload_replays_with_unsecured_tokens_naming_its_principals(tmp_path) -> None:
    """A producer that authenticated with an OAUTHBEARER token as carol, replayed with a credentials line that names
    no password: the replayer makes carol's unsecured token, and carol's requests are answered alike."""
    from confluent_kafka import Producer

    props = sasl_properties() | {
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        "super.users": "User:admin;User:carol", "auto.create.topics.enable": "true"}
    capture, out = tmp_path / "trace", tmp_path / "out"
    with EmbeddedBroker(BrokerConfig.from_properties(props), capture_dir=capture) as broker:
        producer = Producer({"bootstrap.servers": _sasl_bootstrap(broker), "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                             "sasl.oauthbearer.config": "principal=carol", "enable.idempotence": False})
        for i in range(3):
            producer.produce("oauth-orders", f"m{i}".encode())
        assert producer.flush(TIMEOUT) == 0
    assert {r.row["principal"] for r in iter_requests(capture) if r.row["api_key"] == ApiKey.PRODUCE} == {"User:carol"}
    credentials = tmp_path / "credentials.txt"
    credentials.write_text("User:carol OAUTHBEARER carol\n")
    with EmbeddedBroker(BrokerConfig.from_properties(props)) as fresh:
        code = _replay(capture, fresh, credentials, out, "--pace", "fast")
    assert _differences(out) == [] and code == 0
    statuses = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    # Identical Produce answers: the same offsets, so carol's records were written on the fresh broker.
    assert "Produce" in {s["api"] for s in statuses if s["status"] == "identical"}

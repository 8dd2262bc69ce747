"""The Go clients against kafka-shim: franz-go (kgo, kadm), IBM/sarama and segmentio/kafka-go as Go services use them.

Each scenario is a small Go program of tests/go (built once per session with the Go toolchain scripts/ensure-go
provides) that fails with what the client saw when it is not what Apache Kafka gives it: producing with every codec
and reading back, a consumer group of two members sharing partitions and a third resuming from commits,
transactions read committed and uncommitted, topic administration, and ACLs refusing and then allowing alice
(franz-go's idempotent producer needs only WRITE: KIP-679). sarama runs at several protocol versions, down to the
magic 0 message format of 0.8 and the lz4 framing of 0.10. kafka-go, whose protocol code is its own, produces with
every codec at every acks through its Writer and its older Conn, shares partitions with each of its group balancers,
administers topics and configs, and logs alice in over PLAIN and SCRAM under ACLs. The same programs agree with Kafka 3.9 (run by hand
against ``scripts/real-kafka start --override super.users=User:admin;User:broker;User:ANONYMOUS``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.sasl_setup import listener_address

GO_DIR = Path(__file__).resolve().parents[1] / "go"
# Where scripts/ensure-go puts the toolchain it fetches when the machine has no recent Go.
FETCHED_GO = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-shim" / "go" / "go1.26.8" / "bin" / "go"
_USERS = 'user_admin="admin-secret" user_alice="alice-secret"'


def _go() -> str:
    for candidate in (shutil.which("go"), "/usr/local/go/bin/go", str(FETCHED_GO)):
        if candidate and Path(candidate).is_file():
            version = subprocess.run([candidate, "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()
            if version.startswith("go1.") and int(version.split(".")[1]) >= 26:
                return candidate
    pytest.fail("no Go >= 1.26 for the Go client tests: run scripts/test (or scripts/ensure-go)", pytrace=False)


@pytest.fixture(scope="module")
def go_peers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The franz, sarama and kafkago programs, built from tests/go with the modules its go.sum pins."""
    go, out = _go(), tmp_path_factory.mktemp("go-peers")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    built = {}
    for program in ("franz", "sarama", "kafkago"):
        proc = subprocess.run([go, "build", "-o", str(out / program), f"./{program}"], cwd=GO_DIR, env=env,
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            pytest.fail(f"go build ./{program} failed: {proc.stderr.strip()[-3000:]}", pytrace=False)
        built[program] = out / program
    return built


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    """PLAINTEXT for a principal that may do anything, SASL_PLAINTEXT (PLAIN) with admin and alice; the
    authorizer on, as a CI job that tests its ACLs runs it."""
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {_USERS};",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
            f"org.apache.kafka.common.security.scram.ScramLoginModule required {_USERS};",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":
            f"org.apache.kafka.common.security.scram.ScramLoginModule required {_USERS};",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "node.id": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    })
    with EmbeddedBroker(config) as running:
        yield running


def _listener(broker: EmbeddedBroker, name: str) -> str:
    host, port = listener_address(broker.broker, name)
    return f"{host}:{port}"


def _run(program: Path, *args: str) -> None:
    proc = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"{program.name} {' '.join(args)}:\n{proc.stdout.strip()}\n{proc.stderr.strip()[-3000:]}", pytrace=False)
    assert proc.stdout.startswith("ok "), proc.stdout


@pytest.mark.parametrize("scenario", ["admin-topics", "codecs", "group-rebalance", "transactions", "acls"])
def test_franz_go(go_peers: dict[str, Path], broker: EmbeddedBroker, scenario: str) -> None:
    _run(go_peers["franz"], "-scenario", scenario, "-bootstrap", _listener(broker, "PLAINTEXT"),
         "-sasl", _listener(broker, "SASL_PLAINTEXT"))


# sarama's Config.Version decides what it sends: 2.8 (its default) and 3.9; 0.11 (the first with transactions);
# 0.10.2 (magic 1, and the oldest with consumer groups); 0.10.0 (lz4 at magic 1); 0.9 and 0.8.2 (magic 0). The
# versions a scenario cannot run at are sarama's own refusals (CreatePartitions before 1.0, transactions before 0.11).
SARAMA = [(scenario, version) for version in ("2.8.0", "3.9.0") for scenario in ("produce-consume", "consumer-group", "admin", "transactions")]
SARAMA += [("produce-consume", "0.11.0.0"), ("consumer-group", "0.11.0.0"), ("transactions", "0.11.0.0"),
           ("produce-consume", "0.10.2.0"), ("consumer-group", "0.10.2.0"), ("produce-consume", "0.10.0.0"),
           ("produce-consume", "0.9.0.0"), ("produce-consume", "0.8.2.0")]


@pytest.mark.parametrize(("scenario", "version"), SARAMA)
def test_sarama(go_peers: dict[str, Path], broker: EmbeddedBroker, scenario: str, version: str) -> None:
    _run(go_peers["sarama"], "-scenario", scenario, "-version", version, "-bootstrap", _listener(broker, "PLAINTEXT"))


@pytest.mark.parametrize("scenario", ["produce-read", "conn", "consumer-group", "admin", "acls"])
def test_kafka_go(go_peers: dict[str, Path], broker: EmbeddedBroker, scenario: str) -> None:
    _run(go_peers["kafkago"], "-scenario", scenario, "-bootstrap", _listener(broker, "PLAINTEXT"),
         "-sasl", _listener(broker, "SASL_PLAINTEXT"))

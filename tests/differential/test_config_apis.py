"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs against a real Kafka 3.9, whole answers compared.

kafka-shim runs with the oracle's own server.properties (its listeners on free ports, its own data directory), so
that a BROKER describe can be compared entry by entry: only the values that name ports or directories differ.
Each test creates its topics under a fresh name on both brokers (on kafka-shim straight through Partitions) and
puts back any broker config it changes, because the real broker lives for the whole session.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_shim.protocol.messages import (
    AlterConfigsRequest,
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListClientMetricsResourcesRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.config.properties import load_properties
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.compare import assert_same
from tests.support.peers import REAL_KAFKA
from tests.support.sasl_setup import USERS, listener_address
from tests.support.wire import Answer, Wire

D, A, IA = DescribeConfigsRequest, AlterConfigsRequest, IncrementalAlterConfigsRequest
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# Keys whose values name this broker's ports or directories.
_LOCAL_VALUES = re.compile(r"^(listeners|advertised\.listeners|log\.dirs|controller\.quorum\.voters)$")


@pytest.fixture(scope="module")
def shim_like_oracle(oracle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    props = load_properties(Path(oracle.dir) / "server.properties")
    props["listeners"] = re.sub(r":\d+", ":0", props["listeners"])
    props["advertised.listeners"] = re.sub(r":\d+", ":0", props["advertised.listeners"])
    props["log.dirs"] = str(tmp_path_factory.mktemp("shim-configs"))
    with EmbeddedBroker(BrokerConfig.from_properties(props)) as broker:
        broker.data_dir = props["log.dirs"]
        yield broker


@pytest.fixture
def brokers(oracle, shim_like_oracle: EmbeddedBroker) -> dict[str, Any]:
    return {
        "kafka": {"SASL_PLAINTEXT": oracle.sasl, "PLAINTEXT": oracle.plaintext},
        "shim": {name: listener_address(shim_like_oracle.broker, name) for name in ("SASL_PLAINTEXT", "PLAINTEXT")},
        "shim_broker": shim_like_oracle,
        "shim_dir": shim_like_oracle.data_dir,
    }


def ask(brokers, side: str, user: str | None, api_key: int, version: int, body: Any) -> Answer:
    # Kafka applies a dynamic num.network.threads after answering it, by stopping and starting network processors: a
    # connection the acceptor has just handed to a processor being stopped is closed. Only a connection closed before
    # any answer is asked again on a new one (a few times); a closed answer to the request itself is returned.
    for attempt in range(5):
        with Wire(brokers[side]["PLAINTEXT" if user is None else "SASL_PLAINTEXT"]) as wire:
            if user is not None:
                try:
                    wire.sasl_plain(user, USERS[user])
                except ConnectionError:
                    if side != "kafka" or attempt == 4:
                        raise
                    continue
            return wire.request(api_key, version, body)
    raise AssertionError("unreachable")


def on_both(brokers, user: str | None, api_key: int, version: int, body: Any) -> tuple[Answer, Answer]:
    return ask(brokers, "kafka", user, api_key, version, body), ask(brokers, "shim", user, api_key, version, body)


def _local(body: Any) -> Any:
    """Mask the values of port- and directory-naming keys in a describe answer (both sides)."""
    for result in getattr(body, "results", []):
        for entry in result.configs:
            if _LOCAL_VALUES.match(entry.name):
                entry.value = "<local>"
                for synonym in entry.synonyms:
                    synonym.value = "<local>"
    return body


def same(brokers, user: str | None, api_key: int, version: int, body: Any, what: str, ignore: tuple[str, ...] = ()) -> Answer:
    kafka, shim = on_both(brokers, user, api_key, version, body)
    if api_key == 32:
        _local(kafka.body)
        _local(shim.body)
    assert_same(kafka, shim, ignore=ignore, what=what)
    return shim


def converged(brokers, body: D, what: str) -> None:
    """A describe once Kafka shows the last change: Kafka's broker applies a dynamic config when the controller's
    record reaches its metadata image, a moment after the alter is answered; kafka-shim at once."""
    shim = _local(ask(brokers, "shim", "admin", 32, 4, body).body)
    deadline = time.monotonic() + 60
    while True:
        kafka = ask(brokers, "kafka", "admin", 32, 4, body)
        # While Kafka reconfigures a listener after a dynamic change it may close a connection unanswered: ask again.
        if kafka.body is not None:
            _local(kafka.body)
            if kafka.body.results == shim.results:
                break
        assert time.monotonic() < deadline or kafka.body is not None, f"{what}: Kafka never answered the describe"
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert_same(kafka, Answer(False, kafka.correlation_id, shim), what=what)


def reset_broker_configs(brokers) -> None:
    """Drop every dynamic broker config on both brokers and wait until Kafka's describe shows it (the next test
    starts from server.properties)."""
    for side in ("kafka", "shim"):
        answer = ask(brokers, side, "admin", 33, 2, legacy((BROKER, "1", {}), (BROKER, "", {})))
        assert [r.error_code for r in answer.body.responses] == [0, 0], answer
    converged(brokers, describe((BROKER, "1", None), (BROKER, "", None), synonyms=True), "after the reset")


def make_topic(brokers, configs: dict[str, str] | None = None) -> str:
    name = "cfg-" + uuid.uuid4().hex[:10]
    request = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])],
        timeout_ms=30000, validate_only=False)
    created = ask(brokers, "kafka", "admin", 19, 7, request)
    assert created.body.topics[0].error_code == 0, created
    shim = brokers["shim_broker"]
    shim.call(shim.broker.services.partitions.create_topic, name, 1, configs or {})
    return name


def describe(*resources: tuple[int, str, list[str] | None], synonyms: bool = False, docs: bool = False) -> D:
    return D(resources=[D.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=k) for t, n, k in resources],
             include_synonyms=synonyms, include_documentation=docs)


def incremental(*resources: tuple[int, str, list[tuple[str, int, str | None]]], validate_only: bool = False) -> IA:
    return IA(resources=[IA.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
        IA.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]) for t, n, ops in resources],
        validate_only=validate_only)


def legacy(*resources: tuple[int, str, dict[str, str | None]], validate_only: bool = False) -> A:
    return A(resources=[A.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
        A.AlterableConfig(name=k, value=v) for k, v in configs.items()]) for t, n, configs in resources],
        validate_only=validate_only)


# -- DescribeConfigs -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("synonyms", [False, True], ids=["plain", "synonyms"])
def test_describe_a_topic(brokers, version: int, synonyms: bool) -> None:
    if version == 0 and synonyms:
        pytest.skip("v0 cannot ask for synonyms")
    name = make_topic(brokers, {"retention.ms": "1000", "cleanup.policy": "compact,delete", "max.message.bytes": "5000"})
    same(brokers, "admin", 32, version, describe((TOPIC, name, None), synonyms=synonyms), f"v{version} describe")
    same(brokers, "admin", 32, version, describe((TOPIC, name, ["retention.ms", "segment.ms", "nope"]), synonyms=synonyms),
         f"v{version} describe of some keys")
    # Named keys come in the order of a map holding only them: not the full listing's, nor the order asked.
    for keys in (["segment.ms", "retention.ms", "max.message.bytes", "cleanup.policy", "compression.type"],
                 ["retention.ms", "max.message.bytes"]):
        same(brokers, "admin", 32, version, describe((TOPIC, name, keys), synonyms=synonyms), f"v{version} describe of {keys}")


@pytest.mark.parametrize("version", [3, 4])
def test_describe_with_documentation(brokers, version: int) -> None:
    # kafka-shim answers a link to the key's entry in Kafka's documentation instead of Kafka's own text
    name = make_topic(brokers)
    shim = same(brokers, "admin", 32, version, describe((TOPIC, name, None), (BROKER, "1", ["message.max.bytes"]), docs=True),
                "describe with documentation", ignore=("results.*.configs.*.documentation",))
    topic, broker = shim.body.results
    assert {e.name: e.documentation for e in topic.configs}["retention.ms"] == (
        "https://kafka.apache.org/39/documentation.html#topicconfigs_retention.ms")
    assert broker.configs[0].documentation == "https://kafka.apache.org/39/documentation.html#brokerconfigs_message.max.bytes"


@pytest.mark.parametrize(("api_key", "version"), [(33, 0), (33, 1), (44, 0)])
def test_older_alter_versions(brokers, api_key: int, version: int) -> None:
    name = make_topic(brokers)
    if api_key == 33:
        request: Any = legacy((TOPIC, name, {"retention.ms": "100"}), (TOPIC, "no-such-topic", {"retention.ms": "1"}),
                              (BROKER, "2", {"message.max.bytes": "5"}), (BROKER, "x", {"message.max.bytes": "5"}),
                              (BROKER, "1", {"message.max.bytes": "5"}), validate_only=True)
    else:
        request = incremental((TOPIC, name, [("retention.ms", SET, "100")]), (TOPIC, "no-such-topic", [("retention.ms", SET, "1")]))
    same(brokers, "admin", api_key, version, request, f"v{version}")
    same(brokers, "admin", 32, 2, describe((TOPIC, name, None), synonyms=True), "the topic afterwards")


@pytest.mark.parametrize("version", [1, 4])
def test_describe_this_broker_and_the_defaults(brokers, version: int) -> None:
    for name in ("1", ""):
        same(brokers, "admin", 32, version, describe((BROKER, name, None), synonyms=True), f"broker {name!r}")
    same(brokers, "admin", 32, version, describe((BROKER, "1", ["log.retention.hours", "num.partitions", "x"])), "broker keys")
    same(brokers, "admin", 32, version, describe((BROKER, "1", ["num.io.threads", "auto.create.topics.enable", "message.max.bytes",
                                                               "log.retention.hours"])), "broker keys, a map of their own")


def test_describe_errors(brokers) -> None:
    request = describe((TOPIC, "no-such-topic", None), (TOPIC, "bad name!", None), (TOPIC, "", None), (BROKER, "2", None),
                       (BROKER, "x", None), (BROKER_LOGGER, "", None), (BROKER_LOGGER, "x", None), (BROKER_LOGGER, "2", None))
    same(brokers, "admin", 32, 4, request, "describe errors")


def test_describe_an_unknown_resource_type_fails_the_request(brokers) -> None:
    name = make_topic(brokers)
    same(brokers, "admin", 32, 4, describe((TOPIC, name, None), (7, "x", None), (BROKER, "1", None)), "unknown type")


@pytest.mark.parametrize("user", [None, "alice"], ids=["anonymous", "alice"])
def test_describe_denied(brokers, user: str | None) -> None:
    name = make_topic(brokers)
    same(brokers, user, 32, 4, describe((BROKER, "1", None), (TOPIC, name, None), (TOPIC, "no-such-topic", None)), "denied")


def test_describe_with_only_some_rights(brokers) -> None:
    name = make_topic(brokers)
    other = make_topic(brokers)
    binding = CreateAclsRequest.AclCreation(resource_type=2, resource_name=name, resource_pattern_type=3, principal="User:alice",
                                            host="*", operation=8, permission_type=3)  # DESCRIBE_CONFIGS, ALLOW
    for side in ("kafka", "shim"):
        assert ask(brokers, side, "admin", 30, 3, CreateAclsRequest(creations=[binding])).body.results[0].error_code == 0
    try:
        same(brokers, "alice", 32, 4, describe((TOPIC, other, None), (TOPIC, name, ["retention.ms"]), (BROKER, "1", None)),
             "some rights")
    finally:
        f = DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=2, resource_name_filter=name, pattern_type_filter=3,
                                               principal_filter="User:alice", host_filter="*", operation=8, permission_type=3)
        for side in ("kafka", "shim"):
            ask(brokers, side, "admin", 31, 3, DeleteAclsRequest(filters=[f]))


# -- IncrementalAlterConfigs and AlterConfigs on topics -----------------------------------------------------------------

def test_incremental_topic_changes_and_their_errors(brokers) -> None:
    name = make_topic(brokers, {"retention.ms": "1000"})
    steps = [
        incremental((TOPIC, name, [("retention.ms", SET, "2000"), ("segment.bytes", SET, "100000")])),
        incremental((TOPIC, name, [("cleanup.policy", APPEND, "compact")])),
        incremental((TOPIC, name, [("cleanup.policy", APPEND, "delete,compact")])),
        incremental((TOPIC, name, [("cleanup.policy", SUBTRACT, "delete")])),
        incremental((TOPIC, name, [("leader.replication.throttled.replicas", APPEND, "0:1,1:1")])),
        incremental((TOPIC, name, [("leader.replication.throttled.replicas", SUBTRACT, "0:1,5:5")])),
        incremental((TOPIC, name, [("retention.ms", DELETE, None), ("never.set", DELETE, None)])),
        incremental((TOPIC, name, [("retention.ms", APPEND, "5")])),
        incremental((TOPIC, name, [("nope.key", SET, "5")])),
        incremental((TOPIC, name, [("nope.key", APPEND, "5")])),
        incremental((TOPIC, name, [("retention.ms", SET, "abc")])),
        incremental((TOPIC, name, [("segment.bytes", SET, "1")])),
        incremental((TOPIC, name, [("min.compaction.lag.ms", SET, "10"), ("max.compaction.lag.ms", SET, "5")])),
        incremental((TOPIC, name, [("retention.ms", SET, None)])),
        incremental((TOPIC, name, [("retention.ms", SET, "1"), ("retention.ms", SET, "2")])),
        incremental((TOPIC, name, [("retention.ms", SET, "3")]), (TOPIC, name, [("segment.ms", SET, "5000")])),
        incremental((TOPIC, "no-such-topic", [("retention.ms", SET, "3")])),
        incremental((TOPIC, "no-such-topic", [("retention.ms", SET, "x")])),
        incremental((TOPIC, "bad name!", [("retention.ms", SET, "3")])),
        incremental((TOPIC, "", [("retention.ms", SET, "3")])),
        incremental((TOPIC, name, [("retention.ms", SET, "7777")]), validate_only=True),
        incremental((7, "x", [("a", SET, "b")]), (TOPIC, name, [("segment.ms", SET, "6000")])),
        incremental((TOPIC, name, [("retention.ms", 9, "3")])),
    ]
    for index, request in enumerate(steps):
        same(brokers, "admin", 44, 1, request, f"step {index}: {request}")
        same(brokers, "admin", 32, 4, describe((TOPIC, name, None), synonyms=True), f"the topic after step {index}")


def test_legacy_topic_changes_and_their_errors(brokers) -> None:
    name = make_topic(brokers, {"retention.ms": "1000", "segment.ms": "100000"})
    steps = [
        legacy((TOPIC, name, {"retention.ms": "2000", "cleanup.policy": "compact"})),
        legacy((TOPIC, name, {"max.message.bytes": "7000"})),
        legacy((TOPIC, name, {"max.message.bytes": "-7"})),
        legacy((TOPIC, name, {"unknown.key": "1"})),
        legacy((TOPIC, name, {"retention.ms": None})),
        legacy((TOPIC, name, {})),
        legacy((TOPIC, "no-such-topic", {"retention.ms": "1"})),
        legacy((BROKER_LOGGER, "1", {"root": "INFO"})),
        legacy((TOPIC, name, {"retention.ms": "31"}), validate_only=True),
    ]
    for index, request in enumerate(steps):
        same(brokers, "admin", 33, 2, request, f"step {index}: {request}")
        same(brokers, "admin", 32, 4, describe((TOPIC, name, None), synonyms=True), f"the topic after step {index}")


def test_legacy_duplicate_resources_are_never_answered(brokers) -> None:
    # Kafka 3.9 fails while building this answer and its error answer (both key a map by resource) and never
    # answers; kafka-shim closes the connection.
    name = make_topic(brokers)
    request = legacy((TOPIC, name, {"retention.ms": "1"}), (TOPIC, name, {"retention.ms": "2"}))
    with Wire(brokers["kafka"]["PLAINTEXT"], timeout=3) as wire:
        try:
            kafka = wire.request(33, 2, request)
        except TimeoutError:
            kafka = None
    assert kafka is None or kafka.closed, f"Kafka answered: {kafka}"
    assert ask(brokers, "shim", "admin", 33, 2, request).closed


@pytest.mark.parametrize("user", [None, "alice"], ids=["anonymous", "alice"])
def test_alters_denied(brokers, user: str | None) -> None:
    name = make_topic(brokers)
    same(brokers, user, 44, 1, incremental((TOPIC, name, [("retention.ms", SET, "3")]), (BROKER, "1", [("message.max.bytes", SET, "3")]),
                                           (TOPIC, "no-such-topic", [("retention.ms", SET, "x")]),
                                           (BROKER, "1", [("num.partitions", SET, "3")])), "incremental denied")
    same(brokers, user, 33, 2, legacy((TOPIC, name, {"retention.ms": "3"}), (BROKER, "", {"message.max.bytes": "3"})), "legacy denied")


# -- broker configs -------------------------------------------------------------------------------------------------

def test_dynamic_broker_configs(brokers) -> None:
    name = make_topic(brokers)
    steps = [
        incremental((BROKER, "1", [("message.max.bytes", SET, "2000000"), ("log.retention.ms", SET, "3600000")])),
        incremental((BROKER, "", [("log.segment.bytes", SET, "20000000"), ("message.max.bytes", SET, "3000000")])),
        incremental((BROKER, "1", [("log.cleanup.policy", APPEND, "compact")])),
        incremental((BROKER, "1", [("log.cleanup.policy", SUBTRACT, "delete")])),
        incremental((BROKER, "1", [("message.max.bytes", APPEND, "5")])),
        incremental((BROKER, "1", [("num.partitions", SET, "3")])),
        incremental((BROKER, "", [("listeners", SET, "PLAINTEXT://:1")])),
        incremental((BROKER, "1", [("ssl.keystore.location", SET, "/k")])),
        incremental((BROKER, "1", [("message.max.bytes", SET, "abc")])),
        incremental((BROKER, "2", [("message.max.bytes", SET, "5")])),
        incremental((BROKER, "x", [("message.max.bytes", SET, "5")])),
        incremental((BROKER, "1", [("message.max.bytes", SET, "5")]), validate_only=True),
        incremental((BROKER, "1", [("num.io.threads", SET, "0")])),
        incremental((BROKER, "1", [("num.io.threads", SET, "2")])),
        incremental((BROKER, "", [("num.io.threads", SET, "40")])),
        incremental((BROKER, "1", [("log.cleaner.threads", SET, "2"), ("num.network.threads", SET, "2")])),
        incremental((BROKER, "1", [("background.threads", SET, "0")])),
        # KafkaConfig.validateValues and LogCleaner.validateReconfiguration (the cleaner has 2 threads now)
        incremental((BROKER, "1", [("log.cleaner.threads", SET, "5")])),
        incremental((BROKER, "", [("log.cleaner.threads", SET, "0")]), validate_only=True),
        incremental((BROKER, "", [("log.cleaner.dedupe.buffer.size", SET, "4000000")])),
        incremental((BROKER, "1", [("max.connections.per.ip", SET, "0")])),
        incremental((BROKER, "1", [("max.connections.per.ip", SET, "0"), ("max.connections.per.ip.overrides", SET, "127.0.0.1:50")]),
                    validate_only=True),
        incremental((BROKER, "1", [("log.roll.ms", SET, "0")])),
        incremental((BROKER, "1", [("log.roll.jitter.ms", SET, "-1")])),
        incremental((BROKER, "1", [("log.retention.ms", SET, "0")])),
        incremental((BROKER, "1", [("log.cleaner.threads", SET, "1")])),
        incremental((BROKER, "1", [("max.connections", SET, "1000"), ("unclean.leader.election.enable", SET, "yes")])),
        incremental((BROKER, "", [("log.retention.ms", SET, "-5"), ("min.insync.replicas", SET, "0")])),
        incremental((BROKER, "1", [("listener.name.plaintext.ssl.keystore.location", SET, "/nope")])),
        incremental((BROKER, "1", [("made.up.key", SET, "1")])),
        incremental((BROKER, "1", [("log.retention.ms", DELETE, None), ("message.max.bytes", DELETE, None)])),
    ]
    try:
        for index, request in enumerate(steps):
            same(brokers, "admin", 44, 1, request, f"step {index}: {request}")
            converged(brokers, describe((BROKER, "1", None), (BROKER, "", None), synonyms=True), f"brokers after step {index}")
            converged(brokers, describe((TOPIC, name, None), synonyms=True), f"the topic after step {index}")
        same(brokers, "admin", 33, 2, legacy((BROKER, "1", {"log.retention.ms": "7200000"})), "legacy broker alter")
        converged(brokers, describe((BROKER, "1", None), (TOPIC, name, None), synonyms=True), "after the legacy alter")
        same(brokers, "admin", 33, 2, legacy((BROKER, "1", {"num.io.threads": "3", "num.partitions": "2"})), "legacy non-dynamic")
    finally:
        reset_broker_configs(brokers)


def test_broker_logger_errors(brokers) -> None:
    steps = [
        incremental((BROKER_LOGGER, "2", [("root", SET, "INFO")])),
        incremental((BROKER_LOGGER, "x", [("root", SET, "INFO")])),
        incremental((BROKER_LOGGER, "1", [("root", SET, "LOUD")])),
        incremental((BROKER_LOGGER, "1", [("no.such.logger", SET, "INFO")])),
        incremental((BROKER_LOGGER, "1", [("root", DELETE, None)])),
        incremental((BROKER_LOGGER, "1", [("root", APPEND, "INFO")])),
        incremental((BROKER_LOGGER, "1", [("root", SET, "INFO")]), validate_only=True),
    ]
    for index, request in enumerate(steps):
        same(brokers, "admin", 44, 1, request, f"step {index}: {request}")
    same(brokers, None, 44, 1, incremental((BROKER_LOGGER, "1", [("root", SET, "INFO")])), "denied logger change")


def test_broker_loggers_beyond_the_root(brokers) -> None:
    # A logger without a level of its own shows its nearest ancestor's; DELETE takes its own level away again.
    names = ["kafka.server.ReplicaManager", "kafka", "root", "kafka.request.logger", "org.apache.kafka.clients.NetworkClient"]
    look = describe((BROKER_LOGGER, "1", names))
    try:
        same(brokers, "admin", 32, 4, look, "some loggers")
        same(brokers, "admin", 44, 1, incremental((BROKER_LOGGER, "1", [("kafka.server.ReplicaManager", SET, "DEBUG"),
                                                                         ("kafka", SET, "WARN")])), "set two loggers")
        same(brokers, "admin", 32, 4, look, "after setting two")
        same(brokers, "admin", 44, 1, incremental((BROKER_LOGGER, "1", [("kafka.server.ReplicaManager", DELETE, None)])),
             "delete one")
        same(brokers, "admin", 32, 4, look, "after deleting one")
        same(brokers, "admin", 44, 1, incremental((BROKER_LOGGER, "1", [("kafka", SET, "LOUD")])), "a level log4j lacks")
    finally:
        for side in ("kafka", "shim"):
            ask(brokers, side, "admin", 44, 1, incremental((BROKER_LOGGER, "1", [("kafka", SET, "INFO"),
                                                                                 ("kafka.server.ReplicaManager", DELETE, None)])))


# -- kafka-configs.sh (kafka.admin.ConfigCommand of Kafka 3.9), run against both brokers --------------------------------

_PORT = re.compile(r"127\.0\.0\.1:\d+")


def configs_cli(brokers, oracle, side: str, *args: str) -> tuple[int, str]:
    host, port = brokers[side]["SASL_PLAINTEXT"]
    proc = subprocess.run(
        [sys.executable, str(REAL_KAFKA), "run", "kafka.admin.ConfigCommand", "--bootstrap-server", f"{host}:{port}",
         "--command-config", str(Path(oracle.dir) / "admin.properties"), *args],
        capture_output=True, text=True, timeout=300,
    )
    text = proc.stdout + proc.stderr
    for directory in (str(Path(oracle.dir) / "data"), brokers["shim_dir"]):
        text = text.replace(directory, "<data dir>")
    return proc.returncode, _PORT.sub("127.0.0.1:<port>", text)


def same_cli(brokers, oracle, *args: str, until: str | None = None) -> str:
    """Both outputs and exit codes equal; with ``until``, Kafka's output is awaited until it contains that text
    (a dynamic broker config reaches Kafka's describe a moment after the alter is answered)."""
    shim = configs_cli(brokers, oracle, "shim", *args)
    deadline = time.monotonic() + 60
    kafka = configs_cli(brokers, oracle, "kafka", *args)
    while until is not None and until not in kafka[1] and time.monotonic() < deadline:
        kafka = configs_cli(brokers, oracle, "kafka", *args)
    assert shim == kafka, f"kafka-configs.sh {' '.join(args)}\n--- Kafka ({kafka[0]})\n{kafka[1]}\n--- kafka-shim ({shim[0]})\n{shim[1]}"
    return shim[1]


def test_kafka_configs_sh_on_topics(brokers, oracle) -> None:
    name = make_topic(brokers, {"segment.ms": "100000"})
    topic = ("--entity-type", "topics", "--entity-name", name)
    assert "segment.ms=100000 sensitive=false" in same_cli(brokers, oracle, *topic, "--describe")
    assert "min.insync.replicas=1 sensitive=false" in same_cli(brokers, oracle, *topic, "--describe", "--all")
    same_cli(brokers, oracle, *topic, "--alter", "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]",
             "--delete-config", "segment.ms")
    assert "retention.ms=1000" in same_cli(brokers, oracle, *topic, "--describe")
    same_cli(brokers, oracle, *topic, "--alter", "--add-config", "retention.ms=soon")
    same_cli(brokers, oracle, *topic, "--alter", "--add-config", "no.such.key=1")
    same_cli(brokers, oracle, "--entity-type", "topics", "--entity-name", "no-such-topic", "--alter", "--add-config", "retention.ms=1")


def test_kafka_configs_sh_on_brokers(brokers, oracle) -> None:
    same_cli(brokers, oracle, "--entity-type", "brokers", "--entity-name", "1", "--describe")
    every = same_cli(brokers, oracle, "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all")
    assert "message.max.bytes=1048588 sensitive=false synonyms={DEFAULT_CONFIG:message.max.bytes=1048588}" in every
    refused = same_cli(brokers, oracle, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "num.partitions=3")
    assert "Cannot update these configs dynamically: Set(num.partitions)" in refused
    try:
        same_cli(brokers, oracle, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.segment.bytes=20000000")
        same_cli(brokers, oracle, "--entity-type", "brokers", "--entity-default", "--describe", until="log.segment.bytes=20000000")
        same_cli(brokers, oracle, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "message.max.bytes=2000000")
        same_cli(brokers, oracle, "--entity-type", "brokers", "--entity-name", "1", "--describe", until="message.max.bytes=2000000")
    finally:
        reset_broker_configs(brokers)


# -- client metrics subscriptions (KIP-714) -----------------------------------------------------------------------------

CLIENT_METRICS = 16


def test_client_metrics_subscriptions(brokers) -> None:
    name = "sub-" + uuid.uuid4().hex[:8]
    steps = [
        incremental((CLIENT_METRICS, name, [("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "60000")])),
        incremental((CLIENT_METRICS, name, [("match", SET, "client_id=app.*")])),
        incremental((CLIENT_METRICS, name, [("metrics", APPEND, "org.apache.kafka.consumer.")])),
        incremental((CLIENT_METRICS, name, [("interval.ms", SET, "50")])),
        incremental((CLIENT_METRICS, name, [("interval.ms", SET, "x")])),
        incremental((CLIENT_METRICS, name, [("nope", SET, "1")])),
        incremental((CLIENT_METRICS, name, [("match", SET, "bad_key=1")])),
        incremental((CLIENT_METRICS, name, [("match", SET, "client_id=[")])),
        incremental((CLIENT_METRICS, name, [("interval.ms", DELETE, None)])),
        incremental((CLIENT_METRICS, "", [("interval.ms", SET, "60000")])),
    ]
    try:
        for index, request in enumerate(steps):
            same(brokers, "admin", 44, 1, request, f"step {index}: {request}")
            same(brokers, "admin", 32, 4, describe((CLIENT_METRICS, name, None), (CLIENT_METRICS, "other", None), synonyms=True),
                 f"after step {index}")
        same(brokers, "admin", 33, 2, legacy((CLIENT_METRICS, name, {"interval.ms": "70000"})), "legacy")
        same(brokers, "admin", 32, 4, describe((CLIENT_METRICS, name, None), (CLIENT_METRICS, "", None)), "after legacy")
        same(brokers, "alice", 44, 1, incremental((CLIENT_METRICS, name, [("interval.ms", SET, "60000")])), "denied")
        # ListClientMetricsResources (74): the subscription is listed (Kafka's list holds other tests' too)
        for side in ("kafka", "shim"):
            listed = _client_metrics_names(brokers, side)
            assert name in listed, f"{side}: {listed}"
        same(brokers, "alice", 74, 0, ListClientMetricsResourcesRequest(), "ListClientMetricsResources denied")
    finally:
        for side in ("kafka", "shim"):
            ask(brokers, side, "admin", 33, 2, legacy((CLIENT_METRICS, name, {})))
    deadline = time.monotonic() + 60  # Kafka's list follows its metadata log a moment later
    while name in _client_metrics_names(brokers, "kafka") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert name not in _client_metrics_names(brokers, "kafka") and name not in _client_metrics_names(brokers, "shim")


def _client_metrics_names(brokers, side: str) -> list[str]:
    answer = ask(brokers, side, "admin", 74, 0, ListClientMetricsResourcesRequest())
    assert answer.body.error_code == 0, answer
    return [r.name for r in answer.body.client_metrics_resources]


# -- random operation sequences --------------------------------------------------------------------------------------------

_KEYS = ["cleanup.policy", "leader.replication.throttled.replicas", "retention.ms", "segment.bytes", "min.compaction.lag.ms",
         "max.compaction.lag.ms", "compression.type", "message.timestamp.type", "no.such.key"]
_VALUES = ["compact", "delete", "compact,delete", ",compact,", "", " delete", "0:1", "0:1,1:1", "*", "1000", "-1", "x",
           "20000", "1", "gzip", "GZIP", "LogAppendTime", None]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_incremental_sequences_on_a_topic(brokers, seed: int) -> None:
    import random

    rng = random.Random(seed)
    name = make_topic(brokers, {"cleanup.policy": "delete"})
    for step in range(25):
        ops = [(rng.choice(_KEYS), rng.choice([SET, SET, DELETE, APPEND, SUBTRACT]), rng.choice(_VALUES))
               for _ in range(rng.randint(1, 3))]
        request = incremental((TOPIC, name, ops), validate_only=rng.random() < 0.15)
        same(brokers, "admin", 44, 1, request, f"seed {seed} step {step}: {ops}")
        same(brokers, "admin", 32, 4, describe((TOPIC, name, None), synonyms=True), f"seed {seed} after step {step}")


_BROKER_KEYS = ["message.max.bytes", "log.retention.ms", "log.cleanup.policy", "log.segment.bytes", "num.io.threads",
                "num.partitions", "compression.type", "log.message.timestamp.type", "min.insync.replicas"]
_BROKER_VALUES = ["2000000", "3600000", "compact", "delete,compact", "20000000", "4", "12", "x", "zstd", "LogAppendTime", "2",
                  "0", None, "-1", ",delete,", ""]


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_random_broker_sequence(brokers, seed: int) -> None:
    import random

    rng = random.Random(seed)
    try:
        for step in range(15):
            ops = [(rng.choice(_BROKER_KEYS), rng.choice([SET, SET, DELETE, APPEND, SUBTRACT]), rng.choice(_BROKER_VALUES))
                   for _ in range(rng.randint(1, 2))]
            request = incremental((BROKER, rng.choice(["1", ""]), ops))
            same(brokers, "admin", 44, 1, request, f"step {step}: {request}")
            converged(brokers, describe((BROKER, "1", None), (BROKER, "", None), synonyms=True), f"after step {step}")
    finally:
        reset_broker_configs(brokers)


# -- Kafka's checks of dynamic broker values, and the order its messages list keys in -----------------------------------

_OVERRIDES = "max.connections.per.ip.overrides"


@pytest.mark.parametrize("request_", [
    # KafkaConfig reads the per-IP overrides (Csv.parseCsvMap, toInt) before validateValues checks the addresses
    *(incremental((BROKER, "1", [(_OVERRIDES, SET, value)]), validate_only=True)
      for value in ["a:1,b", ",a:1", "a:1,", " , ", "a:x,b:y,c:z", "a b:1", "h@st:1,é:2", "1.2.3.4:99999999999", "x:", ":5"]),
    legacy((BROKER, "1", {_OVERRIDES: "x"}), validate_only=True),
    # DynamicMetricsReporters loads each class, and names every key the alteration changes
    *(incremental((BROKER, "", [("metric.reporters", SET, value)]), validate_only=True)
      for value in ["org.apache.kafka.common.metrics.JmxReporter", " ", "org.apache.kafka.common.metrics.JmxReporter,",
                    "java.lang.String"]),
    incremental((BROKER, "", [("metric.reporters", SET, "x"), ("log.retention.ms", SET, "5"), ("num.io.threads", SET, "8"),
                              ("log.cleaner.threads", SET, "1")]), validate_only=True),
    # the broker quota keys (QuotaConfigs) are LONGs at least 0, parsed before KafkaConfig's dynamic keys
    *(incremental((BROKER, name, [(key, SET, value)]), validate_only=True)
      for name, key, value in [("1", "leader.replication.throttled.rate", "x"), ("1", "follower.replication.throttled.rate", "-5"),
                               ("", "replica.alter.log.dirs.io.max.bytes.per.second", "1.5"),
                               ("1", "listener.name.a.leader.replication.throttled.rate", "x")]),
    incremental((BROKER, "1", [("leader.replication.throttled.rate", SET, "5"), ("num.io.threads", SET, "x"),
                               ("follower.replication.throttled.rate", SET, "y")]), validate_only=True),
    # listener-prefixed max.connections, max.connection.creation.rate and num.network.threads may be cluster-wide
    *(incremental((BROKER, "", [(f"listener.name.plaintext.{key}", SET, "3")]), validate_only=True)
      for key in ["max.connections", "max.connection.creation.rate", "num.network.threads"]),
    # sets of keys in the order of Kafka's Properties, printed as Scala prints a Set (a HashSet from five keys on)
    incremental((BROKER, "", [("process.roles", SET, "broker"), ("num.partitions", SET, "3")]), validate_only=True),
    incremental((BROKER, "", [(key, SET, "1") for key in ["process.roles", "node.id", "broker.id", "num.partitions",
                                                          "log.dirs", "zookeeper.connect"]]), validate_only=True),
    incremental((BROKER, "", [("listener.name.plaintext.ssl.keystore.location", SET, "x"), ("ssl.cipher.suites", SET, "x"),
                              ("listener.name.x.max.connections", SET, "3"), ("listener.name.sasl_plaintext.ssl.key.password", SET, "x"),
                              ("advertised.listeners", SET, "PLAINTEXT://a:1"), ("listener.name.a.b", SET, "1")]),
                validate_only=True),
    incremental((BROKER, "", [("listener.name.plaintext.ssl.keystore.location", SET, "x"), ("listener.name.x.max.connections", SET, "3"),
                              ("advertised.listeners", SET, "PLAINTEXT://a:1")]), validate_only=True),
    # listeners: parsed first (early.start.listeners), then KafkaConfig's KRaft rules, then DynamicListenerConfig's
    *(incremental((BROKER, "1", [(key, SET, value) for key, value in pairs]), validate_only=True) for pairs in [
        [("advertised.listeners", "INTERNAL://x:1")], [("advertised.listeners", "PLAINTEXT://x:1")], [("advertised.listeners", "")],
        [("advertised.listeners", "CONTROLLER://x:1")], [("advertised.listeners", "INTERNAL://0.0.0.0:1")],
        [("advertised.listeners", "FOO://x:1,INTERNAL://x:2")], [("advertised.listeners", "INTERNAL://x:1,INTERNAL://y:2")],
        [("advertised.listeners", "garbage")], [("advertised.listeners", "INTERNAL://x")], [("advertised.listeners", "internal://[::1]:1")],
        [("advertised.listeners", "INTERNAL://x:99999999999")], [("advertised.listeners", "INTERNAL://x:1,CONTROLLER://0.0.0.0:3")],
        [("advertised.listeners", "PLAINTEXT://y:2,SASL_PLAINTEXT://z:3")], [("advertised.listeners", "INTERNAL://x:1"), ("listeners", "garbage")],
        [("listener.name.internal.ssl.keystore.location", "x"), ("advertised.listeners", "INTERNAL://x:1")],
        [("listeners", "CONTROLLER://127.0.0.1:9")], [("listeners", "PLAINTEXT://127.0.0.1:1")],
        [("listeners", "CONTROLLER://127.0.0.1:9,INTERNAL://127.0.0.1:5,PLAINTEXT://127.0.0.1:5")],
        [("listeners", "CONTROLLER://127.0.0.1:9,INTERNAL://:5,PLAINTEXT://:5")],
        [("listeners", "CONTROLLER://127.0.0.1:9,INTERNAL://127.0.0.1:5,PLAINTEXT://[::1]:5,SASL_PLAINTEXT://h:5")],
        [("listeners", "CONTROLLER://127.0.0.1:9,INTERNAL://127.0.0.1:5,PLAINTEXT://[::1]:5,SASL_PLAINTEXT://10.0.0.1:5")],
        [("listener.security.protocol.map", "A:FOO")], [("listener.security.protocol.map", "x")],
        [("listener.security.protocol.map", "CONTROLLER:SASL_PLAINTEXT,INTERNAL:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT")],
        [("listener.security.protocol.map", "CONTROLLER:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT,"
                                            "SASL_PLAINTEXT:SASL_PLAINTEXT,EXTRA:SSL")],
    ]),
    legacy((BROKER, "1", {"advertised.listeners": "INTERNAL://x:1"}), validate_only=True),
], ids=lambda request: repr(request)[:90])
def test_broker_values_kafka_refuses(brokers, request_: Any) -> None:
    same(brokers, "admin", request_.api_key, 1 if isinstance(request_, IA) else 2, request_, repr(request_))


def test_broker_quota_keys_are_described_with_their_type(brokers) -> None:
    """leader/follower.replication.throttled.rate are not KafkaConfig's keys but DynamicConfig's: described (once set)
    as LONGs, not sensitive, read-only in the description."""
    try:
        same(brokers, "admin", 44, 1, incremental(
            (BROKER, "1", [("leader.replication.throttled.rate", SET, "100"), ("x.unknown", SET, "5")]),
            (BROKER, "", [("follower.replication.throttled.rate", SET, "7")])), "setting the quota keys")
        converged(brokers, describe((BROKER, "1", None), (BROKER, "", None), synonyms=True), "brokers with quota keys")
        converged(brokers, describe((BROKER, "1", ["leader.replication.throttled.rate", "follower.replication.throttled.rate",
                                                   "replica.alter.log.dirs.io.max.bytes.per.second"])), "the keys by name")
    finally:
        reset_broker_configs(brokers)


_KNOWN_TOPIC_KEYS = ["retention.ms", "cleanup.policy", "segment.bytes", "min.insync.replicas", "compression.type", "flush.ms",
                     "max.message.bytes", "segment.ms", "index.interval.bytes", "retention.bytes", "delete.retention.ms",
                     "file.delete.delay.ms", "segment.jitter.ms", "preallocate"]
_KNOWN_TOPIC_VALUES = {"cleanup.policy": "delete", "compression.type": "gzip", "preallocate": "false"}


@pytest.mark.parametrize("seed", [1, 2])
def test_which_unknown_topic_key_kafka_names(brokers, seed: int) -> None:
    """Kafka names the first unknown key its Properties (a ConcurrentHashMap) iterates, after a HashMap: the name
    depends on every key's hash and on how many keys there are, not on the request's order."""
    import random

    rng = random.Random(seed)
    name = make_topic(brokers, {"retention.ms": "1000", "flush.ms": "5"})
    for step in range(40):
        keys = rng.sample(_KNOWN_TOPIC_KEYS, rng.randint(0, 12))
        keys += ["u" + "".join(rng.choice("abcxyz.") for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(2, 6))]
        rng.shuffle(keys)
        configs = [(key, _KNOWN_TOPIC_VALUES.get(key, "1000")) for key in keys]
        kind = step % 3
        if kind == 0:
            request: Any = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="cfg-unknown-keys", num_partitions=1, replication_factor=1, assignments=[],
                configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs])],
                timeout_ms=30000, validate_only=True)
            same(brokers, "admin", 19, 7, request, f"seed {seed} step {step}: create with {keys}")
        elif kind == 1:
            same(brokers, "admin", 33, 2, legacy((TOPIC, name, dict(configs)), validate_only=True), f"seed {seed} step {step}: {keys}")
        else:
            request = incremental((TOPIC, name, [(k, SET, v) for k, v in configs]), validate_only=True)
            same(brokers, "admin", 44, 1, request, f"seed {seed} step {step}: {keys}")

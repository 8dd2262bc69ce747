"""The pytest plugin as a user's project sees it: test files run by pytester, with real clients against the fixture.

The plugin is installed with the package (entry point ``pytest11``), so the inner runs find ``kafka_shim`` without
any conftest. Each inner file is a user's test; the outer test asserts what pytest reported for it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

# Imported here, before any inner run: pytester's in-process runs drop the modules a run imported, and the
# certificate library's native part cannot be imported twice (its classes would no longer match).
import kafka_shim.shim.testing.tls  # noqa: F401

pytest_plugins = ["pytester"]

# Consumes what a test produced: polls until `count` records arrived or a generous deadline passed.
CONSUME = '''
import time
from confluent_kafka import Consumer

def consume(config, topic, count):
    consumer = Consumer(config | {"group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values, deadline = [], time.monotonic() + 60
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values
'''


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(helpers=CONSUME, test_user=textwrap.dedent(source))
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_plugin_fixture_produces_and_consumes_with_confluent_kafka(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        from confluent_kafka import Producer
        from helpers import consume

        def test_roundtrip(kafka_shim):
            kafka_shim.create_topic("orders", partitions=3)
            producer = Producer(kafka_shim.confluent_config())
            for i in range(10):
                producer.produce("orders", f"order-{i}".encode())
            assert producer.flush(30) == 0
            assert sorted(consume(kafka_shim.confluent_config(), "orders", 10)) == sorted(f"order-{i}".encode() for i in range(10))
    ''')
    result.assert_outcomes(passed=1)


def test_plugin_resets_state_between_tests_on_the_same_port(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        from confluent_kafka import Producer

        seen = {}

        def test_first_leaves_state_behind(kafka_shim):
            seen["bootstrap"] = kafka_shim.bootstrap_servers
            kafka_shim.create_topic("left-over")
            producer = Producer(kafka_shim.confluent_config())
            producer.produce("left-over", b"x")
            assert producer.flush(30) == 0
            assert "left-over" in kafka_shim.topics()
            kafka_shim.faults.error("Metadata", "BROKER_NOT_AVAILABLE", count=None)  # would break every later test

        def test_second_starts_empty_without_a_restart(kafka_shim):
            assert kafka_shim.faults.rules() == []
            assert kafka_shim.bootstrap_servers == seen["bootstrap"]
            assert "left-over" not in kafka_shim.topics()
            kafka_shim.create_topic("left-over")  # no TOPIC_ALREADY_EXISTS: the topic is really gone
    ''')
    result.assert_outcomes(passed=2)


def test_plugin_sasl_listener_with_authorizer_and_acl_helper(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        import pytest
        from confluent_kafka import KafkaError, Producer

        def produce(config, topic):
            errors = []
            producer = Producer(config | {"message.timeout.ms": 20000})
            producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
            producer.flush(30)
            return errors

        @pytest.mark.kafka_shim(listener="SASL_PLAINTEXT", authorizer=True)
        def test_alice_needs_write(kafka_shim):
            kafka_shim.create_topic("payments")
            denied = produce(kafka_shim.confluent_config("alice"), "payments")
            assert denied[0] is not None and denied[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            kafka_shim.create_acls({"resource_type": "topic", "resource_name": "pay", "pattern_type": "prefixed",
                                    "principal": "User:alice", "operations": ["Write", "Describe"]})
            assert produce(kafka_shim.confluent_config("alice"), "payments") == [None]
            assert produce(kafka_shim.confluent_config("admin"), "payments") == [None]  # the default super user

        @pytest.mark.kafka_shim(listener="SASL_PLAINTEXT", authorizer=True)
        def test_acls_are_gone_after_the_reset(kafka_shim):
            assert kafka_shim.acls() == []
    ''')
    result.assert_outcomes(passed=2)


def test_plugin_marker_acls_and_super_users_are_loaded_at_each_start(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        import pytest
        from kafka import KafkaAdminClient
        from kafka.errors import TopicAuthorizationFailedError

        OPTIONS = dict(listener="SASL_PLAINTEXT", mechanism="SCRAM-SHA-512", super_users=["User:bob"],
                       acls=[{"resource_type": "topic", "resource_name": "*", "principal": "User:alice",
                              "operation": "Create"}])

        @pytest.mark.kafka_shim(**OPTIONS)
        @pytest.mark.parametrize("user, allowed", [("alice", True), ("bob", True), ("admin", False)])
        def test_create_topic_as(kafka_shim, user, allowed):
            admin = KafkaAdminClient(**kafka_shim.kafka_python_config(user))
            try:
                admin.create_topics({"t-" + user: {"num_partitions": 1}})
                denied = None
            except TopicAuthorizationFailedError as exc:
                denied = exc
            finally:
                admin.close()
            assert (denied is None) is allowed, denied
            assert ("t-" + user in kafka_shim.topics()) is allowed
    ''')
    result.assert_outcomes(passed=3)


def test_plugin_oauthbearer_clients_act_as_the_principal_their_token_names(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        import asyncio
        import pytest
        from aiokafka import AIOKafkaProducer
        from aiokafka.errors import TopicAuthorizationFailedError as AioDenied
        from confluent_kafka import KafkaError, Producer
        from kafka import KafkaConsumer
        from kafka.errors import TopicAuthorizationFailedError

        ACLS = [{"resource_type": "topic", "resource_name": "orders", "principal": "User:carol", "operations": ["Write", "Read", "Describe"]},
                {"resource_type": "group", "resource_name": "billing", "principal": "User:carol", "operation": "Read"}]

        def produce(config):
            errors = []
            producer = Producer(config | {"message.timeout.ms": 20000})
            producer.produce("orders", b"from-librdkafka", on_delivery=lambda err, msg: errors.append(err))
            producer.flush(30)
            return errors

        async def aio_produce(config):
            producer = AIOKafkaProducer(**config)
            await producer.start()
            try:
                await producer.send_and_wait("orders", b"from-aiokafka")
            finally:
                await producer.stop()

        @pytest.mark.kafka_shim(listener="SASL_PLAINTEXT", mechanism="OAUTHBEARER", acls=ACLS)
        def test_tokens(kafka_shim):
            kafka_shim.create_topic("orders")
            # carol is no SASL user: with OAUTHBEARER the token names whoever it likes.
            assert produce(kafka_shim.confluent_config("carol")) == [None]
            denied = produce(kafka_shim.confluent_config("dave"))
            assert denied[0] is not None and denied[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            asyncio.run(aio_produce(kafka_shim.aiokafka_config("carol")))
            with pytest.raises(AioDenied):
                asyncio.run(aio_produce(kafka_shim.aiokafka_config("dave")))
            consumer = KafkaConsumer("orders", group_id="billing", auto_offset_reset="earliest", consumer_timeout_ms=20000,
                                     **kafka_shim.kafka_python_config("carol"))
            values = []
            for message in consumer:
                values.append(message.value)
                if len(values) == 2:
                    break
            consumer.close()
            assert sorted(values) == [b"from-aiokafka", b"from-librdkafka"]
            # dave's clients never got as far as a Produce: Metadata already refused them the topic.
            assert {r.principal for r in kafka_shim.received("Produce")} == {"User:carol"}
            assert {r.principal for r in kafka_shim.received("Metadata")} == {"User:carol", "User:dave"}
    ''')
    result.assert_outcomes(passed=1)


def test_plugin_under_pytest_xdist_gives_each_worker_its_own_broker(pytester: pytest.Pytester,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest -n: every worker process starts its own broker, so tests in parallel never see each other's topics."""
    pytester.makepyfile(helpers=CONSUME, test_user=textwrap.dedent('''
        import os
        import pytest
        from confluent_kafka import Producer
        from helpers import consume

        @pytest.mark.parametrize("n", range(6))
        def test_same_names_in_parallel(kafka_shim, n):
            kafka_shim.create_topic("orders")  # every test, every worker: the same name, no TOPIC_ALREADY_EXISTS
            producer = Producer(kafka_shim.confluent_config())
            producer.produce("orders", f"{n}".encode())
            assert producer.flush(30) == 0
            assert consume(kafka_shim.confluent_config(), "orders", 1) == [f"{n}".encode()]
            with open(os.environ["SEEN"], "a") as seen:
                seen.write(f"{os.environ['PYTEST_XDIST_WORKER']} {kafka_shim.bootstrap_servers}\\n")
    '''))
    seen = pytester.path / "seen.txt"
    monkeypatch.setenv("SEEN", str(seen))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=6)
    pairs = {tuple(line.split()) for line in seen.read_text().splitlines()}
    workers = {worker for worker, _ in pairs}
    assert len({address for _, address in pairs}) == len(workers) >= 1  # one broker per worker that ran tests


def test_plugin_freezes_the_collector_once_after_its_first_broker_and_the_ini_turns_that_off(
        pytester: pytest.Pytester) -> None:
    """Full collections then skip the broker's long-lived objects; a reset (or another configuration's broker) adds
    no second freeze, which would keep the reset broker's old state for good: the objects a reset makes stay with
    the collector. In a fresh process: this one may have frozen already."""
    pytester.makepyfile(test_user=textwrap.dedent('''
        import gc
        import pytest

        seen = []

        def test_first_broker(kafka_shim):
            seen.append(gc.get_freeze_count())
            kafka_shim.create_topic("kept-apart")

        def test_reset_broker(kafka_shim):
            assert "kept-apart" not in kafka_shim.topics()
            assert gc.get_freeze_count() <= seen[0]  # frozen objects are still freed when unreferenced
            assert len(gc.get_objects()) > 1_000, len(gc.get_objects())

        @pytest.mark.kafka_shim(listener="SASL_PLAINTEXT")
        def test_another_configuration(kafka_shim):
            assert gc.get_freeze_count() <= seen[0]
            assert len(gc.get_objects()) > 1_000, len(gc.get_objects())

        def test_counts(request):
            frozen = request.config.getini("kafka_shim_gc_freeze")
            assert (seen[0] > 10_000) if frozen else (seen[0] == 0), (frozen, seen)
    '''))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=4)
    pytester.makeini("[pytest]\nkafka_shim_gc_freeze = false\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=4)


def test_plugin_tls_listener_with_kafka_python_and_aiokafka(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        import asyncio
        import pytest
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
        from kafka import KafkaProducer

        @pytest.mark.kafka_shim(listener="SSL")
        def test_tls(kafka_shim):
            kafka_shim.create_topic("secure")
            producer = KafkaProducer(**kafka_shim.kafka_python_config())
            producer.send("secure", b"from-kafka-python").get(timeout=30)
            producer.close()

            async def round_trip():
                aio = AIOKafkaProducer(**kafka_shim.aiokafka_config())
                await aio.start()
                await aio.send_and_wait("secure", b"from-aiokafka")
                await aio.stop()
                consumer = AIOKafkaConsumer("secure", auto_offset_reset="earliest", **kafka_shim.aiokafka_config())
                await consumer.start()
                try:
                    values = []
                    while len(values) < 2:
                        batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 60)
                        values += [m.value for records in batch.values() for m in records]
                    return values
                finally:
                    await consumer.stop()

            assert sorted(asyncio.run(round_trip())) == [b"from-aiokafka", b"from-kafka-python"]
    ''')
    result.assert_outcomes(passed=1)


def test_plugin_indirect_parameters_run_a_test_on_several_listeners(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        import pytest
        from confluent_kafka.admin import AdminClient

        @pytest.mark.parametrize("kafka_shim", [{}, {"listener": "SASL_SSL", "mechanism": "PLAIN"}, {"kafka_version": "1.0"}],
                                 indirect=True)
        def test_metadata(kafka_shim):
            kafka_shim.create_topic("seen")
            metadata = AdminClient(kafka_shim.confluent_config()).list_topics(timeout=30)
            assert "seen" in metadata.topics
    ''')
    result.assert_outcomes(passed=3)


def test_plugin_creates_replicated_topics_on_a_cluster(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        import pytest
        from confluent_kafka.admin import AdminClient
        from kafka_shim.shim.testing.handle import TopicCreationError

        @pytest.mark.kafka_shim(brokers=3)
        def test_replicas(kafka_shim):
            kafka_shim.create_topic("replicated", partitions=2, replication_factor=3)
            topic = AdminClient(kafka_shim.confluent_config()).list_topics(timeout=30).topics["replicated"]
            assert [len(p.replicas) for p in topic.partitions.values()] == [3, 3]
            with pytest.raises(TopicCreationError) as refused:
                kafka_shim.create_topic("too-many", replication_factor=4)
            assert refused.value.error_code == 38  # INVALID_REPLICATION_FACTOR, with Kafka's message
    ''')
    result.assert_outcomes(passed=1)


def test_plugin_session_fixture_keeps_state_between_tests(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        def test_first(kafka_shim_session):
            kafka_shim_session.create_topic("shared")

        def test_second(kafka_shim_session, kafka_shim):
            assert "shared" in kafka_shim_session.topics()
            assert "shared" not in kafka_shim.topics()  # the function fixture is another broker
            assert kafka_shim.bootstrap_servers != kafka_shim_session.bootstrap_servers
    ''')
    result.assert_outcomes(passed=2)


def test_plugin_reports_a_mistyped_marker_option_and_a_refused_topic(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        import pytest
        from kafka_shim.shim.testing.handle import TopicCreationError

        @pytest.mark.kafka_shim(listner="SSL")
        def test_typo(kafka_shim):
            pass

        def test_bad_name(kafka_shim):
            with pytest.raises(TopicCreationError, match="INVALID_TOPIC_EXCEPTION"):
                kafka_shim.create_topic("no spaces allowed")
            with pytest.raises(ValueError, match="no users"):
                kafka_shim.confluent_config("alice")
    ''', "--strict-markers")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*unknown option(s) listner*known:*listener*"])


def test_plugin_readme_example_runs_as_written(pytester: pytest.Pytester) -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = readme.index("## In a pytest suite")
    start = readme.index("```python\n", section) + len("```python\n")
    example = readme[start:readme.index("```", start)]
    assert len(example.splitlines()) == 10  # what the README promises
    pytester.makepyfile(test_readme=example)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_test_that_stops_the_broker_leaves_the_next_test_a_working_one(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
        import pytest

        def test_stops_it(kafka_shim):
            kafka_shim.stop()
            with pytest.raises(RuntimeError, match="not started again"):
                kafka_shim.start()

        def test_next_one(kafka_shim):
            kafka_shim.create_topic("after-a-stop")
            assert "after-a-stop" in kafka_shim.embedded.call(lambda: set(kafka_shim.embedded.broker.services.cluster.topics))
    ''')
    result.assert_outcomes(passed=2)

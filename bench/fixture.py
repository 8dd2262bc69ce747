"""What the pytest plugin costs a CI suite: fixture start, reset and teardown, and a 50-test suite on kafka-shim against
the same 50 tests on Apache Kafka 3.9 started once per session (issue 16).

    .venv/bin/python bench/fixture.py [--tests 50] [--repeat 5] [--without-kafka] [--workers 2 --workers 4]
        [--suite-repeat 5] [--compare NAME=PYTHON]

1. In this process: ``KafkaShim`` start to ready (the fixture's first use of a configuration), ``reset()`` (every
   later test), and stop; PLAINTEXT and SASL_PLAINTEXT with an authorizer; the median of ``--repeat``.
2. A generated suite of ``--tests`` tests, each a typical client test: create a topic with confluent-kafka's
   AdminClient, produce 10 records, consume them back with a consumer group. Run by pytest in a fresh process (its
   start and imports included), once with the ``kafka_shim`` fixture and once against a real Kafka 3.9 that
   ``scripts/real-kafka`` started before (its start-up timed on its own, as a session fixture would pay it). The
   same test bodies; on Kafka each test uses its own topic and group, since nothing resets it.

3. With ``--workers N`` (repeatable), the same suite on kafka-shim under pytest-xdist (``pytest -n N``): each worker
   process starts its own broker, so the tests need no unique names; the client's own waits then overlap. On a
   small shared machine one such run moves by a few tenths of a second: ``--suite-repeat R`` runs each R times and
   prints the median and the range, and ``--compare NAME=PYTHON`` (another install of kafka-shim, e.g. a checkout of
   an earlier commit in its own virtualenv with pytest-xdist) runs the same suites under that interpreter in
   alternating order, so that a change is measured against what it replaces in the same minutes.

The issue's target: the whole suite on kafka-shim faster than Kafka's start-up alone.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from real_kafka import start_real_kafka  # noqa: E402

CONFTEST = '''
import os
import pytest

@pytest.fixture
def bootstrap(request):
    if os.environ.get("BENCH_BOOTSTRAP"):
        return os.environ["BENCH_BOOTSTRAP"]
    return request.getfixturevalue("kafka_shim").bootstrap_servers
'''

TEST = '''
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

@pytest.mark.parametrize("n", range({tests}))
def test_client_round_trip(bootstrap, n):
    topic = f"bench-{{n}}"
    admin = AdminClient({{"bootstrap.servers": bootstrap}})  # kept: a collected client cancels its futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({{"bootstrap.servers": bootstrap, "linger.ms": 1}})
    for i in range(10):
        producer.produce(topic, f"{{i}}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({{"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}})
    consumer.subscribe([topic])
    values = []
    while len(values) < 10:
        message = consumer.poll(30)
        assert message is not None, "no record within 30 s"
        if message.error() is None:
            values.append(message.value())
    consumer.close()
    assert sorted(values) == [f"{{i}}".encode() for i in range(10)]
'''


def fixture_costs(repeat: int) -> None:
    from kafka_shim.shim.testing.handle import KafkaShim
    from kafka_shim.shim.testing.options import ShimOptions

    print(f"{'configuration':<34} {'start ms':>9} {'reset ms':>9} {'stop ms':>8}")
    for label, marker in (("PLAINTEXT", {}),
                          ("SASL_PLAINTEXT + authorizer", {"listener": "SASL_PLAINTEXT", "authorizer": True})):
        starts, resets, stops = [], [], []
        for _ in range(repeat):
            shim = KafkaShim(ShimOptions.from_marker(marker))
            began = time.perf_counter()
            shim.start()
            starts.append(time.perf_counter() - began)
            shim.create_topic("filled")
            began = time.perf_counter()
            shim.reset()
            resets.append(time.perf_counter() - began)
            began = time.perf_counter()
            shim.stop()
            stops.append(time.perf_counter() - began)
        print(f"{label:<34} {statistics.median(starts) * 1e3:9.1f} {statistics.median(resets) * 1e3:9.1f} "
              f"{statistics.median(stops) * 1e3:8.1f}")


def run_suite(directory: Path, bootstrap: str | None, workers: int = 0, python: str = sys.executable) -> float:
    env = {k: v for k, v in os.environ.items() if k != "BENCH_BOOTSTRAP"}
    if bootstrap:
        env["BENCH_BOOTSTRAP"] = bootstrap
    parallel = ["-n", str(workers)] if workers else []
    began = time.perf_counter()
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *parallel, str(directory)],
                          cwd=directory, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"the suite failed ({'Kafka' if bootstrap else 'kafka-shim'}):\n{done.stdout[:4000]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5, help="repetitions of the fixture timings (medians)")
    parser.add_argument("--without-kafka", action="store_true", help="leave out the real Kafka 3.9 suite")
    parser.add_argument("--workers", type=int, action="append", default=[],
                        help="also run the kafka-shim suite under pytest-xdist with this many workers (repeatable)")
    parser.add_argument("--suite-repeat", type=int, default=1, help="runs of each pytest-xdist suite (median, range)")
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=PYTHON",
                        help="also run the pytest-xdist suites under another interpreter's kafka-shim, alternating")
    args = parser.parse_args()
    pythons = {"this": sys.executable}
    for spec in args.compare:
        name, _, python = spec.partition("=")
        if not name or not python:
            parser.error(f"--compare {spec}: expected NAME=PYTHON")
        pythons[name] = python
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
    fixture_costs(args.repeat)
    with tempfile.TemporaryDirectory(prefix="kafka-shim-fixture-bench-") as tmp:
        suite = Path(tmp)
        (suite / "conftest.py").write_text(CONFTEST)
        (suite / "test_suite.py").write_text(TEST.format(tests=args.tests))
        shim_s = run_suite(suite, None)
        print(f"\n{args.tests}-test suite on kafka-shim (pytest process, the fixture, every test): {shim_s:.2f} s")
        for workers in args.workers:
            times: dict[str, list[float]] = {name: [] for name in pythons}
            for round_ in range(args.suite_repeat):
                order = list(pythons) if round_ % 2 == 0 else list(reversed(pythons))
                for name in order:
                    times[name].append(run_suite(suite, None, workers, pythons[name]))
            for name, runs in times.items():
                label = "" if len(pythons) == 1 else f" [{name}]"
                spread = f" (median of {len(runs)}: {min(runs):.2f}-{max(runs):.2f} s)" if len(runs) > 1 else ""
                print(f"  the same under pytest-xdist -n {workers} (a broker per worker){label}: "
                      f"{statistics.median(runs):.2f} s{spread}")
        if args.without_kafka:
            return 0
        starts = []
        for attempt in range(min(args.suite_repeat, 3)):  # start-up moves too; the suite itself runs once
            began = time.perf_counter()
            # The harness runs an authorizer; the suite is the plain (PLAINTEXT, anonymous) one, as on kafka-shim.
            kafka = start_real_kafka("allow.everyone.if.no.acl.found=true")
            starts.append(time.perf_counter() - began)
            try:
                if attempt == min(args.suite_repeat, 3) - 1:
                    kafka_s = run_suite(suite, kafka.plaintext)
            finally:
                kafka.stop()
        start_s = statistics.median(starts)
    spread = f" (median of {len(starts)}: {min(starts):.2f}-{max(starts):.2f} s)" if len(starts) > 1 else ""
    print(f"Apache Kafka 3.9: start-up {start_s:.2f} s{spread} (scripts/real-kafka start, jars cached), then the suite "
          f"{kafka_s:.2f} s = {start_s + kafka_s:.2f} s")
    verdict = "MEETS" if shim_s < start_s else "MISSES"
    print(f"whole suite on kafka-shim / Kafka's start-up alone: {shim_s / start_s:.2f}x -> {verdict} the target (< 1); "
          f"whole run {(start_s + kafka_s) / shim_s:.1f}x faster on kafka-shim")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

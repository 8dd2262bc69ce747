"""A CI job's whole life from cold, as separate processes: start the broker, create a topic, produce 10,000 records,
consume them, stop. kafka-shim against Apache Kafka 3.9 doing the same.

    .venv/bin/python bench/ci_scenario.py [--runs 3] [--records 10000] [--without-kafka]

kafka-shim: ``kafka-shim serve`` (in memory, no config file) until it prints its listener. Apache Kafka: KRaft
storage format and broker start through scripts/real-kafka with Kafka's stock JVM options, until its listeners
answer ApiVersions (its jars already resolved, as a CI cache would have them). Then the same client process for
both (confluent-kafka): CreateTopics (one partition), wait until the topic has a leader, produce the records with
acks=all, consume them with assign() from offset 0 and check every one arrived in order; then the broker is stopped
and waited for. Each phase is timed (client_process: the client's own interpreter start, imports and exit, the same
for both); the target is the whole run at least 10x faster than Kafka's. kafka-shim's bytecode is compiled first, as
`pip install` does (a checkout run with PYTHONDONTWRITEBYTECODE=1 would compile every module at each start).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from real_kafka import STOCK_JVM_OPTS, start_real_kafka  # noqa: E402
from startup import compile_bytecode  # noqa: E402

CLIENT = r"""
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, count = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
admin = AdminClient({"bootstrap.servers": bootstrap})
admin.create_topics([NewTopic("ci-topic", 1, 1)])["ci-topic"].result(timeout=60)
while True:
    meta = admin.list_topics("ci-topic", timeout=10).topics["ci-topic"]
    if meta.error is None and meta.partitions and meta.partitions[0].leader >= 0:
        break
    time.sleep(0.05)
t1 = time.perf_counter()
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
failed = []
for i in range(count):
    p.produce("ci-topic", b"record-%d" % i, key=b"%d" % i, on_delivery=lambda err, msg: err and failed.append(err))
    if i % 1000 == 0:
        p.poll(0)
assert p.flush(60) == 0 and not failed, failed[:3]
t2 = time.perf_counter()
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ci", "enable.auto.commit": False})
c.assign([TopicPartition("ci-topic", 0, 0)])
seen = 0
deadline = time.perf_counter() + 60
while seen < count and time.perf_counter() < deadline:
    for m in c.consume(1000, timeout=1.0):
        if m.error() is None:
            assert m.value() == b"record-%d" % seen, (m.value(), seen)
            seen += 1
c.close()
assert seen == count, f"consumed {seen} of {count}"
t3 = time.perf_counter()
print(json.dumps({"create_topic": t1 - t0, "produce": t2 - t1, "consume": t3 - t2}))
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


CPU: dict[str, list[float]] = {"client": [], "kafka-shim": []}  # CPU seconds of each process: less moved by other load than wall time


def client(bootstrap: str, records: int) -> dict[str, float]:
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CLIENT, bootstrap, str(records)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"the client failed against {bootstrap}:\n{proc.stderr[-3000:]}")
    phases = json.loads(proc.stdout)
    CPU["client"].append(_children_cpu() - cpu)
    return {"client_process": time.perf_counter() - started - sum(phases.values()), **phases}


def run_shim(records: int) -> dict[str, float]:
    cpu = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--override",
                             "listeners=PLAINTEXT://127.0.0.1:0", "--log-level", "warning"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    bootstrap = proc.stdout.readline().strip().split("://", 1)[1]
    started = time.perf_counter() - t0
    phases = client(bootstrap, records)
    t1 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    done = {"start": started, **phases, "stop": time.perf_counter() - t1, "total": time.perf_counter() - t0}
    CPU["kafka-shim"].append(_children_cpu() - cpu - CPU["client"][-1])
    return done


def run_kafka(records: int) -> dict[str, float]:
    t0 = time.perf_counter()
    kafka = start_real_kafka("authorizer.class.name=", jvm_opts=STOCK_JVM_OPTS)
    started = time.perf_counter() - t0
    phases = client(kafka.plaintext, records)
    t1 = time.perf_counter()
    kafka.stop()
    return {"start": started, **phases, "stop": time.perf_counter() - t1, "total": time.perf_counter() - t0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--without-kafka", action="store_true")
    args = parser.parse_args()
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, {args.records} records, {args.runs} runs each, "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    compile_bytecode()
    runners = [("kafka-shim", run_shim)] + ([] if args.without_kafka else [("apache-kafka", run_kafka)])
    medians: dict[str, dict[str, float]] = {}
    for name, runner in runners:
        runs = []
        for i in range(args.runs):
            runs.append(runner(args.records))
            print(f"  {name} run {i + 1}/{args.runs}: " + ", ".join(f"{k} {v:.2f} s" for k, v in runs[-1].items()), flush=True)
        medians[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print()
    print(f"{'median (s)':<14}" + "".join(f"{k:>16}" for k in medians["kafka-shim"]))
    for name, phases in medians.items():
        print(f"{name:<14}" + "".join(f"{v:>16.3f}" for v in phases.values()))
    print(f"CPU (user+sys) median: kafka-shim process {statistics.median(CPU['kafka-shim']):.3f} s, "
          f"client process {statistics.median(CPU['client']):.3f} s")
    if "apache-kafka" in medians:
        ratio = medians["apache-kafka"]["total"] / medians["kafka-shim"]["total"]
        verdict = "meets" if ratio >= 10 else "MISSES"
        print(f"\nwhole run: kafka-shim is {ratio:.1f}x faster than Apache Kafka 3.9 ({verdict} the 10x target)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())

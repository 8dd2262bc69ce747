"""Produce and fetch throughput and produce-to-consume latency: kafka-shim, librdkafka's mock cluster, Apache Kafka 3.9.

    .venv/bin/python bench/data_plane.py [--mb 64] [--min-seconds 4] [--repeat 3] [--quick] [--without-kafka]
                                         [--without-mock] [--only produce-1024 ...] [--compare NAME=PYTHON ...]
                                         [--retention-mb MIB]
                                         [--json out.json] [--chart out.png]

The load comes from librdkafka (confluent-kafka), a C client, in separate processes (one per producer), so no
Python load generator shares a GIL with what is measured. Every peer gets the same client settings (linger.ms 5,
batch.size 1,000,000, no idempotence, librdkafka's default in-flight limit, records handed over 1,000 per Python
call with produce_batch and delivery reports for failures only, so that the load generators' own CPU stays small
next to the server's). Shapes: 100 B and 1 KiB records,
acks=1 and acks=all, 1 and 8 producers, each writing its share of ``--mb`` MiB into one topic of 4 partitions, and
on until ``--min-seconds`` have passed (at 150 MB/s, 64 MiB of 1 KiB records take 0.4 s: too short to be stable).
Fetch: a topic of FETCH_MB MiB (4 partitions filled in turn, within the mock's retention: librdkafka's mock keeps at
most 5 MiB per partition and drops older batches, so reading back the produce topics would measure its losses)
read by one consumer with assign() from offset 0, again and again until ``--min-seconds`` have passed. Latency: one
producer sends a record every 2 ms while a consumer long-polls; send to receipt gives the percentiles.

Each repetition (``--repeat``) starts every server afresh, empty, and gives it the same workloads in the same
order; the tables show each shape's median over the repetitions. On a 2-core machine the load generators share the
CPU with the server under test (a server process that uses less CPU per byte leaves more to its clients), so
absolute figures are lower bounds; compare the ratios, measured in the same run. Each produce shape also reports the
server process's CPU time (all threads) per MiB of record values written, which moves less with the machine's load
than MB/s does: the cost of a byte to the server, whoever is faster at a given moment. Beside it, the producer
processes' own CPU per MiB ("clients"): the two together show how much of the machine a shape used.

A/B: ``--compare main=/work/main/.venv/bin/python`` adds a second kafka-shim, the one that interpreter imports (another
checkout's editable install), measured in the same repetitions, interleaved with this one. ``--only`` keeps some
workloads (``produce``, ``produce-100``, ``produce-1024``, ``fetch``, ``fetch-100``, ``fetch-1024``, ``latency``).
Memory: after the produce shapes of each record size, each kafka-shim's resident set (VmRSS) is read and set against
the bytes of records it then stores (records x size, batch and record overhead left out): "RSS per stored MiB".
Retention: by default every broker keeps all it is sent (kafka-shim and Kafka as their defaults say), while the mock
keeps at most 5 MiB per partition. ``--retention-mb 5`` gives the produce topics the same bound (``retention.bytes``,
1 MiB segments, retention checked every 250 ms from the start): memory freed by deleted segments is then reused, as a long-running
broker with retention reuses it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from real_kafka import STOCK_JVM_OPTS, start_real_kafka  # noqa: E402
from server import start_mock  # noqa: E402

# librdkafka's mock creates topics on first use with 4 partitions and has no CreateTopics controller; the same
# count everywhere keeps the shapes equal.
PARTITIONS = 4
# The fetch topic's size: 3 MiB of records a partition, below the 5 MiB the mock keeps of each (rdkafka_mock.c,
# max_size), so every server serves all of it.
FETCH_MB = 12

# One producer process: writes `count` records of `size` bytes, prints the seconds from the first send to the
# last acknowledgement (and how many failed).
PRODUCER = r"""
import json, sys, time
from confluent_kafka import Producer
bootstrap, topic, count, size, acks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
min_seconds, spread = float(sys.argv[6]), int(sys.argv[7])  # spread > 0: 1,000 records to each partition in turn
failed = 0
def report(err, msg):
    global failed
    if err is not None:
        failed += 1
p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "batch.size": 1000000,
              "queue.buffering.max.messages": 1000000, "queue.buffering.max.kbytes": 1048576, "enable.idempotence": False,
              "delivery.report.only.error": True, "on_delivery": report})
payload = b"x" * size
# Records go to librdkafka 1,000 at a time (produce_batch: one Python call, not one per record), so that the load
# generator's own CPU stays small next to the server's.
STEP = 1000
batch = [{"value": payload} for _ in range(STEP)]
p.list_topics(topic, timeout=30)
sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.readline()
start, cpu_start = time.perf_counter(), time.process_time()
i = 0
# At least `count` records, and on until `min_seconds` have passed: a fast server still gets a measurement long
# enough to be stable.
while i < count or time.perf_counter() - start < min_seconds:
    todo = batch
    while todo:
        if spread:  # each step to the next partition (produce_batch ignores a message's own "partition")
            p.produce_batch(topic, todo, partition=(i // STEP) % spread)
        else:
            p.produce_batch(topic, todo)
        # A full queue refuses the rest (each marked with "_error"): wait for room, then send those again.
        todo = [m for m in todo if m.pop("_error", None) is not None]
        p.poll(0.01 if todo else 0)
    i += STEP
left = p.flush(120)
print(json.dumps({"seconds": time.perf_counter() - start, "records": i, "failed": failed + left,
                  "cpu": time.process_time() - cpu_start}))
"""

# One consumer: reads the `count` records of every partition of the topic from offset 0 once untimed (connections,
# metadata, warm caches), then again from offset 0, timed, until `min_seconds` have passed (at least once).
CONSUMER = r"""
import json, sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, count, partitions, min_seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
# fetch.wait.max.ms: at the end of a pass the consumer's next Fetch finds nothing new and the server holds it this
# long; librdkafka keeps one Fetch in flight per broker, so the next pass waits for it (the default 500 ms would be
# most of a pass).
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-fetch", "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 1048576,
              "queued.max.messages.kbytes": 262144, "fetch.wait.max.ms": 10})
def one_pass():
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = size = 0
    last = time.perf_counter()
    # A server that dropped records leaves the count unreachable: stop 10 s after the last record arrived and report
    # what is missing. Asking for no more than is left: consume() waits its whole timeout for a larger number.
    while got < count and time.perf_counter() - last < 10:
        for m in c.consume(min(10000, count - got), timeout=1.0):
            if m.error() is None:
                got += 1
                size += len(m.value())
                last = time.perf_counter()
    c.unassign()
    return got, size
got, _ = one_pass()
records = size = passes = 0
start = time.perf_counter()
while got == count and (passes == 0 or time.perf_counter() - start < min_seconds):
    got, got_bytes = one_pass()
    records += got
    size += got_bytes
    passes += 1
elapsed = time.perf_counter() - start
c.close()
print(json.dumps({"seconds": elapsed, "records": records, "bytes": size, "passes": passes, "missing": count - got}))
"""

# Latency: a consumer long-polls the topic's partition 0 while a producer sends a timestamped record every 2 ms.
LATENCY = r"""
import json, struct, sys, threading, time
from confluent_kafka import Consumer, Producer, TopicPartition
bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency", "enable.auto.commit": False,
              "fetch.wait.max.ms": 500, "fetch.min.bytes": 1})
c.assign([TopicPartition(topic, 0, -1)])  # from the end
p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
p.list_topics(topic, timeout=30)
lat = []
def consume():
    deadline = time.perf_counter() + 120
    while len(lat) < count and time.perf_counter() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None and len(m.value()) == 8:
            lat.append(time.perf_counter() - struct.unpack(">d", m.value())[0])
reader = threading.Thread(target=consume)
c.poll(2.0)  # join the assignment before the first record
reader.start()
for _ in range(count):
    p.produce(topic, struct.pack(">d", time.perf_counter()), partition=0)
    p.poll(0)
    time.sleep(0.002)
p.flush(30)
reader.join()
c.close()
lat.sort()
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")
print(json.dumps({"received": len(lat), "p50_ms": pick(0.50), "p99_ms": pick(0.99)}))
"""


@dataclass
class Throughput:
    server: str
    kind: str  # produce | fetch
    size: int
    acks: str
    producers: int
    records: int
    seconds: float
    records_per_s: float
    mb_per_s: float
    failed: int = 0
    # The server process's CPU (all its threads) per MiB of record values written, when it can be read: steadier than
    # MB/s on a shared machine, where the load generators and the server take CPU from each other.
    cpu_ms_per_mib: float | None = None
    # The same split by the server's threads, as the OS names them (kafka-shim names its helper threads: shim-arenas
    # faults the log's memory in, shim-work_0 takes large requests off the loop; "main" is the process's first thread,
    # kafka-shim's event loop), user + system time each.
    cpu_threads_ms_per_mib: dict[str, float] | None = None
    # The producer processes' own CPU (librdkafka's threads and the Python driving it) per MiB: on a 2-core machine
    # client and server together use it up, so a server's CPU per MiB sets how fast its clients can go.
    client_cpu_ms_per_mib: float | None = None


@dataclass
class Latency:
    server: str
    received: int
    p50_ms: float
    p99_ms: float


def _python(script: str, *args: object, stdin: bool = False) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE if stdin else None, text=True)


def create_topic(bootstrap: str, topic: str, partitions: int, *, auto: bool = False,
                 config: dict[str, str] | None = None) -> None:
    """CreateTopics, or (``auto``: the mock) the topic's creation on first use by Metadata."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if not auto:
        for future in admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})], operation_timeout=30).values():
            future.result(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until every partition has a leader (Kafka creates them asynchronously)
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        if meta is not None and meta.error is None and len(meta.partitions) == partitions and all(
            p.leader >= 0 for p in meta.partitions.values()
        ):
            return
        time.sleep(0.1)
    raise SystemExit(f"{bootstrap}: topic {topic} has no leaders after 60 s")


def server_pid(proc: object) -> int | None:
    """The server's process id: kafka-shim and the mock run as child processes, Kafka as the JVM its oracle file names."""
    pid = getattr(proc, "pid", None)
    if pid is None and hasattr(proc, "directory"):
        try:
            pid = json.loads((Path(proc.directory) / "oracle.json").read_text())["pid"]
        except (OSError, ValueError, KeyError):
            return None
    return pid


def thread_cpu_seconds(pid: int | None) -> dict[str, float]:
    """User + system CPU seconds of each thread of a process, summed by the thread's OS name ("main" for the first
    thread); empty where /proc cannot be read."""
    out: dict[str, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (OSError, TypeError):
        return out
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = "main" if tid == str(pid) else stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of a process, all its threads (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce(server: str, bootstrap: str, topic: str, total_bytes: int, size: int, acks: str, producers: int,
            min_seconds: float, *, spread: int = 0, pid: int | None = None) -> Throughput:
    per_producer = max(total_bytes // size // producers, 1)
    procs = [_python(PRODUCER, bootstrap, topic, per_producer, size, acks, min_seconds, spread, stdin=True)
             for _ in range(producers)]
    for proc in procs:
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"{server}: a producer did not start")
    cpu_before, threads_before = cpu_seconds(pid), thread_cpu_seconds(pid)
    start = time.perf_counter()
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outs = [json.loads(proc.communicate(timeout=600)[0]) for proc in procs]
    elapsed = time.perf_counter() - start
    cpu_after, threads_after = cpu_seconds(pid), thread_cpu_seconds(pid)
    records = sum(o["records"] for o in outs)
    mib = records * size / 2**20
    cpu = (cpu_after - cpu_before) * 1000 / mib if cpu_before is not None and cpu_after is not None and mib else None
    threads = {name: round((spent - threads_before.get(name, 0.0)) * 1000 / mib, 3)
               for name, spent in threads_after.items() if mib} or None
    client = sum(o["cpu"] for o in outs) * 1000 / mib if mib else None
    return Throughput(server, "produce", size, acks, producers, records, round(elapsed, 3), records / elapsed,
                      mib / elapsed, sum(o["failed"] for o in outs), cpu, threads, client)


def fetch(server: str, bootstrap: str, size: int, min_seconds: float, *, auto: bool) -> Throughput:
    """Fill a fetch topic evenly (untimed), then read it back from offset 0 until ``min_seconds`` have passed."""
    topic = f"bench-fetch-{size}"
    create_topic(bootstrap, topic, PARTITIONS, auto=auto)
    filled = produce(server, bootstrap, topic, FETCH_MB * 2**20, size, "all", 1, 0.0, spread=PARTITIONS)
    if filled.failed:
        raise SystemExit(f"{server}: filling {topic} failed for {filled.failed} of {filled.records} records")
    count = filled.records
    out = json.loads(_python(CONSUMER, bootstrap, topic, count, PARTITIONS, min_seconds).communicate(timeout=600)[0])
    seconds = max(out["seconds"], 1e-9)  # no timed pass when the untimed one came back incomplete
    return Throughput(server, "fetch", size, "-", 1, out["records"], round(seconds, 3), out["records"] / seconds,
                      out["bytes"] / seconds / 2**20, out["missing"])


def latency(server: str, bootstrap: str, topic: str, count: int) -> Latency:
    out = json.loads(_python(LATENCY, bootstrap, topic, count).communicate(timeout=300)[0])
    return Latency(server, out["received"], round(out["p50_ms"], 3), round(out["p99_ms"], 3))


# --retention-mb: the brokers look for segments to delete every 250 ms from the start (Kafka's defaults: every
# 5 minutes, the first time 30 s after start, both longer than the produce shapes).
RETENTION_CHECK = ("log.retention.check.interval.ms=250", "log.initial.task.delay.ms=0")


def retention_topic_config(retention_mb: int | None) -> dict[str, str] | None:
    """The produce topics' configs under ``--retention-mb``: that many MiB kept per partition, in 1 MiB segments
    (retention deletes whole segments), as librdkafka's mock keeps at most 5 MiB per partition."""
    if retention_mb is None:
        return None
    return {"retention.bytes": str(retention_mb * 2**20), "segment.bytes": str(2**20)}


def start_shim(python: str = sys.executable, *overrides: str) -> tuple[subprocess.Popen, str]:
    """``python``: the interpreter whose kafka_shim is served (another checkout's venv for an A/B run)."""
    args = [python, "-m", "kafka_shim.shim.tools.cli", "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", "offsets.topic.replication.factor=1", "--log-level", "warning"]
    args += [arg for override in overrides for arg in ("--override", override)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip().split("://", 1)[1]


def rss_mib(proc: object) -> float | None:
    """The server process's resident set in MiB (Linux), or None where it cannot be read."""
    pid = getattr(proc, "pid", None)
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, TypeError):
        return None
    kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), None)
    return None if kib is None else kib / 1024


def _stop_process(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


Starter = Callable[[], tuple[object, str, Callable[[object], None]]]


def start_shim_server(python: str = sys.executable, *overrides: str) -> tuple[object, str, Callable[[object], None]]:
    proc, address = start_shim(python, *overrides)
    return proc, address, _stop_process  # type: ignore[return-value]


def start_mock_server() -> tuple[object, str, Callable[[object], None]]:
    proc, address = start_mock()
    return proc, address, _stop_process  # type: ignore[return-value]


def start_kafka(*overrides: str) -> tuple[object, str, Callable[[object], None]]:
    kafka = start_real_kafka("authorizer.class.name=", "auto.create.topics.enable=false", *overrides, jvm_opts=STOCK_JVM_OPTS)
    return kafka, kafka.plaintext, lambda k: k.stop()  # type: ignore[attr-defined]


WORKLOADS = ("produce", "produce-100", "produce-1024", "fetch", "fetch-100", "fetch-1024", "latency")


def _wanted(only: set[str] | None, kind: str, size: int | None = None) -> bool:
    return only is None or kind in only or (size is not None and f"{kind}-{size}" in only)


def measure(server: str, bootstrap: str, total_bytes: int, latency_count: int, min_seconds: float, *,
            only: set[str] | None = None, proc: object = None,
            topic_config: dict[str, str] | None = None) -> tuple[list[Throughput], Latency | None]:
    results: list[Throughput] = []
    run = 0
    auto = server == "librdkafka-mock"
    stored = 0  # bytes of record values the server holds
    for size in (100, 1024):
        topic = f"bench-{size}"
        if _wanted(only, "produce", size):
            create_topic(bootstrap, topic, PARTITIONS, auto=auto, config=topic_config)
            for acks in ("1", "all"):
                for producers in (1, 8):
                    run += 1
                    result = produce(server, bootstrap, topic, total_bytes, size, acks, producers, min_seconds,
                                     pid=server_pid(proc))
                    results.append(result)
                    stored += result.records * size
                    cpu = f", server CPU {result.cpu_ms_per_mib:.2f} ms/MiB" if result.cpu_ms_per_mib is not None else ""
                    split = {n: t for n, t in (result.cpu_threads_ms_per_mib or {}).items() if t >= 0.01}
                    if len(split) > 1:
                        cpu += " (" + ", ".join(f"{n} {t:.2f}" for n, t in sorted(split.items(), key=lambda i: -i[1])) + ")"
                    if result.client_cpu_ms_per_mib is not None:
                        cpu += f", producers {result.client_cpu_ms_per_mib:.2f} ms/MiB"
                    print(f"  [{run}] {server} produce {size} B acks={acks} x{producers}: {result.mb_per_s:.1f} MB/s "
                          f"{result.records_per_s:,.0f} rec/s{cpu}" + (f" ({result.failed} FAILED)" if result.failed else ""), flush=True)
            rss = rss_mib(proc) if server.startswith("kafka-shim") else None
            if rss is not None:
                print(f"  {server} RSS {rss:.0f} MiB holding {stored / 2**20:.0f} MiB of record values: "
                      f"{rss / (stored / 2**20):.2f} MiB of RSS per stored MiB", flush=True)
        if _wanted(only, "fetch", size):
            result = fetch(server, bootstrap, size, min_seconds, auto=auto)
            results.append(result)
            print(f"  {server} fetch {size} B: {result.mb_per_s:.1f} MB/s {result.records_per_s:,.0f} rec/s"
                  + (f" ({result.failed} MISSING)" if result.failed else ""), flush=True)
    lat = None
    if _wanted(only, "latency"):
        create_topic(bootstrap, "bench-latency", PARTITIONS, auto=auto)
        lat = latency(server, bootstrap, "bench-latency", latency_count)
        print(f"  {server} produce-to-consume latency: p50 {lat.p50_ms:.2f} ms, p99 {lat.p99_ms:.2f} ms ({lat.received} received)", flush=True)
    return results, lat


def _shape(r: Throughput) -> tuple[str, str, int, str, int]:
    return (r.server, r.kind, r.size, r.acks, r.producers)


def medians(runs: list[list[Throughput]]) -> list[Throughput]:
    """Each shape's median run by MB/s (an even count takes the lower middle), failures summed over the runs, and the
    median server CPU per MiB over the runs."""
    out = []
    for shape in dict.fromkeys(_shape(r) for r in runs[0]):
        same = sorted((r for run in runs for r in run if _shape(r) == shape), key=lambda r: r.mb_per_s)
        middle = same[(len(same) - 1) // 2]
        cpus = [r.cpu_ms_per_mib for r in same if r.cpu_ms_per_mib is not None]
        clients = [r.client_cpu_ms_per_mib for r in same if r.client_cpu_ms_per_mib is not None]
        names = {n for r in same for n in (r.cpu_threads_ms_per_mib or {})}
        threads = {n: statistics.median((r.cpu_threads_ms_per_mib or {}).get(n, 0.0) for r in same) for n in sorted(names)}
        out.append(Throughput(**{**asdict(middle), "failed": sum(r.failed for r in same),
                                 "cpu_ms_per_mib": statistics.median(cpus) if cpus else None,
                                 "cpu_threads_ms_per_mib": threads or None,
                                 "client_cpu_ms_per_mib": statistics.median(clients) if clients else None}))
    return out


def median_latency(found: list[Latency]) -> Latency:
    return Latency(found[0].server, min(lat.received for lat in found), statistics.median(lat.p50_ms for lat in found),
                   statistics.median(lat.p99_ms for lat in found))


def chart(results: list[Throughput], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    servers = sorted({r.server for r in results})
    shapes = sorted({(r.kind, r.size, r.acks, r.producers) for r in results}, key=lambda s: (s[0] != "produce", s[1], s[2], s[3]))
    fig, ax = plt.subplots(figsize=(12, 5))
    width = 0.8 / len(servers)
    for i, server in enumerate(servers):
        values = [next((r.mb_per_s for r in results if r.server == server and (r.kind, r.size, r.acks, r.producers) == s), 0)
                  for s in shapes]
        ax.bar([x + i * width for x in range(len(shapes))], values, width, label=server)
    ax.set_xticks([x + width * (len(servers) - 1) / 2 for x in range(len(shapes))])
    ax.set_xticklabels([f"{k}\n{s} B\nacks={a}\nx{p}" if k == "produce" else f"fetch\n{s} B" for k, s, a, p in shapes], fontsize=8)
    ax.set_ylabel("MB/s")
    ax.set_title("Produce and fetch throughput (librdkafka load, same machine)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="MiB written per produce shape (split among the producers)")
    parser.add_argument("--min-seconds", type=float, default=4.0,
                        help="each producer goes on past its share of --mb until this long has passed (stable figures)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of every server; the tables show the medians")
    parser.add_argument("--quick", action="store_true", help="8 MiB per shape, 300 latency samples, one repetition (a smoke run)")
    parser.add_argument("--without-kafka", action="store_true", help="leave out the real Apache Kafka broker")
    parser.add_argument("--without-mock", action="store_true", help="leave out librdkafka's mock cluster")
    parser.add_argument("--only", action="append", choices=WORKLOADS, help="run only these workloads (repeatable)")
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=PYTHON",
                        help="also measure the kafka-shim that this interpreter imports, as kafka-shim@NAME (A/B)")
    parser.add_argument("--retention-mb", type=int, metavar="MIB",
                        help="keep only this many MiB per partition of the produce topics (retention.bytes, 1 MiB "
                             "segments, retention checked every 250 ms), as the mock keeps 5; default: keep everything")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--chart", type=Path, help="draw the throughput bars into this PNG (needs matplotlib)")
    args = parser.parse_args()
    total = (8 if args.quick else args.mb) * 2**20
    latency_count = 300 if args.quick else 2000
    min_seconds = 0.0 if args.quick else args.min_seconds
    if args.quick:
        args.repeat = 1
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, {total // 2**20} MiB per produce shape "
          f"(at least {min_seconds:g} s each), "
          f"{args.repeat} repetition(s), load average {os.getloadavg()[0]:.1f}", flush=True)
    retention = RETENTION_CHECK if args.retention_mb is not None else ()
    topic_config = retention_topic_config(args.retention_mb)
    if topic_config:
        print(f"produce topics keep {args.retention_mb} MiB per partition: {topic_config}, brokers {', '.join(RETENTION_CHECK)}")
    servers: list[tuple[str, Starter]] = [("kafka-shim", lambda: start_shim_server(sys.executable, *retention))]
    for spec in args.compare:
        name, _, python = spec.partition("=")
        if not python:
            parser.error(f"--compare {spec}: expected NAME=PYTHON")
        servers.append((f"kafka-shim@{name}", lambda python=python: start_shim_server(python, *retention)))
    only = set(args.only) if args.only else None
    if not args.without_mock:
        servers.append(("librdkafka-mock", start_mock_server))
    if not args.without_kafka:
        servers.append(("apache-kafka", lambda: start_kafka(*retention)))
    runs: dict[str, list[list[Throughput]]] = {name: [] for name, _ in servers}
    found_latencies: dict[str, list[Latency]] = {name: [] for name, _ in servers}
    for repetition in range(args.repeat):
        print(f"repetition {repetition + 1} of {args.repeat}", flush=True)
        # Every other repetition in the reverse order: a shared machine's load drifts, and an A/B pair should
        # not always meet it in the same order.
        for name, starter in (servers if repetition % 2 == 0 else servers[::-1]):
            proc, address, stop = starter()
            try:
                found, lat = measure(name, address, total, latency_count, min_seconds, only=only, proc=proc,
                                     topic_config=topic_config)
                runs[name].append(found)
                if lat is not None:
                    found_latencies[name].append(lat)
            finally:
                stop(proc)
    results: list[Throughput] = [r for name, _ in servers for r in medians(runs[name])]
    latencies: list[Latency] = [median_latency(found_latencies[name]) for name, _ in servers if found_latencies[name]]
    print()
    print(f"medians of {args.repeat} repetition(s); MB/s of each repetition in brackets")
    print()
    print(f"{'server':<16} {'what':<8} {'size':>5} {'acks':>4} {'prod':>4} {'records':>9} {'rec/s':>11} {'MB/s':>8} "
          f"{'CPU ms/MiB':>10} {'clients':>8}")
    for r in results:
        each = sorted(x.mb_per_s for run in runs[r.server] for x in run if _shape(x) == _shape(r))
        cpu = f"{r.cpu_ms_per_mib:10.2f}" if r.cpu_ms_per_mib is not None else f"{'-':>10}"
        cpu += f" {r.client_cpu_ms_per_mib:8.2f}" if r.client_cpu_ms_per_mib is not None else f" {'-':>8}"
        print(f"{r.server:<16} {r.kind:<8} {r.size:>5} {r.acks:>4} {r.producers:>4} {r.records:>9} {r.records_per_s:>11,.0f} {r.mb_per_s:>8.1f} {cpu}"
              + f"  [{' '.join(f'{v:.1f}' for v in each)}]" + ("  INCOMPLETE" if r.failed else ""))
    print()
    split = [r for r in results if r.server.startswith("kafka-shim") and r.kind == "produce" and r.cpu_threads_ms_per_mib]
    if split:
        print("kafka-shim's CPU ms per MiB produced by thread (main: the event loop; shim-arenas: faulting the log's memory "
              "in; shim-work_0: requests taken off the loop), medians:")
        for r in split:
            shown = sorted(((n, t) for n, t in (r.cpu_threads_ms_per_mib or {}).items() if t >= 0.01), key=lambda i: -i[1])
            print(f"  {r.server:<16} {r.size:>5} B acks={r.acks:<3} x{r.producers}: " + ", ".join(f"{n} {t:.2f}" for n, t in shown))
        print()
    for lat in latencies:
        print(f"{lat.server:<16} latency p50 {lat.p50_ms:.2f} ms  p99 {lat.p99_ms:.2f} ms  ({lat.received} samples)")
    print()
    for peer in ("librdkafka-mock", "apache-kafka", *(name for name, _ in servers if name.startswith("kafka-shim@"))):
        pairs = [(r, next((p for p in results if p.server == peer and (p.kind, p.size, p.acks, p.producers) == (r.kind, r.size, r.acks, r.producers)), None))
                 for r in results if r.server == "kafka-shim"]
        # A shape either server did not complete (a lost record) has no ratio.
        skipped = [f"{r.kind} {r.size}B" for r, p in pairs if p is not None and (r.failed or p.failed or not p.mb_per_s)]
        pairs = [(r, p) for r, p in pairs if p is not None and not (r.failed or p.failed or not p.mb_per_s)]
        if pairs:
            ahead = sum(r.mb_per_s > p.mb_per_s for r, p in pairs)
            ratios = ", ".join(f"{r.kind} {r.size}B/{r.acks}/x{r.producers}: {r.mb_per_s / p.mb_per_s:.2f}x" for r, p in pairs)
            print(f"kafka-shim / {peer} MB/s: {ratios}  -> ahead in {ahead} of {len(pairs)} shapes"
                  + (f" (no ratio where a run was INCOMPLETE: {', '.join(skipped)})" if skipped else ""))
            cpus = [(r, p) for r, p in pairs if r.cpu_ms_per_mib and p.cpu_ms_per_mib]
            if cpus:
                print(f"  server CPU per MiB produced, kafka-shim / {peer}: "
                      + ", ".join(f"{r.size}B/{r.acks}/x{r.producers}: {r.cpu_ms_per_mib / p.cpu_ms_per_mib:.2f}x" for r, p in cpus))
    if args.json:
        args.json.write_text(json.dumps({"throughput": [asdict(r) for r in results], "latency": [asdict(lat) for lat in latencies],
                                         "runs": {name: [[asdict(r) for r in run] for run in found] for name, found in runs.items()}},
                                        indent=2))
    if args.chart:
        chart(results, args.chart)
        print(f"chart: {args.chart}")
    return 0 if all(r.failed == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

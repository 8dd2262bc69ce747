"""What ``kafka-shim audit`` costs: synthetic traces of 1M and 10M requests against 10k and 100k ACLs, the whole
command on Spark ``local[2]`` (JVM start included) versus the arrow engine in one process.

    .venv/bin/python bench/audit.py [--records 1000000 10000000] [--acls 10000 100000] [--shapes metadata produce_fetch
        many_principals] [--engines arrow spark] [--what-if] [--quick]

Shapes: ``metadata`` (90% Metadata v12 naming 1-3 topics, 200 principals), ``produce_fetch`` (45% Produce v9 of one
batch, 45% Fetch v12 of 1-2 topics, 10% Metadata), ``many_principals`` (10,000 principals, the metadata mix). ACL
sets: per principal a few LITERAL and many PREFIXED topic ACLs (``team<N>.``), some DENY, group READ ACLs.
Frames come from a pool of 4,000 distinct pre-encoded requests per shape (correlation ids, times and the order
vary per row), so the audit's per-body memo hits as it does on real Metadata/Fetch traffic; real Produce bodies
never repeat, which this pool flatters (the decode of a distinct Produce frame is measured separately and printed).
Each run is ``kafka-shim audit TRACE --acls A --out DIR --engine E --no-report`` in a fresh process, timed whole.
``--what-if`` adds ``--what-if B``, B being A without every tenth ACL: a change that flips about one question in
fifteen, so the flips' own cost (their effects, their files) shows.
The target of issue 15: 10M records against 100k ACLs within 60 s.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shim.protocol.framing import encode_request  # noqa: E402
from kafka_shim.protocol.messages import FetchRequest, MetadataRequest, ProduceRequest  # noqa: E402
from kafka_shim.protocol.records import build_batch, encode_batch  # noqa: E402
from kafka_shim.traces.format import SCHEMA, file_metadata  # noqa: E402

POOL = 4000
ROWS_PER_FILE = 1_000_000
ROW_GROUP = 131_072
TARGET_S = 60.0


def _topic(rng: random.Random, team: int) -> str:
    return f"team{team}.t{rng.randrange(20)}"


def _frame(api: str, rng: random.Random, teams: int) -> tuple[int, int, bytes]:
    topics = sorted({_topic(rng, rng.randrange(teams)) for _ in range(rng.randint(1, 3))})
    if api == "metadata":
        body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=t) for t in topics],
                               allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        key, version = 3, 12
    elif api == "produce":
        batch = encode_batch(build_batch([(None, os.urandom(100), [], 1_795_000_000_000) for _ in range(10)]))
        body = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topics[0], partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=batch)])])
        key, version = 0, 9
    else:
        body = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=50 << 20, isolation_level=0, session_id=0,
                            session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=t, partitions=[FetchRequest.FetchPartition(
                                partition=0, current_leader_epoch=-1, fetch_offset=rng.randrange(1000), last_fetched_epoch=-1,
                                log_start_offset=-1, partition_max_bytes=1 << 20)]) for t in topics[:2]],
                            forgotten_topics_data=[], rack_id="")
        key, version = 1, 12
    return key, version, encode_request(key, version, 0, body, client_id="bench")[4:]


def make_trace(out: Path, records: int, shape: str, seed: int = 7) -> None:
    rng = random.Random(seed)
    principals = 10_000 if shape == "many_principals" else 200
    teams = max(50, principals // 4)
    mix = {"metadata": [("metadata", 0.9), ("fetch", 0.1)], "many_principals": [("metadata", 0.9), ("fetch", 0.1)],
           "produce_fetch": [("produce", 0.45), ("fetch", 0.45), ("metadata", 0.1)]}[shape]
    apis = rng.choices([a for a, _ in mix], weights=[w for _, w in mix], k=POOL)
    pool = [_frame(api, rng, teams) for api in apis]
    pool_principals = [f"User:p{rng.randrange(principals)}" for _ in range(POOL)]
    pool_hosts = [f"10.0.{rng.randrange(4)}.{rng.randrange(250)}" for _ in range(POOL)]
    frames = pa.array([f for _, _, f in pool], pa.binary())
    keys = pa.array([k for k, _, _ in pool], pa.int16())
    versions = pa.array([v for _, v, _ in pool], pa.int16())
    nprng = np.random.default_rng(seed)
    start_us = 1_795_000_000_000_000
    out.mkdir(parents=True, exist_ok=True)
    day = out / "day=2026-11-23"
    day.mkdir(exist_ok=True)
    written = 0
    part = 0
    while written < records:
        n = min(ROWS_PER_FILE, records - written)
        idx = pa.array(nprng.integers(0, POOL, n))
        columns = {
            "kind": pa.array(["request"] * n, pa.string()),
            "time": pa.array(np.arange(written, written + n, dtype=np.int64) * 10 + start_us, pa.timestamp("us", tz="UTC")),
            "source": pa.array(["capture"] * n, pa.string()),
            "client_host": pa.array(pool_hosts, pa.string()).take(idx),
            "principal": pa.array(pool_principals, pa.string()).take(idx),
            "client_id": pa.array(["bench"] * n, pa.string()),
            "api_key": keys.take(idx), "api_version": versions.take(idx),
            "correlation_id": pa.array(np.arange(n, dtype=np.int32)),
            "request": frames.take(idx),
        }
        table = pa.table({f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in SCHEMA}, schema=SCHEMA)
        pq.write_table(table.replace_schema_metadata(file_metadata("capture")),
                       day / f"part-20261123T000000.{part:06d}Z-{part:05d}.parquet", row_group_size=ROW_GROUP)
        written += n
        part += 1


def make_acls(path: Path, count: int, shape: str, seed: int = 11) -> None:
    """A kafka-acls.sh --list style file: prefix-heavy topic ACLs for the shape's principals."""
    rng = random.Random(seed)
    principals = 10_000 if shape == "many_principals" else 200
    teams = max(50, principals // 4)
    blocks: dict[tuple[str, str, str], list[str]] = {}
    while sum(len(v) for v in blocks.values()) < count:
        p = f"User:p{rng.randrange(principals)}"
        team = rng.randrange(teams)
        roll = rng.random()
        if roll < 0.6:
            key = ("TOPIC", f"team{team}.", "PREFIXED")
        elif roll < 0.85:
            key = ("TOPIC", _topic(rng, team), "LITERAL")
        else:
            key = ("GROUP", f"g{team}", "LITERAL")
        op = rng.choice(["READ", "WRITE", "DESCRIBE"]) if key[0] == "TOPIC" else "READ"
        perm = "DENY" if rng.random() < 0.05 else "ALLOW"
        host = "*" if rng.random() < 0.9 else f"10.0.0.{rng.randrange(250)}"
        entry = f" \t(principal={p}, host={host}, operation={op}, permissionType={perm}) "
        entries = blocks.setdefault(key, [])
        if entry not in entries:
            entries.append(entry)
    text = "".join(f"Current ACLs for resource `ResourcePattern(resourceType={t}, name={n}, patternType={pt})`: \n"
                   + "\n".join(e) + "\n\n" for (t, n, pt), e in blocks.items())
    path.write_text(text, encoding="utf-8")


def without_every_tenth(acls: Path, out: Path) -> Path:
    """The ACL listing ``acls`` without every tenth ACL (the resources' header lines kept)."""
    entries = 0
    kept = []
    for line in acls.read_text().splitlines(keepends=True):
        if line.lstrip().startswith("(principal="):
            entries += 1
            if entries % 10 == 0:
                continue
        kept.append(line)
    out.write_text("".join(kept))
    return out


def run(trace: Path, acls: Path, engine: str, work: Path, what_if: Path | None = None) -> tuple[float, str]:
    out = work / f"out-{engine}"
    cmd = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "audit", str(trace), "--acls", str(acls), "--out", str(out),
           "--engine", engine, "--no-report", *(["--what-if", str(what_if)] if what_if else [])]
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return seconds, " ".join(cmd)


def produce_decode_cost() -> float:
    """µs per distinct Produce frame through the audit's question step (no memo hit)."""
    from kafka_shim.traces.audit.questions import _Memo

    rng = random.Random(3)
    frames = [_frame("produce", rng, 50)[2] for _ in range(2000)]
    memo = _Memo()
    started = time.perf_counter()
    for f in frames:
        memo.questions(f, 0, 9)
    return (time.perf_counter() - started) / len(frames) * 1e6


def ready_class_archive(work: Path) -> str:
    """Spark's class archive in place before any Spark run is timed (traces/audit/spark_session.py): the first audit
    on a machine records it as its JVM exits, which would bill one run for the recording and the next for the JVM
    still writing it. Says what it found or what recording it cost."""
    from kafka_shim.traces.audit.spark_session import archive_usable, class_archive

    archive = class_archive()
    if archive is None:
        return "off (KAFKA_SHIM_SPARK_CLASS_ARCHIVE or no java): every Spark run loads its classes unshared"
    if archive_usable(archive):
        return f"{archive} (every Spark run below maps it)"
    trace, acls = work / "trace-archive", work / "acls-archive.txt"
    make_trace(trace, 20_000, "metadata")
    make_acls(acls, 1_000, "metadata")
    seconds, _ = run(trace, acls, "spark", work)
    started = time.monotonic()
    while not archive_usable(archive) and time.monotonic() - started < 600:
        time.sleep(0.5)
    state = "recorded" if archive_usable(archive) else "NOT recorded in 600 s"
    return (f"{archive} {state} first: a 20k-record Spark audit took {seconds:.1f} s, the archive was written "
            f"{time.monotonic() - started:.1f} s after it (once per machine, JDK and Spark)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--acls", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--shapes", nargs="+", default=["metadata", "produce_fetch", "many_principals"])
    p.add_argument("--engines", nargs="+", default=["arrow", "spark"], choices=["arrow", "spark"])
    p.add_argument("--what-if", action="store_true", help="audit against A and a B without every tenth ACL of A")
    p.add_argument("--quick", action="store_true", help="20k records, 1k ACLs, one shape: a smoke test")
    args = p.parse_args()
    if args.quick:
        args.records, args.acls, args.shapes = [20_000], [1_000], ["metadata"]
    print(f"# {sys.executable} bench/audit.py; cpus={os.cpu_count()}; distinct Produce frame: {produce_decode_cost():.0f} µs each")
    print(f"{'shape':<16}{'records':>10}{'acls':>8}{'engine':>8}{'seconds':>10}{'records/s':>12}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        work = Path(tmp)
        if "spark" in args.engines:
            print(f"# Spark class archive: {ready_class_archive(work)}", flush=True)
        for shape in args.shapes:
            for records in args.records:
                trace = work / f"trace-{shape}-{records}"
                make_trace(trace, records, shape)
                for count in args.acls:
                    acls = work / f"acls-{shape}-{count}.txt"
                    if not acls.exists():
                        make_acls(acls, count, shape)
                    what_if = without_every_tenth(acls, work / f"b-{acls.name}") if args.what_if else None
                    for engine in args.engines:
                        seconds, cmd = run(trace, acls, engine, work, what_if)
                        rows.append((shape, records, count, engine, seconds))
                        print(f"{shape:<16}{records:>10}{count:>8}{engine:>8}{seconds:>10.1f}{records / seconds:>12.0f}", flush=True)
                import shutil

                shutil.rmtree(trace)
    print(f"# command: {cmd}")
    for shape, records, count, _, _ in {(r[0], r[1], r[2], None, None) for r in rows}:
        by = {r[3]: r[4] for r in rows if r[:3] == (shape, records, count)}
        if "arrow" in by and "spark" in by:
            faster = "spark" if by["spark"] < by["arrow"] else "arrow"
            print(f"# {shape} {records} records / {count} ACLs: {faster} faster ({by['arrow']:.1f} s arrow, {by['spark']:.1f} s spark)")
    big = [r for r in rows if r[1] >= 10_000_000 and r[2] >= 100_000]
    for r in big:
        print(f"# target {TARGET_S:.0f} s for 10M records vs 100k ACLs ({r[0]}, {r[3]}): {'met' if r[4] <= TARGET_S else 'NOT met'} ({r[4]:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

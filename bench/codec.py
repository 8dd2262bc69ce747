"""Codec throughput: kafka-shim (ours) vs kio vs kafka-python, on two large responses.

What is measured
----------------
Body-only encode (message object -> ``bytes``) and decode (``bytes`` -> message object), no
request/response header and no int32 size prefix, for two messages:

* **Metadata v12 response**: 3 brokers (racks, long hostnames), 1,000 topics x 12 partitions
  (realistic dotted topic names plus ``__consumer_offsets``/``__transaction_state`` marked internal,
  random v4 topic ids, replicas of 3 rotated over the brokers, a few shrunk ISRs and offline replicas,
  varied leader epochs, topic authorized operations not requested = INT32_MIN): 555,144 bytes.
* **DescribeAcls v3 response**: 250 resources x 4 ACLs = 1,000 bindings; TOPIC, GROUP,
  TRANSACTIONAL_ID and one CLUSTER resource; LITERAL and PREFIXED patterns; SPIFFE-like, Kerberos,
  TLS-DN and ``User:*`` principals; READ/WRITE/DESCRIBE/CREATE/ALL/... operations; ALLOW and some DENY: 59,509 bytes.

The same logical message is built, from one seeded plain-data description, in each library's own
types (ours: our classes with lists; kio: frozen dataclasses, tuples, ``ErrorCode``, ``timedelta``;
kafka-python: its JSON-schema classes, ``authorized_operations=None`` for INT32_MIN). Before any
timing the script checks, and exits with status 1 on any failure:

* the three encoders produce byte-for-byte identical bytes (the first difference is shown if not);
* each library decodes those common bytes, consumes all of them, and its result round-trips:
  ours ``decode(...) == original`` and ``encode(decode(...)) == bytes``; kio ``obj == original`` and
  re-encode equal; kafka-python ``to_dict()`` equal and ``encode()`` equal.

The calls timed are each library's ordinary public API, with per-class lookups hoisted:

* ours: ``msg.encode(version)`` and ``Cls.decode(data, version)``;
* kio: ``entity_writer(cls)(BytesIO(), msg)`` + ``getvalue()`` (pure Python) and
  ``entity_reader(cls)(data, 0)`` (a native Rust extension);
* kafka-python: ``msg.encode()`` and ``Cls.decode(data, version=v)`` (generated pure Python).

How it is timed
---------------
``time.perf_counter``. Each case is warmed up (codecs built, caches filled), then calibrated so one
sample loops the call enough times to last >= 50 ms (10 ms with ``--quick``); the reported time is
per call. Samples of the three libraries for the same (message, op) are taken round-robin, so machine
noise (2 vCPU, shared host) hits all three alike. The number of rounds adapts to a time budget so the
whole run stays well under 60 s: 7-25 rounds (3-5 with ``--quick``). Median and best per call are
reported. Ratios are paired: ``ours vs X`` is the median over rounds of ``X's sample / ours' sample``
from the same round, so > 1 means ours is faster; pairing cancels most of the load other processes
put on the machine, which the per-library medians in the table do not.

Garbage collection is disabled inside each timed sample (as ``timeit`` does) and ``gc.collect()``
runs between samples, identically for all three libraries. Decoding allocates ~50k objects per
Metadata message: with GC on, one decode sets off ~66 young and ~6 middle collections and a full one
every other call, which roughly doubles its time for ours and kafka-python alike, and the full
collections cost whatever else the process holds (here: three copies of the test messages), not the
codec. ``--gc`` keeps GC enabled while timing, for comparison.

Reproduce
---------
    cd /work/main && .venv/bin/python bench/codec.py            # full run, ~30 s
    cd /work/main && .venv/bin/python bench/codec.py --quick    # CI smoke, a few seconds
    cd /work/main && .venv/bin/python bench/codec.py --json /tmp/codec.json

Needs the ``bench`` extra (``kio==0.6.5``, ``kafka-python==3.0.12``). The verdict lines are
informational: the exit status is 0 unless a correctness check fails.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import io
import json
import math
import os
import platform
import random
import shlex
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

_STARTED = time.perf_counter()  # before the libraries are imported

from kafka.protocol.admin import DescribeAclsResponse as KpDescribeAcls  # noqa: E402
from kafka.protocol.metadata import MetadataResponse as KpMetadata  # noqa: E402
from kio.schema.describe_acls.v3 import response as kio_acls  # noqa: E402
from kio.schema.errors import ErrorCode  # noqa: E402
from kio.schema.metadata.v12 import response as kio_md  # noqa: E402
from kio.serial import entity_reader, entity_writer  # noqa: E402

from kafka_shim.protocol.messages import DescribeAclsResponse, MetadataResponse  # noqa: E402

INT32_MIN = -(2**31)
LIBS = ("ours", "kio", "kafka-python")
OPS = ("encode", "decode")
SEED = 20240611


# ---------------------------------------------------------------------------------------------
# The test messages, as plain data (one description, three builders)
# ---------------------------------------------------------------------------------------------


def metadata_spec(n_topics: int = 1000, n_partitions: int = 12, seed: int = SEED) -> dict[str, Any]:
    """A Metadata v12 response as plain data: snake_case field names, lists, ints, UUIDs."""
    rng = random.Random(seed)
    brokers = [
        {
            "node_id": n,
            "host": f"kafka-{n - 1}.kafka-headless.streaming.svc.cluster.local",
            "port": 9092,
            "rack": f"eu-west-1{az}",
        }
        for n, az in ((1, "a"), (2, "b"), (3, "c"))
    ]
    domains = ["orders", "payments", "inventory", "shipping", "customers", "fraud", "pricing", "search", "billing", "catalog"]
    entities = ["events", "commands", "snapshots", "changelog", "audit", "dlq", "retry-5m", "retry-1h", "enriched", "raw"]
    envs = ["prod", "prod", "prod", "staging"]
    names = ["__consumer_offsets", "__transaction_state"]
    seen = set(names)
    while len(names) < n_topics:
        name = f"{rng.choice(envs)}.{rng.choice(domains)}.{rng.choice(entities)}.v{rng.randint(1, 4)}"
        if name in seen:
            name = f"{name}-{rng.randint(0, 9999):04d}"
        if name not in seen:
            seen.add(name)
            names.append(name)
    topics = []
    for t, name in enumerate(names):
        partitions = []
        for p in range(n_partitions):
            first = (t + p) % 3
            replicas = [1 + (first + i) % 3 for i in range(3)]
            isr, offline = list(replicas), []
            roll = rng.random()
            if roll < 0.005:  # a replica's broker is down: out of ISR and offline
                offline = [replicas[2]]
                isr = replicas[:2]
            elif roll < 0.03:  # a follower fell behind
                isr = replicas[:2]
            partitions.append(
                {
                    "error_code": 0,
                    "partition_index": p,
                    "leader_id": replicas[0],
                    "leader_epoch": rng.randint(0, 60),
                    "replica_nodes": replicas,
                    "isr_nodes": isr,
                    "offline_replicas": offline,
                }
            )
        topics.append(
            {
                "error_code": 0,
                "name": name,
                "topic_id": uuid.UUID(bytes=rng.randbytes(16), version=4),
                "is_internal": name.startswith("__"),
                "partitions": partitions,
                "topic_authorized_operations": INT32_MIN,  # not requested
            }
        )
    return {
        "throttle_time_ms": 0,
        "brokers": brokers,
        "cluster_id": "5L6g3nShT-eMCtK--X86sw",
        "controller_id": 2,
        "topics": topics,
    }


def acls_spec(n_resources: int = 250, acls_per_resource: int = 4, seed: int = SEED) -> dict[str, Any]:
    """A DescribeAcls v3 response as plain data (resource/operation/permission codes as ints)."""
    rng = random.Random(seed + 1)
    topic, group, cluster, txn = 2, 3, 4, 5  # ResourceType
    literal, prefixed = 3, 4  # PatternType
    allow, deny = 3, 2  # AclPermissionType
    ops_for = {  # AclOperation codes that make sense per resource type
        topic: [3, 4, 8, 5, 10, 2, 6],  # READ WRITE DESCRIBE CREATE DESCRIBE_CONFIGS ALL DELETE
        group: [3, 8, 6],  # READ DESCRIBE DELETE
        txn: [4, 8],  # WRITE DESCRIBE
        cluster: [12, 9, 8, 10, 11],  # IDEMPOTENT_WRITE CLUSTER_ACTION DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
    }
    services = ["orders-api", "payments-svc", "inventory-sync", "shipping-worker", "fraud-scorer", "search-indexer"]
    principals = [f"User:spiffe://prod.example.com/ns/streaming/sa/{s}" for s in services]
    principals += ["User:alice@EXAMPLE.COM", "User:bob@EXAMPLE.COM", "User:*", "User:ANONYMOUS"]
    principals += ["User:CN=billing-service,OU=Platform,O=Example Corp,L=London,C=GB", "Group:data-engineering"]
    hosts = ["*", "*", "*", "*", "10.20.3.17", "10.20.4.112", "192.168.7.5"]
    domains = ["orders", "payments", "inventory", "shipping", "customers", "fraud", "pricing", "search", "billing", "catalog"]
    resources = [{"resource_type": cluster, "resource_name": "kafka-cluster", "pattern_type": literal}]
    seen = {(cluster, "kafka-cluster", literal)}
    while len(resources) < n_resources:
        roll = rng.random()
        rtype = topic if roll < 0.6 else group if roll < 0.85 else txn
        pattern = prefixed if rng.random() < 0.3 else literal
        dom = rng.choice(domains)
        if rtype == topic:
            name = (
                f"prod.{dom}."
                if pattern == prefixed
                else f"prod.{dom}.{rng.choice(['events', 'commands', 'audit'])}.v{rng.randint(1, 9)}"
            )
        elif rtype == group:
            name = f"cg-{dom}-" if pattern == prefixed else f"cg-{dom}-{rng.choice(services)}-{rng.randint(1, 99)}"
        else:
            name = f"txn-{dom}-" if pattern == prefixed else f"txn-{dom}-{rng.choice(services)}-{rng.randint(0, 999):03d}"
        key = (rtype, name, pattern)
        if key not in seen:
            seen.add(key)
            resources.append({"resource_type": rtype, "resource_name": name, "pattern_type": pattern})
    for r in resources:
        r["acls"] = [
            {
                "principal": rng.choice(principals),
                "host": rng.choice(hosts),
                "operation": rng.choice(ops_for[r["resource_type"]]),
                "permission_type": deny if rng.random() < 0.1 else allow,
            }
            for _ in range(acls_per_resource)
        ]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": resources}


# -- ours ------------------------------------------------------------------------------------


def build_ours_metadata(spec: dict[str, Any]) -> Any:
    mr = MetadataResponse
    return mr(
        throttle_time_ms=spec["throttle_time_ms"],
        brokers=[mr.MetadataResponseBroker(**b) for b in spec["brokers"]],
        cluster_id=spec["cluster_id"],
        controller_id=spec["controller_id"],
        topics=[
            mr.MetadataResponseTopic(
                **{k: v for k, v in t.items() if k != "partitions"},
                partitions=[
                    mr.MetadataResponsePartition(
                        **{k: (list(v) if isinstance(v, list) else v) for k, v in p.items()},
                    )
                    for p in t["partitions"]
                ],
            )
            for t in spec["topics"]
        ],
    )


def build_ours_acls(spec: dict[str, Any]) -> Any:
    dr = DescribeAclsResponse
    return dr(
        throttle_time_ms=spec["throttle_time_ms"],
        error_code=spec["error_code"],
        error_message=spec["error_message"],
        resources=[
            dr.DescribeAclsResource(
                **{k: v for k, v in r.items() if k != "acls"},
                acls=[dr.AclDescription(**a) for a in r["acls"]],
            )
            for r in spec["resources"]
        ],
    )


# -- kio -------------------------------------------------------------------------------------


def build_kio_metadata(spec: dict[str, Any]) -> Any:
    return kio_md.MetadataResponse(
        throttle_time=datetime.timedelta(milliseconds=spec["throttle_time_ms"]),
        brokers=tuple(kio_md.MetadataResponseBroker(**b) for b in spec["brokers"]),
        cluster_id=spec["cluster_id"],
        controller_id=spec["controller_id"],
        topics=tuple(
            kio_md.MetadataResponseTopic(
                error_code=ErrorCode(t["error_code"]),
                name=t["name"],
                topic_id=t["topic_id"],
                is_internal=t["is_internal"],
                topic_authorized_operations=t["topic_authorized_operations"],
                partitions=tuple(
                    kio_md.MetadataResponsePartition(
                        error_code=ErrorCode(p["error_code"]),
                        partition_index=p["partition_index"],
                        leader_id=p["leader_id"],
                        leader_epoch=p["leader_epoch"],
                        replica_nodes=tuple(p["replica_nodes"]),
                        isr_nodes=tuple(p["isr_nodes"]),
                        offline_replicas=tuple(p["offline_replicas"]),
                    )
                    for p in t["partitions"]
                ),
            )
            for t in spec["topics"]
        ),
    )


def build_kio_acls(spec: dict[str, Any]) -> Any:
    return kio_acls.DescribeAclsResponse(
        throttle_time=datetime.timedelta(milliseconds=spec["throttle_time_ms"]),
        error_code=ErrorCode(spec["error_code"]),
        error_message=spec["error_message"],
        resources=tuple(
            kio_acls.DescribeAclsResource(
                resource_type=r["resource_type"],
                resource_name=r["resource_name"],
                pattern_type=r["pattern_type"],
                acls=tuple(kio_acls.AclDescription(**a) for a in r["acls"]),
            )
            for r in spec["resources"]
        ),
    )


# -- kafka-python ----------------------------------------------------------------------------


def _kp_authorized_operations(bits: int) -> set[int] | None:
    # kafka-python holds authorized operations as a set of bit positions; None stands for INT32_MIN.
    return None if bits == INT32_MIN else {i for i in range(32) if bits >> i & 1}


def build_kp_metadata(spec: dict[str, Any]) -> Any:
    mr = KpMetadata
    return mr[12](
        throttle_time_ms=spec["throttle_time_ms"],
        brokers=[mr.MetadataResponseBroker(**b) for b in spec["brokers"]],
        cluster_id=spec["cluster_id"],
        controller_id=spec["controller_id"],
        topics=[
            mr.MetadataResponseTopic(
                error_code=t["error_code"],
                name=t["name"],
                topic_id=t["topic_id"],
                is_internal=t["is_internal"],
                authorized_operations=_kp_authorized_operations(t["topic_authorized_operations"]),
                partitions=[
                    mr.MetadataResponseTopic.MetadataResponsePartition(
                        **{k: (list(v) if isinstance(v, list) else v) for k, v in p.items()},
                    )
                    for p in t["partitions"]
                ],
            )
            for t in spec["topics"]
        ],
    )


def build_kp_acls(spec: dict[str, Any]) -> Any:
    dr = KpDescribeAcls
    return dr[3](
        throttle_time_ms=spec["throttle_time_ms"],
        error_code=spec["error_code"],
        error_message=spec["error_message"],
        resources=[
            dr.DescribeAclsResource(
                **{k: v for k, v in r.items() if k != "acls"},
                acls=[dr.DescribeAclsResource.AclDescription(**a) for a in r["acls"]],
            )
            for r in spec["resources"]
        ],
    )


# ---------------------------------------------------------------------------------------------
# Cases: per message, per library, an encode and a decode callable plus checks
# ---------------------------------------------------------------------------------------------


@dataclass
class LibCase:
    """One library's view of one message: the object, and zero-argument encode/decode calls."""

    lib: str
    obj: Any
    encode: Callable[[], bytes]
    decode_fn: Callable[[bytes], Any]  # data -> decoded object (consumption checked in verify)
    consumed: Callable[[bytes], int]  # data -> bytes the decoder consumed
    roundtrip: Callable[[Any, bytes], str | None]  # (decoded, data) -> None if fine, else why


@dataclass
class MessageCase:
    name: str
    data: bytes = b""
    libs: dict[str, LibCase] = field(default_factory=dict)


def _ours_case(obj: Any, cls: Any, version: int) -> LibCase:
    def roundtrip(back: Any, data: bytes) -> str | None:
        if back != obj:
            return "decode(data) != original object"
        if back.encode(version) != data:
            return "encode(decode(data)) != data"
        return None

    return LibCase(
        "ours",
        obj,
        encode=lambda: obj.encode(version),
        decode_fn=lambda data: cls.decode(data, version),
        consumed=lambda data: cls.decode_from(data, version, 0)[1],
        roundtrip=roundtrip,
    )


def _kio_encoder(obj: Any) -> Callable[[], bytes]:
    write = entity_writer(type(obj))

    def encode() -> bytes:
        buf = io.BytesIO()
        write(buf, obj)
        return buf.getvalue()

    return encode


def _kio_case(obj: Any) -> LibCase:
    cls = type(obj)
    read = entity_reader(cls)
    write = entity_writer(cls)

    def roundtrip(back: Any, data: bytes) -> str | None:
        if back != obj:
            return "reader(data) != original entity"
        buf = io.BytesIO()
        write(buf, back)
        if buf.getvalue() != data:
            return "writer(reader(data)) != data"
        return None

    return LibCase(
        "kio",
        obj,
        encode=_kio_encoder(obj),
        decode_fn=lambda data: read(data, 0)[0],
        consumed=lambda data: read(data, 0)[1],
        roundtrip=roundtrip,
    )


def _kp_case(obj: Any, cls: Any, version: int) -> LibCase:
    def roundtrip(back: Any, data: bytes) -> str | None:
        if back.to_dict() != obj.to_dict():
            return "decode(data).to_dict() != original.to_dict()"
        if back.encode() != data:  # a decoded object carries its version; encode(version=...) would raise
            return "decode(data).encode() != data"
        return None

    def consumed(data: bytes) -> int:
        # kafka-python silently ignores trailing bytes; check instead that one byte less fails.
        try:
            cls.decode(data[:-1], version=version)
        except Exception:
            return len(data)
        return -1

    return LibCase(
        "kafka-python",
        obj,
        encode=obj.encode,
        decode_fn=lambda data: cls.decode(data, version=version),
        consumed=consumed,
        roundtrip=roundtrip,
    )


def build_cases() -> list[MessageCase]:
    md, acls = metadata_spec(), acls_spec()
    meta = MessageCase("Metadata v12")
    meta.libs = {
        "ours": _ours_case(build_ours_metadata(md), MetadataResponse, 12),
        "kio": _kio_case(build_kio_metadata(md)),
        "kafka-python": _kp_case(build_kp_metadata(md), KpMetadata, 12),
    }
    dacl = MessageCase("DescribeAcls v3")
    dacl.libs = {
        "ours": _ours_case(build_ours_acls(acls), DescribeAclsResponse, 3),
        "kio": _kio_case(build_kio_acls(acls)),
        "kafka-python": _kp_case(build_kp_acls(acls), KpDescribeAcls, 3),
    }
    return [meta, dacl]


def _first_difference(a: bytes, b: bytes) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    lo = max(0, i - 16)
    return f"lengths {len(a)} vs {len(b)}; first difference at offset {i}: {a[lo : i + 16].hex(' ')} | {b[lo : i + 16].hex(' ')}"


def verify(case: MessageCase) -> list[str]:
    """Check byte equality across libraries and each library's decode round trip; return failures."""
    failures: list[str] = []
    encoded = {lib: lc.encode() for lib, lc in case.libs.items()}
    ref = encoded["ours"]
    for lib, data in encoded.items():
        if data != ref:
            failures.append(f"{case.name}: {lib} bytes differ from ours: {_first_difference(ref, data)}")
    case.data = ref
    for lib, lc in case.libs.items():
        try:
            back = lc.decode_fn(ref)
            why = lc.roundtrip(back, ref)
            used = lc.consumed(ref)
        except Exception as exc:
            failures.append(f"{case.name}: {lib} failed to decode the common bytes: {type(exc).__name__}: {exc}")
            continue
        if why:
            failures.append(f"{case.name}: {lib} round trip: {why}")
        if used != len(ref):
            failures.append(f"{case.name}: {lib} consumed {used} of {len(ref)} bytes")
    return failures


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------


@dataclass
class Settings:
    sample_target_s: float  # one sample lasts at least this long
    group_budget_s: float  # time for all rounds of one (message, op), three libraries together
    min_rounds: int
    max_rounds: int
    gc_enabled: bool


FULL = Settings(sample_target_s=0.05, group_budget_s=6.0, min_rounds=7, max_rounds=25, gc_enabled=False)
QUICK = Settings(sample_target_s=0.01, group_budget_s=0.6, min_rounds=3, max_rounds=5, gc_enabled=False)


@dataclass
class Result:
    message: str
    lib: str
    op: str
    size_bytes: int
    loops: int
    samples_ms: list[float]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def best_ms(self) -> float:
        return min(self.samples_ms)

    @property
    def mb_per_s(self) -> float:
        return self.size_bytes / (self.median_ms / 1e3) / 1e6

    @property
    def msgs_per_s(self) -> float:
        return 1e3 / self.median_ms


def _sample(fn: Callable[[], Any], loops: int, gc_enabled: bool) -> float:
    """Seconds per call over ``loops`` calls; GC off (unless asked) and collected beforehand."""
    gc.collect()
    if not gc_enabled:
        gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        elapsed = time.perf_counter() - t0
    finally:
        gc.enable()
    return elapsed / loops


def time_group(case: MessageCase, op: str, settings: Settings) -> list[Result]:
    """Warm up and calibrate each library, then take samples round-robin across libraries."""
    fns: dict[str, Callable[[], Any]] = {}
    for lib, lc in case.libs.items():
        if op == "encode":
            fns[lib] = lc.encode
        else:
            fns[lib] = (lambda f, d: lambda: f(d))(lc.decode_fn, case.data)
    loops: dict[str, int] = {}
    for lib, fn in fns.items():
        for _ in range(3):  # warm-up
            fn()
        once = min(_sample(fn, 1, settings.gc_enabled) for _ in range(3))
        loops[lib] = max(1, math.ceil(settings.sample_target_s / max(once, 1e-7)))
    # Estimate of one round, from a calibrated sample each.
    round_s = sum(_sample(fn, loops[lib], settings.gc_enabled) * loops[lib] for lib, fn in fns.items())
    rounds = int(min(settings.max_rounds, max(settings.min_rounds, settings.group_budget_s // max(round_s, 1e-9))))
    samples: dict[str, list[float]] = {lib: [] for lib in fns}
    order = list(fns)
    for r in range(rounds):
        for lib in order[r % len(order) :] + order[: r % len(order)]:  # rotate who goes first
            samples[lib].append(_sample(fns[lib], loops[lib], settings.gc_enabled) * 1e3)
    return [Result(case.name, lib, op, len(case.data), loops[lib], samples[lib]) for lib in fns]


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _ratio(results: list[Result], message: str, op: str, other: str) -> float:
    by = {r.lib: r for r in results if r.message == message and r.op == op}
    # Sample i of every library comes from round i (taken back to back), so compare within rounds.
    return statistics.median(x / o for x, o in zip(by[other].samples_ms, by["ours"].samples_ms, strict=True))


def ratios(results: list[Result]) -> dict[str, dict[str, dict[str, float]]]:
    """{message: {op: {"vs kio": x, "vs kafka-python": y}}}, paired per round; > 1 means ours is faster."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for message in dict.fromkeys(r.message for r in results):
        out[message] = {op: {f"vs {other}": _ratio(results, message, op, other) for other in LIBS[1:]} for op in OPS}
    return out


def verdicts(results: list[Result]) -> list[dict[str, Any]]:
    """The three targets per message, with the ratio each is judged on."""
    rows = []
    for message, by_op in ratios(results).items():
        enc = min(by_op["encode"].values())  # against the faster peer
        faster = min(LIBS[1:], key=lambda lib: by_op["encode"][f"vs {lib}"])
        rows.append({"message": message, "target": f"encode >= 2x the faster peer ({faster})", "ratio": enc, "pass": enc >= 2.0})
        dkp = by_op["decode"]["vs kafka-python"]
        rows.append({"message": message, "target": "decode >= 2x kafka-python", "ratio": dkp, "pass": dkp >= 2.0})
        dkio = by_op["decode"]["vs kio"]
        rows.append(
            {"message": message, "target": "decode vs kio (native Rust decoder; reported only)", "ratio": dkio, "pass": None}
        )
    return rows


def format_table(results: list[Result]) -> str:
    rat = ratios(results)
    header = [
        "message",
        "library",
        "op",
        "median ms",
        "best ms",
        "MB/s",
        "msgs/s",
        "ours vs kio",
        "ours vs kafka-python",
        "loops x rounds",
    ]
    rows = []
    for r in results:
        vs_kio = vs_kp = ""
        if r.lib == "ours":
            vs_kio = f"{rat[r.message][r.op]['vs kio']:.2f}x"
            vs_kp = f"{rat[r.message][r.op]['vs kafka-python']:.2f}x"
        rows.append(
            [
                r.message,
                r.lib,
                r.op,
                f"{r.median_ms:.3f}",
                f"{r.best_ms:.3f}",
                f"{r.mb_per_s:.1f}",
                f"{r.msgs_per_s:,.0f}",
                vs_kio,
                vs_kp,
                f"{r.loops} x {len(r.samples_ms)}",
            ]
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    left = {0, 1, 2}

    def line(cells: list[str]) -> str:
        return (
            "| "
            + " | ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
            + " |"
        )

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(row) for row in rows)])


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _fmt_load(load: list[float] | None) -> str:
    return "n/a" if load is None else " ".join(f"{x:.2f}" for x in load)


def environment(argv: list[str], settings: Settings, mode: str) -> dict[str, Any]:
    def version(dist: str) -> str:
        try:
            return importlib_metadata.version(dist)
        except importlib_metadata.PackageNotFoundError:
            return "not installed"

    return {
        "command": f"cd {shlex.quote(os.getcwd())} && {shlex.join(argv)}",
        "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        "platform": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "versions": {"kafka-shim": version("kafka-shim"), "kio": version("kio"), "kafka-python": version("kafka-python")},
        "mode": mode,
        "settings": asdict(settings),
        "load_average_start": _load_average(),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return the exit status (1 if a correctness check failed)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples (CI smoke test; a few seconds)")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the results and environment as JSON")
    parser.add_argument("--gc", action="store_true", help="keep the garbage collector enabled while timing")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.gc:
        settings = Settings(**{**asdict(settings), "gc_enabled": True})

    env = environment(getattr(sys, "orig_argv", [sys.executable, *sys.argv]), settings, "quick" if args.quick else "full")
    print(f"$ {env['command']}")
    print(f"Python {env['python']}; {env['platform']}")
    print("Versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items()))
    print(
        f"Mode: {env['mode']}; sample >= {settings.sample_target_s * 1e3:.0f} ms, "
        f"{settings.min_rounds}-{settings.max_rounds} round-robin rounds per case; "
        f"GC {'enabled' if settings.gc_enabled else 'disabled'} while timing"
    )
    print(f"Load average at start: {_fmt_load(env['load_average_start'])} (other processes share these CPUs)")

    cases = build_cases()
    failures = [f for case in cases for f in verify(case)]
    if failures:
        print("\nCORRECTNESS CHECK FAILED - not timing:", file=sys.stderr)
        for f in failures:
            print(f"  * {f}", file=sys.stderr)
        return 1
    for case in cases:
        print(f"Checked {case.name}: {len(case.data):,} bytes, identical from all three encoders; every decoder round-trips")
    print()

    results = [r for case in cases for op in OPS for r in time_group(case, op, settings)]
    print(format_table(results))
    print()
    verdict_rows = verdicts(results)
    for v in verdict_rows:
        status = "INFO" if v["pass"] is None else ("PASS" if v["pass"] else "FAIL")
        print(f"{status:4}  {v['message']:<16} {v['target']}: ours is {v['ratio']:.2f}x")
    elapsed = time.perf_counter() - _STARTED
    load_end = _load_average()
    print(f"\nTotal time {elapsed:.1f} s; load average at end: {_fmt_load(load_end)}.")
    print("Ratios are medians over rounds of peer time / ours in the same round; > 1 means ours is faster.")

    if args.json:
        payload = {
            **env,
            "elapsed_s": elapsed,
            "load_average_end": load_end,
            "messages": {c.name: {"size_bytes": len(c.data)} for c in cases},
            "results": [
                {**asdict(r), "median_ms": r.median_ms, "best_ms": r.best_ms, "mb_per_s": r.mb_per_s, "msgs_per_s": r.msgs_per_s}
                for r in results
            ],
            "ratios": ratios(results),
            "verdicts": verdict_rows,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"Wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

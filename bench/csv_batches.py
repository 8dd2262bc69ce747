"""CPU the audit's CSV writer spends per batch size (``results.CSV_WRITE_OPTIONS``), on the audit's own tables.

The CSV writer formats ``batch_size`` rows at a time: each column to text, then the rows put together from the
columns. Small batches pay per-batch work; large ones put rows together from text that no longer fits in the CPU's
cache. This audits synthetic traces of each ``bench/audit.py`` shape in memory (the arrow engine, no files), then
writes the decisions (and, with a what-if, the flips) through ``results.csv_view`` and ``pyarrow.csv.CSVWriter`` to
/dev/null with each batch size, the sizes interleaved per round; the minimum CPU time over rounds counts (noise only
adds). Every size must give the same bytes (checked once per table).

    .venv/bin/python bench/csv_batches.py [--requests 200000] [--rounds 3] [--sizes 1024 8192 65536]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))
import audit as audit_bench

from kafka_shim.traces.audit import engine_arrow
from kafka_shim.traces.audit.acl_sets import load_acl_set
from kafka_shim.traces.audit.decide import AuthorizerSettings
from kafka_shim.traces.audit.results import CSV_WRITE_OPTIONS, csv_schema, csv_view

SIZES = (1024, 4096, 8192, 16384, 65536)


def tables(work: Path, shape: str, requests: int, what_if: bool) -> dict[str, pa.Table]:
    """The audit's decisions (and flips) of a synthetic trace of ``shape``, in memory."""
    trace, acls = work / f"{shape}-trace", work / f"{shape}-acls.txt"
    audit_bench.make_trace(trace, requests, shape)
    audit_bench.make_acls(acls, 10_000, shape)
    b = load_acl_set(str(audit_bench.without_every_tenth(acls, work / f"{shape}-b.txt"))) if what_if else None
    res = engine_arrow.run(trace, load_acl_set(str(acls)), b, AuthorizerSettings())
    out = {"decisions": res.decisions}
    if what_if:
        out["flips"] = res.flips
    return out


def write_cpu(table: pa.Table, batch_size: int, target: str = "/dev/null") -> float:
    """Thread CPU seconds to write ``table`` as the audit writes its CSV."""
    started = time.thread_time()
    writer = pacsv.CSVWriter(target, csv_schema(table.schema), write_options=pacsv.WriteOptions(batch_size=batch_size))
    writer.write_table(csv_view(table))
    writer.close()
    return time.thread_time() - started


def digest(table: pa.Table, batch_size: int, work: Path) -> str:
    path = work / "digest.csv"
    write_cpu(table, batch_size, str(path))
    sha = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
    path.unlink()
    return sha.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=200_000, help="requests per synthetic trace")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--shapes", nargs="+", default=["metadata", "produce_fetch", "many_principals"])
    a = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    chosen = CSV_WRITE_OPTIONS.batch_size
    print(f"# µs of CPU per 1,000 rows written, min of {a.rounds} rounds; results.CSV_WRITE_OPTIONS uses {chosen:,}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="csv-batches-") as tmp:
        work = Path(tmp)
        for shape in a.shapes:
            for what_if in (False, True):
                for name, table in tables(work, shape, a.requests, what_if).items():
                    if not table.num_rows:
                        continue
                    digests = {digest(table, size, work) for size in a.sizes}
                    best = dict.fromkeys(a.sizes, float("inf"))
                    for _ in range(a.rounds):
                        for size in a.sizes:
                            best[size] = min(best[size], write_cpu(table, size))
                    per_k = {size: best[size] / table.num_rows * 1e9 for size in a.sizes}
                    label = f"{shape}{' what-if' if what_if else ''} {name} ({table.num_rows:,} rows)"
                    cells = "  ".join(f"{size:>6,}: {us:7.1f}" for size, us in per_k.items())
                    ratio = f"  {per_k[max(a.sizes)] / per_k[chosen]:.2f}x at {max(a.sizes):,}" if chosen in per_k else ""
                    same = "" if len(digests) == 1 else "  OUTPUT DIFFERS BETWEEN SIZES"
                    failed |= len(digests) != 1
                    print(f"{label:45s} {cells}{ratio}{same}", flush=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S')}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The authorizer's first ask, per shape, and the same against another copy of authorizer/ in the same run (issue 15).

bench/authorizer.py measures everything (load, memory, Kafka's own authorizer) for one shape; this measures only
what the shapes target: µs per cold ``authorize`` (memo empty; the bench's 100k-request stream, so repeated
questions in it are memo hits as in the bench) at one ACL count, on every shape. With ``--base DIR`` (a copy of an
older authorizer/, e.g. ``git archive main authorizer | tar -x -C /tmp/base``) each pass is run on both, the
two interleaved, in fresh processes, so load from other processes hits both alike; the minimum over passes is
reported (noise only ever adds time).

    .venv/bin/python bench/authorizer_cold.py                          # every shape at 100k
    .venv/bin/python bench/authorizer_cold.py --base /tmp/base --passes 5
    .venv/bin/python bench/authorizer_cold.py --shape own-prefixes --profile   # cProfile of one cold pass

The decisions of both copies are compared request by request; any difference is an error.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import json
import logging
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _use_authorizer(directory: Path) -> None:
    """Make ``kafka_shim.authorizer`` the package in ``directory`` (before anything imports it)."""
    import kafka_shim

    spec = importlib.util.spec_from_file_location("kafka_shim.authorizer", directory / "__init__.py",
                                                  submodule_search_locations=[str(directory)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["kafka_shim.authorizer"] = module
    kafka_shim.authorizer = module  # type: ignore[attr-defined]
    spec.loader.exec_module(module)


def child(directory: Path, shape: str, n: int, passes: int, profile: bool) -> dict:
    """One process: load the shape into the authorizer in ``directory``; cold passes; answers' digest."""
    _use_authorizer(directory)
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    sys.path.insert(0, str(ROOT / "bench"))
    import authorizer as bench

    w = bench.generate(n, 100_000, 10, 679, shape=shape)
    az = bench.new_authorizer(bench.AuditLog())
    load_cpu, _ = bench.load(az, bench.to_bindings(w.acls), 100)
    gc.collect()
    answers = [az.authorize(*r) for r in w.requests]
    if profile:
        bench.bump_generation(az)
        prof = cProfile.Profile()
        prof.enable()
        for r in w.requests:
            az.authorize(*r)
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(12)
    best = float("inf")
    for _ in range(passes):
        bench.bump_generation(az)
        best = min(best, 1e6 / bench.pass_authorize(az, w.requests).cpu)
    return {"us": best, "load_s": load_cpu, "answers": "".join("1" if a else "0" for a in answers)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", action="append", help="one shape (repeatable; default: every shape)")
    ap.add_argument("--acls", type=int, default=100_000)
    ap.add_argument("--passes", type=int, default=3, help="cold passes per process (the minimum counts)")
    ap.add_argument("--rounds", type=int, default=2, help="processes per copy and shape, interleaved")
    ap.add_argument("--base", type=Path, help="another authorizer/ directory to compare with")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one cold pass (this copy only)")
    ap.add_argument("--child", nargs=2, metavar=("DIR", "SHAPE"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(Path(a.child[0]), a.child[1], a.acls, a.passes, a.profile)))
        return 0
    sys.path.insert(0, str(ROOT / "bench"))
    import authorizer_shapes

    copies = {"this": ROOT / "authorizer"}
    if a.base:
        copies["base"] = a.base.resolve()
    failed = False
    for shape in a.shape or authorizer_shapes.SHAPES:
        best: dict[str, float] = {}
        answers: dict[str, str] = {}
        loads: dict[str, float] = {}
        for _ in range(1 if a.profile else a.rounds):
            for label, directory in copies.items():
                cmd = [sys.executable, __file__, "--child", str(directory), shape, "--acls", str(a.acls), "--passes", str(a.passes)]
                if a.profile and label == "this":
                    cmd.append("--profile")
                out = json.loads(subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE).stdout)
                best[label] = min(best.get(label, float("inf")), out["us"])
                loads[label] = min(loads.get(label, float("inf")), out["load_s"])
                answers[label] = out["answers"]
        line = f"{shape:20s} this {best['this']:6.2f} µs/first ask (load {loads['this']:.2f}s)"
        if "base" in best:
            line += f"   base {best['base']:6.2f} µs (load {loads['base']:.2f}s)   {best['base'] / best['this']:.2f}x"
            if answers["base"] != answers["this"]:
                line += "   DECISIONS DIFFER"
                failed = True
        print(line, flush=True)
    print(f"# {a.acls:,} ACLs; min of {a.passes} passes x {a.rounds} processes; {time.strftime('%H:%M:%S')}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""kill -9 a process writing ACL batches; every acknowledged batch must survive, and no batch may be half applied."""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

from kafka_shim.authorizer import AclBinding
from kafka_shim.authorizer.sqlite_store import SqliteAclStore

HERE = Path(__file__).resolve().parent
CHILD = HERE / "kill9_child.py"
ROUNDS = 5
ROUND_SECONDS = (0.3, 1.5)  # how long each child writes before SIGKILL, at random (some 50-400 batches here)
TIME_BUDGET = 12.0  # no new round starts after this many seconds (a loaded machine runs fewer rounds, never overruns)


def _child_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kill9_child", CHILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kill9_child = _child_module()


class Replay:
    """States after batches 0..n-1, computed incrementally."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.states: list[set[AclBinding]] = [set()]

    def after(self, n: int) -> set[AclBinding]:
        while len(self.states) <= n:
            seq = len(self.states) - 1
            self.states.append(kill9_child.replay([kill9_child.batch(seq, self.mode)], self.states[-1]))
        return self.states[n]


def _run_and_kill(mode: str, db: Path, start: int, seconds: float) -> list[int]:
    """Start a child at batch `start`, SIGKILL it `seconds` after it is ready; the batch numbers it acknowledged."""
    child = subprocess.Popen([sys.executable, str(CHILD), mode, str(db), str(start)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=HERE.parents[1])
    assert child.stdout is not None and child.stderr is not None
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            if line.strip() == "ready":
                ready.set()
            else:
                lines.append(line)
        ready.set()  # EOF: the child died

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(15), "child never became ready"
        time.sleep(seconds)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
        reader.join(10)
    stderr = child.stderr.read()
    child.stderr.close()
    assert child.returncode == -signal.SIGKILL, f"child exited by itself ({child.returncode}): {stderr}"
    # Every complete line was acknowledged; a torn last line cannot happen (one short write per line) but is not counted.
    acked = [int(line) for line in lines if line.endswith("\n")]
    assert acked == list(range(start, start + len(acked))), "the child acknowledged batches out of order"
    return acked


@pytest.mark.parametrize("mode", ["authorizer", "store"])
def test_kill9_never_loses_an_acknowledged_batch_nor_half_applies_one(tmp_path: Path, mode: str) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    db = tmp_path / "acls.db"
    replay = Replay(mode)
    landed = 0  # the store holds exactly batches 0..landed-1
    began = time.monotonic()
    report: list[str] = []
    for round_no in range(ROUNDS):
        if round_no >= 2 and time.monotonic() - began > TIME_BUDGET:
            break
        acked = _run_and_kill(mode, db, landed, rng.uniform(*ROUND_SECONDS))
        k = landed + len(acked)  # batches 0..k-1 acknowledged; batch k may have been in flight
        with SqliteAclStore(db) as store:
            loaded = store.load()
        state = set(loaded)
        assert len(state) == len(loaded), "the store returned a duplicate"
        if state == replay.after(k):
            outcome, landed = "in-flight batch absent", k
        elif state == replay.after(k + 1):
            outcome, landed = "in-flight batch landed", k + 1
        else:
            diffs = [f"vs replay({n}): missing {sorted(map(str, replay.after(n) - state))[:3]}, "
                     f"unexpected {sorted(map(str, state - replay.after(n)))[:3]}" for n in (k, k + 1)]
            pytest.fail(f"seed {seed} round {round_no}: after acknowledging batches up to {k - 1}, the store matches neither "
                        f"replay({k}) nor replay({k + 1}) (batch {k}: {[list(map(str, part)) for part in kill9_child.batch(k, mode)]}); " + "; ".join(diffs))
        report.append(f"round {round_no}: {len(acked)} acked, {outcome}, {len(state)} ACLs")
    assert landed >= len(report), f"seed {seed}: too few batches to mean anything: {report}"
    print(f"\n{mode} seed {seed}: " + "; ".join(report))

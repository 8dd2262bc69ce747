"""bench/audit.py --quick runs end to end (a synthetic trace and ACL set, the whole audit command) and prints its
table; the real figures come from running it without --quick."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_bench_quick_arrow():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "audit.py"), "--quick", "--engines", "arrow"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("metadata")]
    assert len(rows) == 1 and rows[0][:4] == ["metadata", "20000", "1000", "arrow"]
    assert float(rows[0][5]) > 0
    assert "# command:" in done.stdout and "--engine arrow" in done.stdout

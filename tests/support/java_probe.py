"""What one of the Java probes of tests/oracle (StreamsProbe, ConnectProbe) printed: its JSON events, its stderr (WARN
and above) and where its INFO log went, for the test peers that run them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path


class ProbeRun:
    """One probe process: its JSON events (``{"event": ...}`` lines of its stdout), its stderr and its INFO log file."""

    def __init__(self, proc: subprocess.CompletedProcess, log: Path) -> None:
        self.returncode = proc.returncode
        self.stderr = proc.stderr
        self.log = log
        self.events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    def __repr__(self) -> str:
        events = "\n".join(json.dumps(e)[:800] for e in self.events)
        return f"exit {self.returncode}\n{events}\nstderr:\n{self.stderr[-4000:]}\n(log: {self.log})"

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["event"] == kind]

    def one(self, kind: str, **where: object) -> dict:
        found = [e for e in self.of(kind) if all(e.get(k) == v for k, v in where.items())]
        assert len(found) == 1, f"expected one {kind} {where}: {self!r}"
        return found[0]

    def lines(self, level: str) -> list[str]:
        """The stderr lines the probe's log layout writes at ``level`` ("[time] LEVEL ...")."""
        return [line for line in self.stderr.splitlines() if re.match(rf"\[[^]]*\] {level} ", line)]

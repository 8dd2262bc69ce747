"""Every module logs through kafka-shim's library logger, so that a library user sees nothing unless they configure
logging (authorizer/library_logging.py); a bare structlog.get_logger would print through unconfigured structlog."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("authorizer", "protocol", "shim", "traces")
ALLOWED = {Path("authorizer/library_logging.py")}


def test_no_module_gets_a_bare_structlog_logger() -> None:
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative in ALLOWED:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"structlog\.(get_logger|getLogger|wrap_logger)\(", line):
                    offenders.append(f"{relative}:{number}: {line.strip()}")
    assert not offenders, "use get_logger from kafka_shim.authorizer.library_logging (or shim.config.logging):\n" + "\n".join(offenders)

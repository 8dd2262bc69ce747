"""What the request quota costs when it is on: Metadata and Produce requests/s of a broker where every client is
under a ``request_percentage`` quota it never exceeds (each request timed, step by step for Produce, and metered)
against one without quotas, the same run, alternating round by round.

    .venv/bin/python bench/request_quota.py [--seconds 3] [--rounds 5]

The same load and requests as bench/received.py and bench/metrics.py (the authorizer on); each broker runs in its
own process.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import alternating


def _quota_everyone(broker) -> None:
    """Every user (the default user entity) under a quota far above what the load uses: timed and metered, never
    throttled."""
    from kafka_shim.shim.quotas.client_quotas import Alteration

    broker.services.client_quotas.alter([Alteration((("user", None),), [("request_percentage", 100_000.0)])], validate_only=False)


if __name__ == "__main__":
    raise SystemExit(alternating.main(__doc__, __file__, _quota_everyone, ("no quota", "request quota")))

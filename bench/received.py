"""What recording the received requests costs (the pytest fixture's ``kafka_shim.received``, always on there):
Metadata and Produce requests/s of a broker that records against one that does not, the same run, alternating.

    .venv/bin/python bench/received.py [--seconds 3] [--rounds 5]

The same load and requests as bench/metrics.py and bench/capture.py (the authorizer on); each broker runs in its
own process, the recording one with ``FaultSet.record(True)`` as the fixture sets it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import alternating


def _record(broker) -> None:
    broker.services.faults.record(True)


if __name__ == "__main__":
    raise SystemExit(alternating.main(__doc__, __file__, _record, ("plain", "recording")))

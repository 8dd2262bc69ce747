"""The trace commands of ``kafka-shim``: ``import``, ``replay`` and ``audit``.

``shim/tools/cli.py`` hands these sub-commands here untouched (as it does ``acls``), so the broker's command line
never imports pyarrow, dpkt or pyspark. Each command lives in its own package and exposes ``main(argv) -> int``.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "import": ("kafka_shim.traces.importers.cli", "turn Kafka's request log, authorizer log or a packet capture into a trace"),
    "replay": ("kafka_shim.traces.replay.cli", "re-send a trace's requests to a broker and diff the answers"),
    "audit": ("kafka_shim.traces.audit.cli", "decide a trace's requests under ACL sets on Spark: what-if, ACL usage, least privilege"),
}

EXTRAS = {"import": "traces", "replay": "traces", "audit": "audit"}


def main(command: str, argv: list[str]) -> int:
    """Run ``kafka-shim COMMAND ARGV...``; a missing optional package is a message and exit code 2, not a trace."""
    module_name, _help = COMMANDS[command]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        print(f"kafka-shim {command}: {exc}; install kafka-shim's '{EXTRAS[command]}' extra (in a checkout: scripts/bootstrap-env {EXTRAS[command]})",
              file=sys.stderr)
        return 2
    return module.main(argv)

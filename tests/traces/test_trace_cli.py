"""The trace commands are reachable from the kafka-shim command, and its --help restates them without importing
traces."""

import subprocess
import sys

from kafka_shim.shim.tools.cli import TRACE_COMMANDS
from kafka_shim.traces.cli import COMMANDS


def test_help_texts_match_the_trace_commands():
    assert TRACE_COMMANDS == {name: help_text for name, (_module, help_text) in COMMANDS.items()}


def test_top_level_help_lists_the_trace_commands_without_importing_traces():
    code = ("import sys; from kafka_shim.shim.tools.cli import build_parser; build_parser().format_help(); "
            "print(any(m.startswith('kafka_shim.traces') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"

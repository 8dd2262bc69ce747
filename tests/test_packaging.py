"""The wheel a user installs works: scripts/check-wheel builds it from this checkout, installs it (not editable) into a
clean venv, imports every module from there, and serves ApiVersions and Metadata from the installed ``kafka-shim``.

Every other test runs against the editable install, which cannot see a package missing from the wheel (it once
missed ``shim.sasl``, and ``kafka-shim serve`` from ``pip install .`` died at start-up). It runs in the normal suite
(about 20-60 s with a warm pip cache), marked ``slow`` so that ``-m "not slow"`` can leave it out while iterating.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check-wheel"


@pytest.mark.slow
def test_the_wheel_installs_imports_and_serves() -> None:
    done = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=900, check=False)
    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, report
    for checked in ("claims one top-level name: kafka_shim", "modules import from the venv", "schema files shipped", "every codec: none, gzip, snappy, lz4, zstd",
                    "python -m kafka_shim serve --help prints", "ApiVersions v3: error 0", "Metadata v12: broker", "SIGTERM: exited 0", "all checks passed"):
        assert checked in done.stdout, report


def test_python_dash_m_kafka_shim_is_the_command_in_this_install(tmp_path: Path) -> None:
    """The editable install (scripts/bootstrap-env) maps the namespace's own folder too, so ``python -m kafka_shim``
    works in a checkout as it does from the wheel. Run from elsewhere, so the checkout's folders are not on the path."""
    done = subprocess.run([sys.executable, "-m", "kafka_shim", "serve", "--help"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: kafka-shim serve"), done.stdout
    assert "--override" in done.stdout

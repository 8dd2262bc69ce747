"""The audit tests' traces: the same client workload captured by kafka-shim under ACL set A and under set B."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.traces.audit.workload import ACLS_A, ACLS_B, run_workload, write_acl_file


@dataclass(frozen=True)
class Captured:
    acls_a: Path
    acls_b: Path
    trace_a: Path
    trace_b: Path
    seen_a: dict
    seen_b: dict


@pytest.fixture(scope="session")
def captured(tmp_path_factory) -> Captured:
    root = tmp_path_factory.mktemp("audit")
    a, b = write_acl_file(root, "a", ACLS_A), write_acl_file(root, "b", ACLS_B)
    seen_a = run_workload(a, root / "trace_a")
    seen_b = run_workload(b, root / "trace_b")
    return Captured(a, b, root / "trace_a", root / "trace_b", seen_a, seen_b)

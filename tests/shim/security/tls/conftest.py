"""Fixtures for the TLS tests: the shared generated material (tests/support/tls_material.py)."""

from __future__ import annotations

import pytest

from tests.support.tls_material import TlsMaterial, shared_tls_material


@pytest.fixture(scope="session")
def tls_material() -> TlsMaterial:
    """A CA, a server identity and clients alice and bob, generated once per test session."""
    return shared_tls_material()

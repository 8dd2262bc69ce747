"""Every partition-log test runs on both storages: they must behave the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_shim.shim.log.storage import Storage
from tests.support.log_batches import STORAGES, FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=sorted(STORAGES))
def storage(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Storage:
    return STORAGES[request.param](tmp_path, clock)

"""``kafka_shim.shim`` exports the embedding surface without loading it until it is used."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _fresh_python(code: str) -> str:
    # A new interpreter: this test process has long since imported the whole broker.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_a_part_of_shim_does_not_load_the_broker() -> None:
    loaded = _fresh_python(
        "import sys, kafka_shim.shim.config.properties; "
        "print(sorted(m for m in sys.modules if m.startswith('kafka_shim.shim.') and not m.startswith('kafka_shim.shim.config')))"
    )
    assert loaded == "[]"


def test_the_public_names_are_the_defining_classes() -> None:
    import kafka_shim.shim as shim
    from kafka_shim.shim.broker import Broker
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.testing.embedded import EmbeddedBroker

    assert (shim.Broker, shim.BrokerConfig, shim.EmbeddedBroker) == (Broker, BrokerConfig, EmbeddedBroker)
    assert set(shim.__all__) == {"Broker", "BrokerConfig", "EmbeddedBroker"} <= set(dir(shim))


def test_an_unknown_name_is_an_attribute_error() -> None:
    import kafka_shim.shim as shim

    with pytest.raises(AttributeError, match="no attribute 'Brokr'"):
        shim.Brokr  # noqa: B018
    with pytest.raises(ImportError):
        exec("from kafka_shim.shim import Brokr", {})

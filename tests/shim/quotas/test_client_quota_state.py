"""Client quota state without the wire: kept in the data directory, and the last key removed removes the entity."""

from __future__ import annotations

from pathlib import Path

from kafka_shim.shim.quotas.client_quotas import EXACT, SPECIFIED, Alteration, ClientQuotas


def test_quotas_survive_a_restart_with_a_data_directory(tmp_path: Path) -> None:
    quotas = ClientQuotas(tmp_path)
    results = quotas.alter([Alteration((("user", "alice"),), [("producer_byte_rate", 1024.0)]),
                            Alteration((("client-id", None),), [("request_percentage", 50.0)])], validate_only=False)
    assert [code for _, code, _ in results] == [0, 0]
    again = ClientQuotas(tmp_path)
    assert again.describe([("user", EXACT, "alice")], strict=True) == [((("user", "alice"),), [("producer_byte_rate", 1024.0)])]
    # As ClientQuotasImage.matches: "specified" asks only that the type is there, so the default entity matches too.
    assert again.describe([("client-id", SPECIFIED, None)], strict=False) == [((("client-id", None),), [("request_percentage", 50.0)])]
    again.alter([Alteration((("user", "alice"),), [("producer_byte_rate", None)])], validate_only=False)
    assert ClientQuotas(tmp_path).describe([("user", EXACT, "alice")], strict=True) == []


def test_validate_only_changes_nothing() -> None:
    quotas = ClientQuotas()
    [(_, code, message)] = quotas.alter([Alteration((("user", "bob"),), [("consumer_byte_rate", 1.5)])], validate_only=True)
    assert (code, message) == (42, "consumer_byte_rate cannot be a fractional value.")
    quotas.alter([Alteration((("user", "bob"),), [("consumer_byte_rate", 2.0)])], validate_only=True)
    assert quotas.describe([], strict=False) == []

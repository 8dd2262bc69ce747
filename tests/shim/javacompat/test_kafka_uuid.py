"""Kafka's Uuid.randomUuid and Uuid.toString."""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.shim.javacompat import kafka_uuid


def test_to_string_is_url_safe_base64_without_padding() -> None:
    assert kafka_uuid.kafka_uuid_string(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert kafka_uuid.kafka_uuid_string(uuid.UUID("fbffffff-ffff-4fff-bfff-ffffffffffff")).startswith("-")


def test_random_ids_redraw_reserved_ids_and_a_leading_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = iter([uuid.UUID(int=0), uuid.UUID(int=1), uuid.UUID("fbffffff-ffff-4fff-bfff-ffffffffffff"),
                  uuid.UUID("0bffffff-ffff-4fff-bfff-ffffffffffff")])
    monkeypatch.setattr(kafka_uuid.uuid, "uuid4", lambda: next(draws))
    assert kafka_uuid.random_uuid() == uuid.UUID("0bffffff-ffff-4fff-bfff-ffffffffffff")

"""The one thing the SASL gate needs from a mechanism (PLAIN, SCRAM): evaluate tokens until complete."""

from __future__ import annotations

from typing import Protocol


class Mechanism(Protocol):
    def evaluate(self, token: bytes) -> bytes: ...

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

"""OAUTHBEARER token providers for the Python clients, for a broker that validates unsecured JWTs (Kafka's default).

kafka-python and aiokafka take an object with a ``token()`` method (aiokafka's is a coroutine), an instance of their
own ``AbstractTokenProvider``; librdkafka makes its unsecured token itself (``enable.sasl.oauthbearer.unsecure.jwt``).
Each call makes a fresh token, valid for an hour, so a long test never presents an expired one.
"""

from __future__ import annotations

from typing import Any

from kafka_shim.protocol.sasl_oauthbearer import unsecured_token


def kafka_python_token_provider(principal: str) -> Any:
    """A kafka-python ``sasl_oauth_token_provider`` naming ``principal`` (its base class moved between releases)."""
    try:
        from kafka.net.sasl.oauth import AbstractTokenProvider  # kafka-python 3
    except ImportError:
        try:
            from kafka.sasl.oauth import AbstractTokenProvider  # kafka-python 2.1-2.2
        except ImportError:
            from kafka.oauth.abstract import AbstractTokenProvider  # kafka-python 2.0

    class UnsecuredTokenProvider(AbstractTokenProvider):
        def token(self) -> str:
            return unsecured_token(principal)

    return UnsecuredTokenProvider()


def aiokafka_token_provider(principal: str) -> Any:
    """An aiokafka ``sasl_oauth_token_provider`` naming ``principal``."""
    from aiokafka.abc import AbstractTokenProvider

    class UnsecuredTokenProvider(AbstractTokenProvider):
        async def token(self) -> str:
            return unsecured_token(principal)

    return UnsecuredTokenProvider()

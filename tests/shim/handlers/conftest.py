"""kafka-shim brokers for the ACL API tests, on ephemeral loopback ports, with raw wire clients.

Until SASL listeners land every client here is User:ANONYMOUS on PLAINTEXT; a test gives it rights by
configuring super.users or by putting ACLs straight into the broker's authorizer (``grant``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kafka_shim.shim.broker import Broker
from kafka_shim.shim.client.wire import WireClient
from tests.support.acl_helpers import ANONYMOUS, config, connect, running


@pytest.fixture
async def admin_broker() -> AsyncIterator[Broker]:
    """Authorizer on; the PLAINTEXT client (User:ANONYMOUS) is a super user."""
    async with running(config(super_users=ANONYMOUS)) as broker:
        yield broker


@pytest.fixture
async def secured_broker() -> AsyncIterator[Broker]:
    """Authorizer on; User:ANONYMOUS has no rights until a test grants some."""
    async with running(config()) as broker:
        yield broker


@pytest.fixture
async def open_broker() -> AsyncIterator[Broker]:
    """No authorizer configured."""
    async with running(config(authorizer=False)) as broker:
        yield broker


@pytest.fixture
async def client_of() -> AsyncIterator[Callable[[Broker], Any]]:
    """``await client_of(broker)``: a connected WireClient, closed after the test."""
    opened: list[WireClient] = []

    async def make(broker: Broker) -> WireClient:
        client = await connect(broker)
        opened.append(client)
        return client

    yield make
    for client in opened:
        await client.close()



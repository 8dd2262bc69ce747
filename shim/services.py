"""What handlers may use: the broker's services, built once by the Broker and shared by every request.

MINIMAL STAND-IN for the version branch ``path`` delivers (which replaces this file on merge): the same
attributes, so that handlers can be written against ``ctx.services`` now. Everything here lives on the one event
loop, which serialises all access; handlers read and call these, and never replace them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_shim.authorizer import Authorizer
    from kafka_shim.shim.cluster.endpoints import Endpoints
    from kafka_shim.shim.cluster.state import ClusterState
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.handlers import ApiHandler
    from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore


@dataclass(frozen=True, slots=True)
class Services:
    config: BrokerConfig
    cluster: ClusterState
    endpoints: Endpoints
    authorizer: Authorizer | None  # None: no authorizer configured, every check passes
    scram: ScramCredentialStore | None  # always opened by the Broker; None only in contexts built without one
    api_table: Mapping[int, ApiHandler]  # path's ApiTable; here the broker's handler table

"""What handlers may use to answer requests, built once by the Broker (the composition root).

Handlers reach these through ``ctx.services`` and never see the Broker. Later: groups, transactions, quotas.
It lives in requests/ because it only gathers parts of lower layers (and the API table): the Broker above builds it,
and RequestContext and dispatch can name its type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_shim.authorizer import Authorizer
from kafka_shim.authorizer.api_checks.releases import ReleaseRules
from kafka_shim.shim.cluster.configs.dynamic_broker import DynamicBrokerConfigs
from kafka_shim.shim.cluster.endpoints import Endpoints
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.faults.rules import FaultSet
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.groups.zookeeper_offsets import ZooKeeperOffsets
from kafka_shim.shim.metrics.counters import BrokerMetrics
from kafka_shim.shim.partitions.fetch_sessions import FetchSessionCache
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.waiting import AppendWaiters
from kafka_shim.shim.producers.ids import ProducerIdAllocator
from kafka_shim.shim.quotas.client_quotas import ClientQuotas
from kafka_shim.shim.quotas.connection_quotas import ConnectionQuotas
from kafka_shim.shim.quotas.metering import QuotaMeters
from kafka_shim.shim.requests.api_table import ApiTable
from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore
from kafka_shim.shim.security.tokens import DelegationTokens
from kafka_shim.shim.txn.coordinator import TransactionCoordinator


@dataclass
class Services:
    config: BrokerConfig
    cluster: ClusterState
    endpoints: Endpoints
    # None when no authorizer is configured: every check passes and the ACL APIs answer SECURITY_DISABLED.
    authorizer: Authorizer | None
    # SCRAM credentials, shared by every SASL listener and the SCRAM admin APIs (None only before the broker starts).
    scram: ScramCredentialStore | None
    api_table: ApiTable
    # The topics' partitions: logs and producer state (None only in tests that build Services by hand).
    partitions: Partitions | None = None
    # Dynamic broker configs (KIP-226) over server.properties (None only in tests that build Services by hand).
    broker_configs: DynamicBrokerConfigs | None = None
    # Producer ids for InitProducerId (kept in log.dirs when set; None only in tests that build Services by hand).
    producer_ids: ProducerIdAllocator | None = None
    # Incremental fetch sessions (KIP-227) and the fetches waiting for appends (None only in hand-built Services).
    fetch_sessions: FetchSessionCache | None = None
    append_waiters: AppendWaiters | None = None
    # Consumer groups and their committed offsets (None only in tests that build Services by hand).
    groups: GroupCoordinator | None = None
    # An emulated ZooKeeper-mode release's version-0 offsets (release_rules.offsets_v0_in_zookeeper); None otherwise.
    zookeeper_offsets: ZooKeeperOffsets | None = None
    # Injected faults (shim.faults): set by the pytest plugin, EmbeddedBroker or the control file; None: none ever.
    faults: FaultSet | None = None
    # The authorization rules of the emulated release (kafka.version): Kafka 3.9's unless an older one is emulated.
    release_rules: ReleaseRules = field(default_factory=ReleaseRules)
    # Client quota configuration (DescribeClientQuotas / AlterClientQuotas; kept in log.dirs when set).
    client_quotas: ClientQuotas | None = None
    # Their enforcement: the byte-rate meters of produce and fetch (None only in tests that build Services by hand).
    quota_meters: QuotaMeters | None = None
    # Connection counts and creation rates checked at accept time (max.connections*, connection_creation_rate).
    connection_quotas: ConnectionQuotas | None = None
    # The transaction coordinator (shim.txn; None only in tests that build Services by hand).
    transactions: TransactionCoordinator | None = None
    # Delegation tokens (KIP-48; None only in tests that build Services by hand).
    tokens: DelegationTokens | None = None
    # Counters for the Prometheus endpoint (kafka.shim.metrics.port); None: metrics off, nothing counted.
    metrics: BrokerMetrics | None = None

"""The broker, the composition root: builds the services and the dispatcher once, binds the listeners, starts
and stops. Nothing else in kafka-shim imports it (only the command line and the test harness)."""

from __future__ import annotations

import asyncio
import socket
import uuid
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from kafka_shim.authorizer import AclBinding, Authorizer
from kafka_shim.authorizer.api_checks.releases import ReleaseRules, rules_for
from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.configs.broker_configs import is_kafka_broker_key
from kafka_shim.shim.cluster.configs.dynamic_broker import DynamicBrokerConfigs
from kafka_shim.shim.cluster.endpoints import Endpoints
from kafka_shim.shim.cluster.identity import load_cluster_identity
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError, Listener
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.faults.errors import FaultError
from kafka_shim.shim.faults.partition_faults import PartitionFaults
from kafka_shim.shim.faults.received import ReceivedLog
from kafka_shim.shim.faults.rules import FaultSet
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.groups.offsets_log import OFFSETS_TOPIC
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.groups.timers import LoopScheduler
from kafka_shim.shim.groups.zookeeper_offsets import ZooKeeperOffsets
from kafka_shim.shim.handlers import deferred_handlers
from kafka_shim.shim.log.dir_lock import DataDirLock
from kafka_shim.shim.log.errors import LogError
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.partition_log import PartitionLog, wall_clock_ms
from kafka_shim.shim.log.storage import FileStorage
from kafka_shim.shim.metrics.counters import BrokerMetrics
from kafka_shim.shim.net.connection import KafkaConnection
from kafka_shim.shim.partitions.chores import run_chores
from kafka_shim.shim.partitions.fetch_sessions import FetchSessionCache
from kafka_shim.shim.partitions.leadership import change_leader, node_down, node_up
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.transactions import write_marker
from kafka_shim.shim.partitions.waiting import AppendWaiters
from kafka_shim.shim.producers.ids import ID_FILE_NAME, ProducerIdAllocator
from kafka_shim.shim.producers.state import PartitionProducers
from kafka_shim.shim.quotas.client_quotas import ClientQuotas
from kafka_shim.shim.quotas.connection_quotas import ConnectionQuotas
from kafka_shim.shim.quotas.metering import QuotaMeters
from kafka_shim.shim.requests.api_table import ApiTable, ReleaseProfile
from kafka_shim.shim.requests.dispatch import Dispatcher
from kafka_shim.shim.requests.services import Services
from kafka_shim.shim.security.listener_security import SASL_PROTOCOLS, ListenerSecurity, build_listener_security
from kafka_shim.shim.security.sasl.credentials import ScramCredentialStore, open_scram_store
from kafka_shim.shim.security.tokens import open_tokens, principal_name
from kafka_shim.shim.tap import RequestTap
from kafka_shim.shim.txn.coordinator import TransactionCoordinator, TxnSettings
from kafka_shim.shim.txn.txn_log import TransactionLog
from kafka_shim.shim.txn.txn_log import partition_for as txn_partition_for

log = get_logger("kafka_shim.broker")
METRICS_PORT_KEY = "kafka.shim.metrics.port"
AUTHORIZER_LOG_FILE_KEY = "kafka.shim.authorizer.log.file"
AUTHORIZER_LOG_LEVEL_KEY = "kafka.shim.authorizer.log.level"
_TRANSACTION_STATE_TOPIC = "__transaction_state"


class BoundListener(NamedTuple):  # not a dataclass: defining one of those costs ~20x more at start
    listener: Listener
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener.name}://{host}:{self.port}"


class Broker:
    """Start with ``await broker.start()``; ``bound`` then lists the real addresses."""

    def __init__(self, config: BrokerConfig, state: ClusterState | None = None, *, preload_acls: list[AclBinding] | None = None,
                 release: ReleaseProfile | None = None, tap: RequestTap | None = None, warm_up: bool = True) -> None:
        self.config = config
        # Load every handler once listening (see _warm_up). A test process that starts a broker per xdist worker
        # turns it off: there the CPU matters more, and a suite uses a few of the APIs served.
        self.warms_up_handlers = warm_up
        self.preload_acls = list(preload_acls or [])
        # What handlers use, built once at start (the authorizer and the SCRAM store open files).
        cluster = state or ClusterState(cluster_id=load_cluster_identity(config), node_id=config.node_id,
                                        node_ids=[config.node_id + k for k in range(config.brokers)])
        if release is None:
            release = _release_profile(config)
        self.services = _build_services(config, cluster, Endpoints(config), ApiTable(deferred_handlers(), release))
        cluster.fix_coordinator_partition_counts(_configured_coordinator_partitions(config))
        if self.services.faults is not None:
            self.services.faults.nodes = self  # the control file's broker_down faults
        # Prometheus counters (kafka.shim.metrics.port): they outlive a reset, as a counter must only grow.
        self.metrics = BrokerMetrics() if _metrics_port(config) is not None else None
        self.services.metrics = self.metrics
        self.metrics_port: int | None = None
        self._metrics_server = None
        self.security: dict[str, ListenerSecurity] = {}
        self.connections: set[KafkaConnection] = set()
        self.servers: list[asyncio.base_events.Server] = []
        self.node_servers: dict[int, list[asyncio.base_events.Server]] = {}
        self._node_ports: dict[tuple[int, str], int] = {}  # a restarted node listens where it did before
        self.bound: list[BoundListener] = []
        self.dispatcher = Dispatcher(self.services)
        # Every request of every listener goes to the tap (trace capture, built by the command line or the test
        # harness from kafka.shim.capture.*); it is closed, and its files finished, when the broker stops.
        self.dispatcher.tap = tap
        self._chores: asyncio.Task | None = None
        self._warm_up: asyncio.Task | None = None
        self._jaas_scram: dict | None = None  # an in-memory broker's JAAS SCRAM credentials, for reset()
        self._fault_file: asyncio.Task | None = None
        self._offsets_loaded = False

    # The cluster state and the authorizer, for tests and embedding code (handlers use ``ctx.services``).
    @property
    def state(self) -> ClusterState:
        return self.services.cluster

    @property
    def authorizer(self) -> Authorizer | None:
        return self.services.authorizer

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> list[BoundListener]:
        loop = asyncio.get_running_loop()
        services = self.services
        if services.scram is None:
            services.scram = _open_scram_store(self.config)
            if not self.config.log_dirs:  # what a reset brings back, derived once
                self._jaas_scram = services.scram.jaas_users()
        services.scram.token_credentials = _token_credentials(services)
        if not self.security:
            self.security = build_listener_security(self.config, services.scram)
            _check_release_mechanisms(self.config, self.security)
        if self.config.authorizer_enabled and services.authorizer is None:
            services.authorizer = _open_authorizer(self.config, self.preload_acls)
        if services.groups is not None and not self._offsets_loaded:
            _load_offsets(services.groups)
            _start_transactions(services)
            self._offsets_loaded = True
        unknown = [key for key in self.config.unknown_keys if not is_kafka_broker_key(key)]
        if unknown:  # Kafka's own broker keys are known: DescribeConfigs reports them (shim/cluster/configs)
            log.warning("unknown_config_keys", keys=unknown,
                        hint="these keys were supplied but neither Kafka 3.9 nor kafka-shim knows them")
        try:
            for node in self.state.node_ids:
                if node not in self.state.down:
                    await self._bind_node(node)
        except OSError as exc:
            await self.stop()
            raise exc from None
        if services.partitions is not None and self._chores is None:
            self._chores = loop.create_task(run_chores(services.partitions), name="kafka-shim-log-chores")
            if services.groups is not None:
                services.groups.start_offsets_expiry()
        for b in self.bound:
            log.info("listening", listener=b.url, cluster_id=self.state.cluster_id, node_id=b.listener.node_id)
        if self._warm_up is None and self.warms_up_handlers:
            self._warm_up = loop.create_task(_warm_up(services.api_table), name="kafka-shim-handler-warm-up")
        self._watch_fault_file()
        self._start_metrics()
        return self.bound

    async def _bind_node(self, node: int) -> None:
        """Open a node's listeners: the configured ports for the first node, port + k for the k-th (0 stays 0)."""
        loop = asyncio.get_running_loop()
        dispatcher = self.dispatcher
        offset = self.state.node_ids.index(node)
        for configured in self.config.listeners:
            port = self._node_ports.get((node, configured.name), configured.port + offset if configured.port else 0)
            listener = replace(configured, port=port, node_id=node)
            host = listener.host or None  # None binds every interface, like Kafka's empty host
            security = self.security.get(listener.name)
            tls = security.ssl_context if security is not None else None
            try:
                server = await loop.create_server(
                    lambda listener=listener, security=security: KafkaConnection(dispatcher, listener, security, self.connections),
                    host=host,
                    port=listener.port,
                    reuse_address=True,
                    backlog=1024,
                    ssl=tls,
                    # A client that never finishes the TLS handshake is dropped like an idle one.
                    ssl_handshake_timeout=_handshake_timeout(self.config) if tls is not None else None,
                )
            except OSError as exc:
                raise OSError(exc.errno, f"cannot listen on {listener.name}://{listener.host}:{listener.port}"
                                         f"{f' (node {node})' if len(self.state.node_ids) > 1 else ''}: {exc.strerror}") from None
            self.servers.append(server)
            self.node_servers.setdefault(node, []).append(server)
            sock = server.sockets[0]
            addr = sock.getsockname()
            bound = BoundListener(listener, listener.host or _default_host(sock), addr[1])
            self.bound.append(bound)
            self.services.endpoints.bind(listener.name, bound.host, bound.port, node)
            self._node_ports[(node, listener.name)] = bound.port
            for s in server.sockets:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def stop_node(self, node: int) -> None:
        """A node of the cluster goes down: the partitions it led move to another in-sync replica (or have no leader),
        its listeners close and its clients are disconnected, as when a Kafka broker is killed."""
        self._check_node(node)
        if node in self.state.down:
            return
        if len(self.state.live_nodes) == 1:
            raise FaultError(f"node {node} is the last one up; a cluster in one process keeps at least one node running")
        if self.services.partitions is not None:
            moved = node_down(self.services.partitions, node)
            log.info("node_stopped", node_id=node, leaders_moved=len(moved))
        servers = self.node_servers.pop(node, [])
        for server in servers:
            server.close()
            self.servers.remove(server)
        for conn in [c for c in self.connections if c.listener.node_id == node]:
            conn.abort()
        for server in servers:
            await asyncio.gather(server.wait_closed(), return_exceptions=True)
        self.bound = [b for b in self.bound if b.listener.node_id != node]

    async def start_node(self, node: int) -> None:
        """A stopped node listens again, on the ports it had (clients reconnect to the addresses they know), rejoins
        its partitions' ISRs and leads those that had no leader."""
        self._check_node(node)
        if node not in self.node_servers:
            await self._bind_node(node)
        if node in self.state.down and self.services.partitions is not None:
            moved = node_up(self.services.partitions, node)
            log.info("node_started", node_id=node, leaders_moved=len(moved))

    def move_leader(self, topic: str, partition: int, node: int) -> None:
        """Make another replica lead a partition (a preferred-leader election, a reassignment's last step)."""
        self._check_node(node)
        found = self.state.topics.get(topic)
        if found is None or not 0 <= partition < len(found.partitions):
            raise FaultError(f"there is no partition {topic}-{partition}; create it before moving its leader")
        replicas = found.partitions[partition].replicas
        if node not in replicas:
            raise FaultError(f"node {node} holds no replica of {topic}-{partition} (replicas {replicas}); "
                             "create the topic with a larger replication factor")
        if node in self.state.down:
            raise FaultError(f"node {node} is down; start it before it can lead {topic}-{partition}")
        assert self.services.partitions is not None
        if change_leader(self.services.partitions, topic, partition, node):
            log.info("leader_moved", topic=topic, partition=partition, node_id=node)

    def create_internal_topics(self, names: list[str]) -> None:
        """Create internal topics now (``__consumer_offsets``) rather than at the first FindCoordinator, which
        answers COORDINATOR_NOT_AVAILABLE while it creates them and makes clients back off for about a second."""
        missing = [name for name in names if name not in self.state.topics]
        if missing and self.services.partitions is not None:
            _recreate_internal_topics(self.services, missing)

    def _check_node(self, node: int) -> None:
        if node not in self.state.node_ids:
            raise FaultError(f"there is no node {node}: this cluster has nodes {self.state.node_ids} (kafka.shim.brokers)")

    def _start_metrics(self) -> None:
        """The Prometheus endpoint on kafka.shim.metrics.host:kafka.shim.metrics.port (0: a free port)."""
        if self.metrics is None or self._metrics_server is not None:
            return
        from kafka_shim.shim.metrics.exporter import start_exporter

        host = self.config.raw.get("kafka.shim.metrics.host", "127.0.0.1").strip() or "0.0.0.0"
        port = _metrics_port(self.config)
        try:
            self._metrics_server, self.metrics_port = start_exporter(self.metrics, host, port or 0)
        except OSError as exc:
            raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
        log.info("metrics_listening", url=f"http://{host}:{self.metrics_port}/metrics")

    def _watch_fault_file(self) -> None:
        """``kafka.shim.faults.file``: faults set from outside the process (shim.faults.control_file)."""
        path = self.config.raw.get("kafka.shim.faults.file", "").strip()
        if not path or self.services.faults is None:
            return
        from kafka_shim.shim.faults.control_file import watch

        if self._fault_file is not None:
            self._fault_file.cancel()
        self._fault_file = asyncio.get_running_loop().create_task(watch(Path(path), self.services.faults),
                                                                  name="kafka-shim-fault-file")

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the first listener (of every node of a cluster, comma-separated), for clients in tests
        and embedding code."""
        name = self.config.listeners[0].name
        nodes = self.state.node_ids
        return ",".join("{}:{}".format(*self.services.endpoints.advertised(name, node)) for node in nodes)

    async def reset(self) -> None:
        """Back to the state a fresh start of this configuration has, with the listeners kept open (same ports).

        Every client connection is closed; topics and their records, consumer groups and committed offsets, producer
        ids, fetch sessions, dynamic broker configs, ACLs and SCRAM users go, and the configured ones (the preloaded
        ACLs, the JAAS users) come back. For test harnesses (the pytest plugin): in memory only, since a broker with
        ``log.dirs`` would have to delete its data directory, which a reset must not do behind its owner's back."""
        if self.config.log_dirs:
            raise ConfigError("reset() is for in-memory brokers: this one keeps its data in log.dirs "
                              f"({', '.join(map(str, self.config.log_dirs))}); stop it and remove the directory instead")
        for conn in list(self.connections):
            conn.abort()  # their requests belong to the state being thrown away
        chores, self._chores = self._chores, None
        if chores is not None:
            chores.cancel()
            await asyncio.gather(chores, return_exceptions=True)
        old = self.services
        if old.transactions is not None:
            old.transactions.close()
        if old.tokens is not None:
            old.tokens.close()
        if old.groups is not None:
            old.groups.close()
        if old.partitions is not None:
            old.partitions.close()
        if old.authorizer is not None:
            _close_authorizer(old.authorizer)
        recording = old.faults is not None and old.faults.received.recording
        if old.faults is not None:
            old.faults.clear()  # cancels the timers of timed partition faults
        internal = [name for name in (OFFSETS_TOPIC, _TRANSACTION_STATE_TOPIC) if name in old.cluster.topics]
        fresh = _build_services(self.config, ClusterState(cluster_id=old.cluster.cluster_id, node_id=old.cluster.node_id,
                                                          node_ids=list(old.cluster.node_ids)),
                                old.endpoints, old.api_table)
        _recreate_internal_topics(fresh, internal)
        fresh.cluster.fix_coordinator_partition_counts(_configured_coordinator_partitions(self.config))
        scram = old.scram
        # In place: the dispatcher and every listener's security settings hold these objects.
        for name in vars(fresh):
            setattr(old, name, getattr(fresh, name))
        if scram is not None:
            if self._jaas_scram is not None:
                scram.reset_to(self._jaas_scram)
            else:
                scram.replace_with(_open_scram_store(self.config))
            old.scram = scram
        if old.faults is not None:
            old.faults.nodes = self
        if recording and old.faults is not None:
            old.faults.record(True)  # a fresh, empty record: the test harness asked for one for every test
        if self.config.authorizer_enabled:
            old.authorizer = _open_authorizer(self.config, self.preload_acls)
        if old.groups is not None:
            _load_offsets(old.groups)
        _start_transactions(old)
        if old.partitions is not None and self.servers:
            self._chores = asyncio.get_running_loop().create_task(run_chores(old.partitions), name="kafka-shim-log-chores")
            if old.groups is not None:
                old.groups.start_offsets_expiry()
        old.metrics = self.metrics
        if self.servers:
            for node in old.cluster.node_ids:  # a fresh start has every node up
                if node not in self.node_servers:
                    await self._bind_node(node)
            self._watch_fault_file()  # the fresh rules follow the file again
        log.debug("broker_reset", cluster_id=old.cluster.cluster_id)

    async def stop(self) -> None:
        warm_up, self._warm_up = self._warm_up, None
        if warm_up is not None:
            warm_up.cancel()  # first: the awaits below would let it import another module or two
        for server in self.servers:
            server.close()
        for conn in list(self.connections):
            conn.close()
        for server in self.servers:
            try:
                await asyncio.wait_for(server.wait_closed(), timeout=5)
            except TimeoutError:
                for conn in list(self.connections):
                    conn.abort()
        self.servers.clear()
        if warm_up is not None:
            await asyncio.gather(warm_up, return_exceptions=True)
        if self._metrics_server is not None:
            server, self._metrics_server = self._metrics_server, None
            server.shutdown()
            server.server_close()
        for task in (self._chores, self._fault_file):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)  # let it finish before the loop closes
        self._chores = self._fault_file = None
        if self.services.transactions is not None:
            self.services.transactions.close()
        if self.services.tokens is not None:
            self.services.tokens.close()
        if self.services.groups is not None:
            self.services.groups.close()
        if self.services.partitions is not None:
            self.services.partitions.close()
        if self.services.authorizer is not None:
            _close_authorizer(self.services.authorizer)
            self.services.authorizer = None
        tap, self.dispatcher.tap = self.dispatcher.tap, None
        if tap is not None:
            # The connections are closed: what they answered is queued. Closing waits for the writer to finish its
            # files, in a thread, so a loop that goes on running (embedding code) is not held.
            await asyncio.get_running_loop().run_in_executor(None, tap.close)


def _fault_set(partitions: Partitions) -> FaultSet:
    def topic_name_of(topic_id: uuid.UUID) -> str | None:
        topic = partitions.cluster.topic_by_id(topic_id)
        return topic.name if topic is not None else None

    return FaultSet(partition_faults=PartitionFaults(partitions), received=ReceivedLog(topic_name_of=topic_name_of))


def _build_services(config: BrokerConfig, cluster: ClusterState, endpoints: Endpoints, api_table: ApiTable) -> Services:
    """The state handlers use, as a fresh start has it (the authorizer and the SCRAM store come at ``start``)."""
    broker_configs = _open_broker_configs(config)
    partitions = _open_partitions(config, cluster, broker_configs.effective_properties())
    waiters = AppendWaiters()
    partitions.add_append_listener(waiters.appended)  # an append wakes the fetches waiting on its partition
    services = Services(
        config=config,
        cluster=cluster,
        endpoints=endpoints,
        authorizer=None,
        scram=None,
        api_table=api_table,
        partitions=partitions,
        broker_configs=broker_configs,
        producer_ids=_producer_ids(config),
        fetch_sessions=FetchSessionCache(config.max_incremental_fetch_session_cache_slots),
        append_waiters=waiters,
        groups=GroupCoordinator(GroupSettings.from_properties(config.raw)),
        faults=_fault_set(partitions),
        client_quotas=(quotas := ClientQuotas(config.log_dirs[0] if config.log_dirs else None)),
        quota_meters=QuotaMeters(quotas),
        connection_quotas=ConnectionQuotas(config.raw, quotas),
        release_rules=(rules := _release_rules(config)),
        zookeeper_offsets=(ZooKeeperOffsets(config.log_dirs[0] if config.log_dirs else None)
                           if rules.offsets_v0_in_zookeeper else None),
        tokens=open_tokens(config.raw, config.log_dirs[0] if config.log_dirs else None, wall_clock_ms),
    )
    cluster.features.for_release(rules.metadata_version_level)  # an emulated release's metadata.version levels
    _attach_offsets_topic(services.groups, partitions)
    services.transactions = _transaction_coordinator(config, partitions, services.producer_ids, services.groups)
    return services


def _metrics_port(config: BrokerConfig) -> int | None:
    """kafka.shim.metrics.port, checked when the broker is built (before it binds anything); None: no metrics."""
    text = config.raw.get(METRICS_PORT_KEY, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) > 65535:
        raise ConfigError(f"{METRICS_PORT_KEY}={text!r}: use a port number (0 picks a free one)")
    return int(text)


def _release_profile(config: BrokerConfig) -> ReleaseProfile | None:
    """The API ranges of the release ``kafka.version`` names (None: 3.9, every served range)."""
    from kafka_shim.shim.releases.profiles import UnknownRelease, api_ranges

    try:
        ranges = api_ranges(config.kafka_version)
    except UnknownRelease as exc:
        raise ConfigError(str(exc)) from None
    if ranges is not None:
        log.warning("kafka_version_emulated", kafka_version=config.kafka_version,
                    emulated="the API versions that release's broker advertised (ApiVersions and what is served)",
                    rules=("its authorization rules and topic configs as the README's release tables list them (KAFKA-5547, "
                           "KIP-163, KIP-277, KIP-231, KAFKA-7394, KIP-679 and others); every other answer is Kafka 3.9's"))
    return ranges


def _check_release_mechanisms(config: BrokerConfig, security: dict[str, ListenerSecurity]) -> None:
    """OAUTHBEARER came with Kafka 2.0 (KIP-255), its secured validator with 3.1 (KIP-768): an emulated older broker
    does not know them."""
    from kafka_shim.shim.releases.profiles import UnknownRelease, release_line

    try:
        major, minor = map(int, release_line(config.kafka_version).split("."))
    except UnknownRelease:
        return  # reported with the release profile
    if (major, minor) < (3, 1):
        from kafka_shim.shim.security.sasl.settings import SECURED_VALIDATORS

        for key, value in config.raw.items():
            if key.endswith("sasl.server.callback.handler.class") and (value or "").strip() in SECURED_VALIDATORS:
                raise ConfigError(f"{key}={value.strip()}: kafka.version={config.kafka_version} emulates a broker from "
                                  "before Kafka 3.1, which has no secured OAUTHBEARER validator (KIP-768); remove the key "
                                  "or emulate 3.1 or later")
    if (major, minor) >= (2, 0):
        return
    for name, listener in security.items():
        if "OAUTHBEARER" in (listener.sasl_mechanisms or ()):
            raise ConfigError(f"OAUTHBEARER is enabled on the SASL listener {name}, but kafka.version={config.kafka_version} "
                              "emulates a broker from before Kafka 2.0 (KIP-255), which has no OAUTHBEARER; remove it from "
                              f"listener.name.{name.lower()}.sasl.enabled.mechanisms")


def _release_rules(config: BrokerConfig) -> ReleaseRules:
    """The authorization rule switches of the release ``kafka.version`` names (checked by ``_release_profile``)."""
    from kafka_shim.shim.releases.profiles import UnknownRelease, release_line

    try:
        return rules_for(release_line(config.kafka_version))
    except UnknownRelease as exc:
        raise ConfigError(str(exc)) from None


def _release_at_least(config: BrokerConfig, line: tuple[int, int]) -> bool:
    """Whether the release ``kafka.version`` names is ``line`` or later (checked by ``_release_profile``)."""
    from kafka_shim.shim.releases.profiles import UnknownRelease, release_line

    try:
        major, minor = (int(part) for part in release_line(config.kafka_version).split("."))
    except UnknownRelease as exc:
        raise ConfigError(str(exc)) from None
    return (major, minor) >= line


def _configured_coordinator_partitions(config: BrokerConfig) -> dict[str, int]:
    """offsets.topic.num.partitions and transaction.state.log.num.partitions (50 each by default)."""
    def count(key: str) -> int:
        try:
            value = int(config.raw.get(key, "50"))
        except ValueError:
            return 50  # the config checks refuse it elsewhere; the coordinators only need a count
        return value if value >= 1 else 50

    return {OFFSETS_TOPIC: count("offsets.topic.num.partitions"),
            _TRANSACTION_STATE_TOPIC: count("transaction.state.log.num.partitions")}


def _recreate_internal_topics(services: Services, names: list[str]) -> None:
    """The internal topics a reset broker had, empty. A fresh start has none, but the first FindCoordinator then
    answers COORDINATOR_NOT_AVAILABLE while it creates one, and clients back off for about a second before asking
    again: a test suite would pay that after every reset. Their records (offsets, transactions) are gone either way."""
    from kafka_shim.shim.partitions.topic_admin import TopicAdmin, auto_created_topic

    config = services.config
    admin = TopicAdmin(services.partitions, num_partitions=config.num_partitions,
                       default_replication_factor=config.default_replication_factor)
    wanted = [auto_created_topic(name, services.partitions.broker_properties, config.num_partitions,
                                 config.default_replication_factor) for name in names]
    for result in admin.create_topics(wanted, False) if wanted else ():
        if result.error:
            log.warning("internal_topic_creation_failed", topic=result.name, error_code=result.error, reason=result.message)


async def _warm_up(table: ApiTable) -> None:
    """Load the handlers not loaded yet, one module per turn of the loop, once the broker listens: start-up does not
    wait for their imports, and the first requests mostly do not either (a client process takes longer to start
    than these imports; a request that arrives meanwhile waits at most for the one module being imported)."""
    try:
        for _ in table.warm_up():
            await asyncio.sleep(0)
    except Exception as exc:  # such a handler fails its own requests the same way; the broker goes on
        log.warning("handler_warm_up_failed", error=str(exc))


def _open_broker_configs(config: BrokerConfig) -> DynamicBrokerConfigs:
    """server.properties with the dynamic broker configs kept in log.dirs by an earlier run (KIP-226)."""
    data_dir = config.log_dirs[0] if config.log_dirs else None
    broker_configs = DynamicBrokerConfigs(config.raw, config.node_id, data_dir)
    try:
        if data_dir is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
        broker_configs.load()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the dynamic broker configs in {data_dir}: {exc}") from None
    return broker_configs


def _producer_ids(config: BrokerConfig) -> ProducerIdAllocator:
    """Producer ids that never repeat: their next block is recorded in the first of log.dirs (in memory without)."""
    data_dir = config.log_dirs[0] if config.log_dirs else None
    try:
        return ProducerIdAllocator(Path(data_dir) / ID_FILE_NAME if data_dir else None)
    except ValueError as exc:
        raise ConfigError(f"cannot read the producer id file in {data_dir}: {exc}") from None


class _OffsetsTopic:
    """``__consumer_offsets`` for the group coordinator (groups/ may not import the partitions manager)."""

    def __init__(self, partitions: Partitions) -> None:
        self.partitions = partitions

    def partition_count(self) -> int | None:
        topic = self.partitions.cluster.topics.get(OFFSETS_TOPIC)
        return None if topic is None else len(topic.partitions)

    def log(self, partition: int) -> PartitionLog:
        state = self.partitions.get(OFFSETS_TOPIC, partition)
        if state is None:
            raise LogError(f"{OFFSETS_TOPIC}-{partition} does not exist")
        return state.log

    def appended(self, partition: int) -> None:
        self.partitions.appended(OFFSETS_TOPIC, partition)

    def leader_epoch(self, partition: int) -> int:
        return _leader_epoch_of(self.partitions, OFFSETS_TOPIC, partition)

    def producers(self, partition: int) -> PartitionProducers | None:
        state = self.partitions.get(OFFSETS_TOPIC, partition)
        return None if state is None else state.producers


class _InternalTopic(_OffsetsTopic):
    """An internal topic's partitions for a coordinator (txn/ may not import the partitions manager either)."""

    def __init__(self, partitions: Partitions, name: str) -> None:
        super().__init__(partitions)
        self.name = name

    def partition_count(self) -> int | None:
        topic = self.partitions.cluster.topics.get(self.name)
        return None if topic is None else len(topic.partitions)

    def log(self, partition: int) -> PartitionLog:
        state = self.partitions.get(self.name, partition)
        if state is None:
            raise LogError(f"{self.name}-{partition} does not exist")
        return state.log

    def appended(self, partition: int) -> None:
        self.partitions.appended(self.name, partition)

    def leader_epoch(self, partition: int) -> int:
        return _leader_epoch_of(self.partitions, self.name, partition)

    def producers(self, partition: int) -> PartitionProducers | None:
        state = self.partitions.get(self.name, partition)
        return None if state is None else state.producers


def _leader_epoch_of(partitions: Partitions, topic: str, partition: int) -> int:
    known = partitions.cluster.topics.get(topic)
    return known.partitions[partition].leader_epoch if known is not None and partition < len(known.partitions) else 0


def _transaction_coordinator(config: BrokerConfig, partitions: Partitions, producer_ids: ProducerIdAllocator,
                             groups: GroupCoordinator) -> TransactionCoordinator:
    """The transaction coordinator over __transaction_state; its markers go to the partitions' leaders, and a marker
    reaching __consumer_offsets settles the producer's transactional offsets (GroupCoordinator.onTransactionCompleted)."""
    def marker(topic: str, partition: int, producer_id: int, epoch: int, coordinator_epoch: int, committed: bool) -> int:
        known = partitions.cluster.topics.get(topic)
        if known is None or not 0 <= partition < len(known.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return write_marker(partitions, topic, partition, producer_id, epoch, coordinator_epoch, committed,
                            node_id=known.partitions[partition].leader_id)

    def marker_written(topic: str, partition: int, producer_id: int, committed: bool) -> None:
        if topic == OFFSETS_TOPIC:
            groups.complete_transaction(producer_id, committed, partition)

    partitions.add_marker_listener(marker_written)

    def coordinator_epoch(transactional_id: str) -> int:
        # The coordinator epoch is the leader epoch of the id's __transaction_state partition (Kafka's onElection).
        topic = partitions.cluster.topics.get(_TRANSACTION_STATE_TOPIC)
        if topic is None or not topic.partitions:
            return 0
        return topic.partitions[txn_partition_for(transactional_id, len(topic.partitions))].leader_epoch

    return TransactionCoordinator(TransactionLog(_InternalTopic(partitions, _TRANSACTION_STATE_TOPIC)), producer_ids,
                                  marker, wall_clock_ms, TxnSettings.from_properties(config.raw),
                                  coordinator_epoch=coordinator_epoch)


def _token_credentials(services: Services):
    """What a tokenauth=true SCRAM login looks up: the services' tokens now (a reset replaces them in place)."""
    def lookup(token_id: str, mechanism: str):
        tokens = services.tokens
        found = tokens.credential(token_id, mechanism) if tokens is not None else None
        if found is None:
            return None
        credential, token = found
        return credential, principal_name(token.owner), token.expiry_ms

    return lookup


def _start_transactions(services: Services) -> None:
    """Read __transaction_state (finishing the markers of transactions a stop left half done) and start the timeout
    and expiry timers; on the loop."""
    if services.tokens is not None:
        services.tokens.start(LoopScheduler())
    coordinator = services.transactions
    if coordinator is None:
        return
    coordinator.scheduler = LoopScheduler()
    try:
        coordinator.load()
    except (OSError, LogError) as exc:
        log.error("transaction_state_not_loaded", error=str(exc),
                  hint="the __transaction_state partitions could not be read; transactions start empty")
    coordinator.start()


def _attach_offsets_topic(groups: GroupCoordinator, partitions: Partitions) -> None:
    """Committed offsets and group records: written to __consumer_offsets as Kafka writes them (in memory too, where
    ListOffsets and consumers of the topic see them; read back at start with log.dirs), dropped with a deleted
    topic."""
    groups.attach_offsets_topic(_OffsetsTopic(partitions), persist=True)
    partitions.add_topic_deleted_listener(groups.topic_deleted)


def _load_offsets(groups: GroupCoordinator) -> None:
    """Committed offsets read back from __consumer_offsets (on the loop: loaded groups take its clock)."""
    try:
        groups.load_offsets()
    except (OSError, ValueError, LogError) as exc:
        raise ConfigError(f"cannot read the committed offsets in {OFFSETS_TOPIC}: {exc}") from None


def _open_partitions(config: BrokerConfig, cluster: ClusterState, broker_properties: dict[str, str]) -> Partitions:
    """The topics' partitions: in memory, or in the first of log.dirs in Kafka's layout (loaded from an earlier run)."""
    data_dir = config.log_dirs[0] if config.log_dirs else None
    lock = DataDirLock(data_dir) if data_dir else None
    try:
        if lock is not None:
            lock.acquire()
        partitions = Partitions(cluster, LogManager(FileStorage(data_dir) if data_dir else None), broker_properties, data_dir,
                                dir_lock=lock, min_isr_capped=_release_at_least(config, (3, 7)))
        partitions.load()
    except (OSError, ValueError, LogError) as exc:
        if lock is not None:
            lock.release()
        raise ConfigError(f"cannot open the partition logs in {data_dir}: {exc}") from None
    return partitions


def _handshake_timeout(config: BrokerConfig) -> float:
    idle_ms = config.connections_max_idle_ms
    return 60.0 if idle_ms < 0 else max(min(idle_ms / 1000, 60.0), 0.1)


def _open_scram_store(config: BrokerConfig) -> ScramCredentialStore:
    """The SCRAM credential store, with the JAAS users of the SASL listeners. A broker without SASL listeners has
    one too, as Kafka always has a SCRAM image: the SCRAM admin APIs answer from it (no JAAS users then)."""
    if any(lst.security_protocol in SASL_PROTOCOLS for lst in config.listeners):
        return open_scram_store(config)
    return ScramCredentialStore.open(config.log_dirs[0] if config.log_dirs else None)


def _open_authorizer(config: BrokerConfig, preload: list[AclBinding]) -> Authorizer:
    """The authorizer with its durable store (in log.dirs when set), plus any ACLs preloaded with --acls."""
    from kafka_shim.authorizer.sqlite_store import (  # sqlite3: only with an authorizer
        AclStoreCorrupt,
        AclStoreLocked,
        AclStoreUnavailable,
        open_acl_store,
    )

    try:
        store = open_acl_store(config.log_dirs[0] if config.log_dirs else None)
    except (AclStoreCorrupt, AclStoreLocked, AclStoreUnavailable) as exc:
        raise ConfigError(str(exc)) from None
    try:
        authorizer = Authorizer(
            super_users=config.super_users,
            allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found,
            store=store,
            audit=_audit_log(config, _release_rules(config).release),
        )
        if preload:
            failed = [r for r in authorizer.create_acls(preload) if r.error is not None]
            if failed:
                raise ConfigError(f"{len(failed)} preloaded ACL(s) were rejected; the first: {failed[0].error}")
    except BaseException:
        store.close()
        raise
    log.info("authorizer_ready", acls=len(authorizer.acls()), super_users=sorted(authorizer.super_users),
             allow_everyone_if_no_acl_found=authorizer.allow_everyone)
    return authorizer


def _audit_log(config: BrokerConfig, release: tuple[int, int]):
    """The authorizer's audit log: the line of the emulated release, to kafka.shim.authorizer.log.file in Kafka's
    kafka-authorizer.log layout when set, else to the library logger ``kafka.authorizer.logger``."""
    from kafka_shim.authorizer.audit import AuditLog, style_for

    path = config.raw.get(AUTHORIZER_LOG_FILE_KEY, "").strip()
    if not path:
        return AuditLog(style=style_for(release))
    from kafka_shim.authorizer.audit_file import AuditFile, AuditFileError

    try:
        return AuditLog(AuditFile(path, config.raw.get(AUTHORIZER_LOG_LEVEL_KEY, "INFO")), style=style_for(release))
    except AuditFileError as exc:
        raise ConfigError(str(exc)) from None


def _close_authorizer(authorizer: Authorizer) -> None:
    authorizer.store.close()
    close = getattr(authorizer.audit.logger, "close", None)
    if close is not None:
        close()


def _default_host(sock: socket.socket) -> str:
    # Bound to every interface: advertise loopback's name rather than 0.0.0.0,
    # which no client can connect to (Kafka would advertise the canonical host name).
    return socket.getfqdn()

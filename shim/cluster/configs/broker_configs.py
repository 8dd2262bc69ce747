"""Kafka 3.9's broker configs (``KafkaConfig``'s ConfigDef) as plain data: name, type, default and how it may change.

One row per key in KafkaConfig's definition order: the name, the ConfigDef type, the default as
``ConfigDef.convertToString`` prints it (None: no default), the update mode ``kafka-configs.sh`` and
DynamicBrokerConfig know (R read-only, B per-broker, C cluster-wide), whether the key is internal (never
described) and its validator where it is a range or a list of choices (others, such as the controller quorum
parsers, are left out: those keys are read-only). Extracted from Kafka's own classes by ``tests/oracle/.../BrokerConfigProbe.java defs``, and
``tests/differential/test_broker_config_defs.py`` checks every row against them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from kafka_shim.shim.cluster.configs.definition import LONG_MAX, ConfigType, Range, Validator, ValidList, ValidString
from kafka_shim.shim.cluster.configs.topic_configs import GzipLevel

T = ConfigType
R, B, C = "read-only", "per-broker", "cluster-wide"
INTERNAL = True


@dataclass(frozen=True)
class BrokerKey:
    name: str
    type: ConfigType
    default: str | None
    mode: str
    internal: bool = False
    validator: Validator | None = None  # Range, ValidString, ValidList (and gzip's level), as KafkaConfig has them

    @property
    def dynamic(self) -> bool:
        return self.mode != R


# DynamicBrokerConfig.brokerConfigSynonyms: the keys that stand for one setting, most specific first.
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
)


def broker_synonyms(name: str) -> tuple[str, ...]:
    """The keys Kafka reports as synonyms of ``name`` (``name`` itself among them)."""
    for group in _SYNONYM_GROUPS:
        if name in group and (name == group[0] or group[0] != "log.flush.interval.ms"):
            return group  # log.flush.scheduler.interval.ms is a synonym of log.flush.interval.ms, not the reverse
    return (name,)


_ROWS = (
    ('remote.log.storage.system.enable', T.BOOLEAN, 'false', R),
    ('remote.log.storage.manager.impl.prefix', T.STRING, 'rsm.config.', R),
    ('remote.log.metadata.manager.impl.prefix', T.STRING, 'rlmm.config.', R),
    ('remote.log.storage.manager.class.name', T.STRING, None, R),
    ('remote.log.storage.manager.class.path', T.STRING, None, R),
    ('remote.log.metadata.manager.class.name', T.STRING, 'org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager', R),
    ('remote.log.metadata.manager.class.path', T.STRING, None, R),
    ('remote.log.metadata.manager.listener.name', T.STRING, None, R),
    ('remote.log.metadata.custom.metadata.max.bytes', T.INT, '128', R, False, Range(0)),
    ('remote.log.index.file.cache.total.size.bytes', T.LONG, '1073741824', C, False, Range(1)),
    ('remote.log.manager.thread.pool.size', T.INT, '10', R, False, Range(1)),
    ('remote.log.manager.copier.thread.pool.size', T.INT, '-1', R),
    ('remote.log.manager.expiration.thread.pool.size', T.INT, '-1', R),
    ('remote.log.manager.task.interval.ms', T.LONG, '30000', R, False, Range(1)),
    ('remote.log.manager.task.retry.backoff.ms', T.LONG, '500', R, INTERNAL, Range(1)),
    ('remote.log.manager.task.retry.backoff.max.ms', T.LONG, '30000', R, INTERNAL, Range(1)),
    ('remote.log.manager.task.retry.jitter', T.DOUBLE, '0.2', R, INTERNAL, Range(0, 0.5)),
    ('remote.log.reader.threads', T.INT, '10', R, False, Range(1)),
    ('remote.log.reader.max.pending.tasks', T.INT, '100', R, False, Range(1)),
    ('log.local.retention.ms', T.LONG, '-2', C, False, Range(-2)),
    ('log.local.retention.bytes', T.LONG, '-2', C, False, Range(-2)),
    ('remote.log.manager.copy.max.bytes.per.second', T.LONG, '9223372036854775807', C, False, Range(1)),
    ('remote.log.manager.copy.quota.window.num', T.INT, '11', R, False, Range(1)),
    ('remote.log.manager.copy.quota.window.size.seconds', T.INT, '1', R, False, Range(1)),
    ('remote.log.manager.fetch.max.bytes.per.second', T.LONG, '9223372036854775807', C, False, Range(1)),
    ('remote.log.manager.fetch.quota.window.num', T.INT, '11', R, False, Range(1)),
    ('remote.log.manager.fetch.quota.window.size.seconds', T.INT, '1', R, False, Range(1)),
    ('remote.fetch.max.wait.ms', T.INT, '500', C, False, Range(1)),
    ('zookeeper.connect', T.STRING, None, R),
    ('zookeeper.session.timeout.ms', T.INT, '18000', R),
    ('zookeeper.connection.timeout.ms', T.INT, None, R),
    ('zookeeper.set.acl', T.BOOLEAN, 'false', R),
    ('zookeeper.max.in.flight.requests', T.INT, '10', R, False, Range(1)),
    ('zookeeper.ssl.client.enable', T.BOOLEAN, 'false', R),
    ('zookeeper.clientCnxnSocket', T.STRING, None, R),
    ('zookeeper.ssl.keystore.location', T.STRING, None, R),
    ('zookeeper.ssl.keystore.password', T.PASSWORD, None, R),
    ('zookeeper.ssl.keystore.type', T.STRING, None, R),
    ('zookeeper.ssl.truststore.location', T.STRING, None, R),
    ('zookeeper.ssl.truststore.password', T.PASSWORD, None, R),
    ('zookeeper.ssl.truststore.type', T.STRING, None, R),
    ('zookeeper.ssl.protocol', T.STRING, 'TLSv1.2', R),
    ('zookeeper.ssl.enabled.protocols', T.LIST, None, R),
    ('zookeeper.ssl.cipher.suites', T.LIST, None, R),
    ('zookeeper.ssl.endpoint.identification.algorithm', T.STRING, 'HTTPS', R),
    ('zookeeper.ssl.crl.enable', T.BOOLEAN, 'false', R),
    ('zookeeper.ssl.ocsp.enable', T.BOOLEAN, 'false', R),
    ('broker.id.generation.enable', T.BOOLEAN, 'true', R),
    ('reserved.broker.max.id', T.INT, '1000', R, False, Range(0)),
    ('broker.id', T.INT, '-1', R),
    ('message.max.bytes', T.INT, '1048588', C, False, Range(0)),
    ('num.io.threads', T.INT, '8', C, False, Range(1)),
    ('num.replica.alter.log.dirs.threads', T.INT, None, R),
    ('background.threads', T.INT, '10', C, False, Range(1)),
    ('request.timeout.ms', T.INT, '30000', R),
    ('socket.connection.setup.timeout.ms', T.LONG, '10000', R),
    ('socket.connection.setup.timeout.max.ms', T.LONG, '30000', R),
    ('authorizer.class.name', T.STRING, '', R),
    ('early.start.listeners', T.STRING, None, R),
    ('broker.rack', T.STRING, None, R),
    ('controlled.shutdown.max.retries', T.INT, '3', R),
    ('controlled.shutdown.retry.backoff.ms', T.LONG, '5000', R),
    ('controlled.shutdown.enable', T.BOOLEAN, 'true', R),
    ('delete.topic.enable', T.BOOLEAN, 'true', R),
    ('compression.type', T.STRING, 'producer', C, False, ValidString(('uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer'))),
    ('compression.gzip.level', T.INT, '-1', C, False, GzipLevel()),
    ('compression.lz4.level', T.INT, '9', C, False, Range(1, 17)),
    ('compression.zstd.level', T.INT, '3', C, False, Range(-131072, 22)),
    ('max.incremental.fetch.session.cache.slots', T.INT, '1000', R, False, Range(0)),
    ('fetch.max.bytes', T.INT, '57671680', R, False, Range(1024)),
    ('max.request.partition.size.limit', T.INT, '2000', R, False, Range(1)),
    ('unstable.api.versions.enable', T.BOOLEAN, 'false', R, INTERNAL),
    ('unstable.feature.versions.enable', T.BOOLEAN, 'false', R, INTERNAL),
    ('metadata.log.max.record.bytes.between.snapshots', T.LONG, '20971520', R, False, Range(1)),
    ('metadata.log.max.snapshot.interval.ms', T.LONG, '3600000', R, False, Range(0)),
    ('process.roles', T.LIST, '', R, False, ValidList(('broker', 'controller'))),
    ('node.id', T.INT, '-1', R),
    ('initial.broker.registration.timeout.ms', T.INT, '60000', R),
    ('broker.heartbeat.interval.ms', T.INT, '2000', R),
    ('broker.session.timeout.ms', T.INT, '9000', R),
    ('controller.listener.names', T.STRING, None, R),
    ('sasl.mechanism.controller.protocol', T.STRING, 'GSSAPI', R),
    ('metadata.log.dir', T.STRING, None, R),
    ('metadata.log.segment.bytes', T.INT, '1073741824', R, False, Range(12)),
    ('metadata.log.segment.min.bytes', T.INT, '8388608', R, INTERNAL, Range(12)),
    ('metadata.log.segment.ms', T.LONG, '604800000', R),
    ('metadata.max.retention.bytes', T.LONG, '104857600', R),
    ('metadata.max.retention.ms', T.LONG, '604800000', R),
    ('metadata.max.idle.interval.ms', T.INT, '500', R, False, Range(0)),
    ('server.max.startup.time.ms', T.LONG, '9223372036854775807', R, INTERNAL, Range(0)),
    ('zookeeper.metadata.migration.enable', T.BOOLEAN, 'false', R),
    ('eligible.leader.replicas.enable', T.BOOLEAN, 'false', R),
    ('zookeeper.metadata.migration.min.batch.size', T.INT, '200', R, INTERNAL, Range(1)),
    ('listeners', T.STRING, 'PLAINTEXT://:9092', B),
    ('advertised.listeners', T.STRING, None, B),
    ('listener.security.protocol.map', T.STRING, 'SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT', B),
    ('control.plane.listener.name', T.STRING, None, R),
    ('socket.send.buffer.bytes', T.INT, '102400', R),
    ('socket.receive.buffer.bytes', T.INT, '102400', R),
    ('socket.request.max.bytes', T.INT, '104857600', R, False, Range(1)),
    ('socket.listen.backlog.size', T.INT, '50', R, False, Range(1)),
    ('max.connections.per.ip', T.INT, '2147483647', C, False, Range(0)),
    ('max.connections.per.ip.overrides', T.STRING, '', C),
    ('max.connections', T.INT, '2147483647', C, False, Range(0)),
    ('max.connection.creation.rate', T.INT, '2147483647', C, False, Range(0)),
    ('connections.max.idle.ms', T.LONG, '600000', R),
    ('connection.failed.authentication.delay.ms', T.INT, '100', R, False, Range(0)),
    ('queued.max.requests', T.INT, '500', R, False, Range(1)),
    ('queued.max.request.bytes', T.LONG, '-1', R),
    ('num.network.threads', T.INT, '3', C, False, Range(1)),
    ('controller.socket.timeout.ms', T.INT, '30000', R),
    ('default.replication.factor', T.INT, '1', R),
    ('replica.lag.time.max.ms', T.LONG, '30000', R),
    ('replica.socket.timeout.ms', T.INT, '30000', R),
    ('replica.socket.receive.buffer.bytes', T.INT, '65536', R),
    ('replica.fetch.max.bytes', T.INT, '1048576', R, False, Range(0)),
    ('replica.fetch.wait.max.ms', T.INT, '500', R),
    ('replica.fetch.backoff.ms', T.INT, '1000', R, False, Range(0)),
    ('replica.fetch.min.bytes', T.INT, '1', R),
    ('replica.fetch.response.max.bytes', T.INT, '10485760', R, False, Range(0)),
    ('num.replica.fetchers', T.INT, '1', C),
    ('replica.high.watermark.checkpoint.interval.ms', T.LONG, '5000', R),
    ('fetch.purgatory.purge.interval.requests', T.INT, '1000', R),
    ('producer.purgatory.purge.interval.requests', T.INT, '1000', R),
    ('delete.records.purgatory.purge.interval.requests', T.INT, '1', R),
    ('auto.leader.rebalance.enable', T.BOOLEAN, 'true', R),
    ('leader.imbalance.per.broker.percentage', T.INT, '10', R),
    ('leader.imbalance.check.interval.seconds', T.LONG, '300', R, False, Range(1)),
    ('unclean.leader.election.interval.ms', T.LONG, '300000', R, INTERNAL, Range(1)),
    ('unclean.leader.election.enable', T.BOOLEAN, 'false', C),
    ('security.inter.broker.protocol', T.STRING, 'PLAINTEXT', R, False, ValidString(('PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'))),
    ('inter.broker.protocol.version', T.STRING, '3.9-IV0', R),
    ('inter.broker.listener.name', T.STRING, None, R),
    ('replica.selector.class', T.STRING, None, R),
    ('group.min.session.timeout.ms', T.INT, '6000', R),
    ('group.max.session.timeout.ms', T.INT, '1800000', R),
    ('group.initial.rebalance.delay.ms', T.INT, '3000', R),
    ('group.max.size', T.INT, '2147483647', R, False, Range(1)),
    ('group.coordinator.rebalance.protocols', T.LIST, 'classic', R, False, ValidList(('consumer', 'classic', 'share', 'unknown'))),
    ('group.coordinator.threads', T.INT, '1', R, False, Range(1)),
    ('group.coordinator.append.linger.ms', T.INT, '10', R, False, Range(0)),
    ('group.coordinator.new.enable', T.BOOLEAN, 'false', R, INTERNAL),
    ('offset.metadata.max.bytes', T.INT, '4096', R),
    ('offsets.load.buffer.size', T.INT, '5242880', R, False, Range(1)),
    ('offsets.topic.replication.factor', T.SHORT, '3', R, False, Range(1)),
    ('offsets.topic.num.partitions', T.INT, '50', R, False, Range(1)),
    ('offsets.topic.segment.bytes', T.INT, '104857600', R, False, Range(1)),
    ('offsets.topic.compression.codec', T.INT, '0', R),
    ('offsets.retention.minutes', T.INT, '10080', R, False, Range(1)),
    ('offsets.retention.check.interval.ms', T.LONG, '600000', R, False, Range(1)),
    ('offsets.commit.timeout.ms', T.INT, '5000', R, False, Range(1)),
    ('offsets.commit.required.acks', T.SHORT, '-1', R),
    ('group.consumer.session.timeout.ms', T.INT, '45000', R, False, Range(1)),
    ('group.consumer.min.session.timeout.ms', T.INT, '45000', R, False, Range(1)),
    ('group.consumer.max.session.timeout.ms', T.INT, '60000', R, False, Range(1)),
    ('group.consumer.heartbeat.interval.ms', T.INT, '5000', R, False, Range(1)),
    ('group.consumer.min.heartbeat.interval.ms', T.INT, '5000', R, False, Range(1)),
    ('group.consumer.max.heartbeat.interval.ms', T.INT, '15000', R, False, Range(1)),
    ('group.consumer.max.size', T.INT, '2147483647', R, False, Range(1)),
    ('group.consumer.assignors', T.LIST, 'org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor', R),
    ('group.consumer.migration.policy', T.STRING, 'disabled', R, INTERNAL),
    ('group.share.session.timeout.ms', T.INT, '45000', R, False, Range(1)),
    ('group.share.min.session.timeout.ms', T.INT, '45000', R, False, Range(1)),
    ('group.share.max.session.timeout.ms', T.INT, '60000', R, False, Range(1)),
    ('group.share.heartbeat.interval.ms', T.INT, '5000', R, False, Range(1)),
    ('group.share.min.heartbeat.interval.ms', T.INT, '5000', R, False, Range(1)),
    ('group.share.max.heartbeat.interval.ms', T.INT, '15000', R, False, Range(1)),
    ('group.share.max.size', T.SHORT, '200', R, False, Range(10, 1000)),
    ('log.cleaner.threads', T.INT, '1', C, False, Range(0)),
    ('log.cleaner.io.max.bytes.per.second', T.DOUBLE, '1.7976931348623157E308', C),
    ('log.cleaner.dedupe.buffer.size', T.LONG, '134217728', C),
    ('log.cleaner.io.buffer.size', T.INT, '524288', C, False, Range(0)),
    ('log.cleaner.io.buffer.load.factor', T.DOUBLE, '0.9', C),
    ('log.cleaner.backoff.ms', T.LONG, '15000', C, False, Range(0)),
    ('log.cleaner.min.cleanable.ratio', T.DOUBLE, '0.5', C, False, Range(0, 1)),
    ('log.cleaner.enable', T.BOOLEAN, 'true', R),
    ('log.cleaner.delete.retention.ms', T.LONG, '86400000', C, False, Range(0)),
    ('log.cleaner.min.compaction.lag.ms', T.LONG, '0', C, False, Range(0)),
    ('log.cleaner.max.compaction.lag.ms', T.LONG, '9223372036854775807', C, False, Range(1)),
    ('num.partitions', T.INT, '1', R, False, Range(1)),
    ('log.dir', T.STRING, '/tmp/kafka-logs', R),
    ('log.dirs', T.STRING, None, R),
    ('log.segment.bytes', T.INT, '1073741824', C, False, Range(14)),
    ('log.roll.ms', T.LONG, None, C),
    ('log.roll.hours', T.INT, '168', R, False, Range(1)),
    ('log.roll.jitter.ms', T.LONG, None, C),
    ('log.roll.jitter.hours', T.INT, '0', R, False, Range(0)),
    ('log.retention.ms', T.LONG, None, C),
    ('log.retention.minutes', T.INT, None, R),
    ('log.retention.hours', T.INT, '168', R),
    ('log.retention.bytes', T.LONG, '-1', C),
    ('log.retention.check.interval.ms', T.LONG, '300000', R, False, Range(1)),
    ('log.cleanup.policy', T.LIST, 'delete', C, False, ValidList(('compact', 'delete'))),
    ('log.index.size.max.bytes', T.INT, '10485760', C, False, Range(4)),
    ('log.index.interval.bytes', T.INT, '4096', C, False, Range(0)),
    ('log.flush.interval.messages', T.LONG, '9223372036854775807', C, False, Range(1)),
    ('log.segment.delete.delay.ms', T.LONG, '60000', C, False, Range(0)),
    ('log.flush.scheduler.interval.ms', T.LONG, '9223372036854775807', R),
    ('log.flush.interval.ms', T.LONG, None, C),
    ('log.flush.offset.checkpoint.interval.ms', T.INT, '60000', R, False, Range(0)),
    ('log.flush.start.offset.checkpoint.interval.ms', T.INT, '60000', R, False, Range(0)),
    ('log.preallocate', T.BOOLEAN, 'false', C),
    ('num.recovery.threads.per.data.dir', T.INT, '1', C, False, Range(1)),
    ('auto.create.topics.enable', T.BOOLEAN, 'true', R),
    ('min.insync.replicas', T.INT, '1', C, False, Range(1)),
    ('log.message.format.version', T.STRING, '3.0-IV1', R),
    ('log.message.timestamp.type', T.STRING, 'CreateTime', C, False, ValidString(('CreateTime', 'LogAppendTime'))),
    ('log.message.timestamp.difference.max.ms', T.LONG, '9223372036854775807', C, False, Range(0)),
    ('log.message.timestamp.before.max.ms', T.LONG, '9223372036854775807', C, False, Range(0)),
    ('log.message.timestamp.after.max.ms', T.LONG, '9223372036854775807', C, False, Range(0)),
    ('create.topic.policy.class.name', T.CLASS, None, R),
    ('alter.config.policy.class.name', T.CLASS, None, R),
    ('log.message.downconversion.enable', T.BOOLEAN, 'true', C),
    ('log.dir.failure.timeout.ms', T.LONG, '30000', R, False, Range(1)),
    ('log.initial.task.delay.ms', T.LONG, '30000', R, INTERNAL, Range(0)),
    ('group.share.enable', T.BOOLEAN, 'false', R, INTERNAL),
    ('group.share.delivery.count.limit', T.INT, '5', R, False, Range(2, 10)),
    ('group.share.record.lock.duration.ms', T.INT, '30000', R, False, Range(1000, 60000)),
    ('group.share.min.record.lock.duration.ms', T.INT, '15000', R, False, Range(1000, 30000)),
    ('group.share.max.record.lock.duration.ms', T.INT, '60000', R, False, Range(30000, 3600000)),
    ('group.share.max.groups', T.SHORT, '10', R, False, Range(1, 100)),
    ('group.share.partition.max.record.locks', T.INT, '200', R, False, Range(100, 10000)),
    ('transaction.state.log.min.isr', T.INT, '2', R, False, Range(1)),
    ('transaction.state.log.load.buffer.size', T.INT, '5242880', R, False, Range(1)),
    ('transaction.state.log.replication.factor', T.SHORT, '3', R, False, Range(1)),
    ('transaction.state.log.num.partitions', T.INT, '50', R, False, Range(1)),
    ('transaction.state.log.segment.bytes', T.INT, '104857600', R, False, Range(1)),
    ('transaction.partition.verification.enable', T.BOOLEAN, 'true', C),
    ('producer.id.expiration.ms', T.INT, '86400000', C, False, Range(1)),
    ('producer.id.expiration.check.interval.ms', T.INT, '600000', R, INTERNAL, Range(1)),
    ('transactional.id.expiration.ms', T.INT, '604800000', R, False, Range(1)),
    ('transaction.max.timeout.ms', T.INT, '900000', R, False, Range(1)),
    ('transaction.abort.timed.out.transaction.cleanup.interval.ms', T.INT, '10000', R, False, Range(1)),
    ('transaction.remove.expired.transaction.cleanup.interval.ms', T.INT, '3600000', R, False, Range(1)),
    ('controller.quorum.voters', T.LIST, '', R),
    ('controller.quorum.bootstrap.servers', T.LIST, '', R),
    ('controller.quorum.election.timeout.ms', T.INT, '1000', R),
    ('controller.quorum.fetch.timeout.ms', T.INT, '2000', R),
    ('controller.quorum.election.backoff.max.ms', T.INT, '1000', R),
    ('controller.quorum.append.linger.ms', T.INT, '25', R),
    ('controller.quorum.request.timeout.ms', T.INT, '2000', R),
    ('controller.quorum.retry.backoff.ms', T.INT, '20', R),
    ('metrics.num.samples', T.INT, '2', R, False, Range(1)),
    ('metrics.sample.window.ms', T.LONG, '30000', R, False, Range(1)),
    ('metric.reporters', T.LIST, '', C),
    ('metrics.recording.level', T.STRING, 'INFO', R),
    ('auto.include.jmx.reporter', T.BOOLEAN, 'true', R),
    ('kafka.metrics.reporters', T.LIST, '', R),
    ('kafka.metrics.polling.interval.secs', T.INT, '10', R, False, Range(1)),
    ('telemetry.max.bytes', T.INT, '1048576', R, False, Range(1)),
    ('quota.window.num', T.INT, '11', R, False, Range(1)),
    ('replication.quota.window.num', T.INT, '11', R, False, Range(1)),
    ('alter.log.dirs.replication.quota.window.num', T.INT, '11', R, False, Range(1)),
    ('controller.quota.window.num', T.INT, '11', R, False, Range(1)),
    ('quota.window.size.seconds', T.INT, '1', R, False, Range(1)),
    ('replication.quota.window.size.seconds', T.INT, '1', R, False, Range(1)),
    ('alter.log.dirs.replication.quota.window.size.seconds', T.INT, '1', R, False, Range(1)),
    ('controller.quota.window.size.seconds', T.INT, '1', R, False, Range(1)),
    ('client.quota.callback.class', T.CLASS, None, R),
    ('connections.max.reauth.ms', T.LONG, '0', R),
    ('sasl.server.max.receive.size', T.INT, '524288', R),
    ('security.providers', T.STRING, None, R),
    ('principal.builder.class', T.CLASS, 'org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder', B),
    ('ssl.client.auth', T.STRING, 'none', B, False, ValidString(('required', 'requested', 'none'))),
    ('ssl.principal.mapping.rules', T.STRING, 'DEFAULT', R),
    ('ssl.allow.dn.changes', T.BOOLEAN, 'false', R),
    ('ssl.allow.san.changes', T.BOOLEAN, 'false', R),
    ('ssl.protocol', T.STRING, 'TLSv1.3', B),
    ('ssl.provider', T.STRING, None, B),
    ('ssl.enabled.protocols', T.LIST, 'TLSv1.2,TLSv1.3', B),
    ('ssl.keystore.type', T.STRING, 'JKS', B),
    ('ssl.keystore.location', T.STRING, None, B),
    ('ssl.keystore.password', T.PASSWORD, None, B),
    ('ssl.key.password', T.PASSWORD, None, B),
    ('ssl.keystore.key', T.PASSWORD, None, B),
    ('ssl.keystore.certificate.chain', T.PASSWORD, None, B),
    ('ssl.truststore.type', T.STRING, 'JKS', B),
    ('ssl.truststore.location', T.STRING, None, B),
    ('ssl.truststore.password', T.PASSWORD, None, B),
    ('ssl.truststore.certificates', T.PASSWORD, None, B),
    ('ssl.keymanager.algorithm', T.STRING, 'SunX509', B),
    ('ssl.trustmanager.algorithm', T.STRING, 'PKIX', B),
    ('ssl.endpoint.identification.algorithm', T.STRING, 'https', B),
    ('ssl.secure.random.implementation', T.STRING, None, B),
    ('ssl.cipher.suites', T.LIST, '', B),
    ('ssl.engine.factory.class', T.CLASS, None, B),
    ('sasl.mechanism.inter.broker.protocol', T.STRING, 'GSSAPI', B),
    ('sasl.enabled.mechanisms', T.LIST, 'GSSAPI', B),
    ('sasl.server.callback.handler.class', T.CLASS, None, R),
    ('sasl.kerberos.principal.to.local.rules', T.LIST, 'DEFAULT', B),
    ('sasl.jaas.config', T.PASSWORD, None, B),
    ('sasl.client.callback.handler.class', T.CLASS, None, R),
    ('sasl.login.class', T.CLASS, None, R),
    ('sasl.login.callback.handler.class', T.CLASS, None, R),
    ('sasl.kerberos.service.name', T.STRING, None, B),
    ('sasl.kerberos.kinit.cmd', T.STRING, '/usr/bin/kinit', B),
    ('sasl.kerberos.ticket.renew.window.factor', T.DOUBLE, '0.8', B),
    ('sasl.kerberos.ticket.renew.jitter', T.DOUBLE, '0.05', B),
    ('sasl.kerberos.min.time.before.relogin', T.LONG, '60000', B),
    ('sasl.login.refresh.window.factor', T.DOUBLE, '0.8', B),
    ('sasl.login.refresh.window.jitter', T.DOUBLE, '0.05', B),
    ('sasl.login.refresh.min.period.seconds', T.SHORT, '60', B),
    ('sasl.login.refresh.buffer.seconds', T.SHORT, '300', B),
    ('sasl.login.connect.timeout.ms', T.INT, None, R),
    ('sasl.login.read.timeout.ms', T.INT, None, R),
    ('sasl.login.retry.backoff.max.ms', T.LONG, '10000', R),
    ('sasl.login.retry.backoff.ms', T.LONG, '100', R),
    ('sasl.oauthbearer.scope.claim.name', T.STRING, 'scope', R),
    ('sasl.oauthbearer.sub.claim.name', T.STRING, 'sub', R),
    ('sasl.oauthbearer.token.endpoint.url', T.STRING, None, R),
    ('sasl.oauthbearer.jwks.endpoint.url', T.STRING, None, R),
    ('sasl.oauthbearer.jwks.endpoint.refresh.ms', T.LONG, '3600000', R),
    ('sasl.oauthbearer.jwks.endpoint.retry.backoff.ms', T.LONG, '100', R),
    ('sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms', T.LONG, '10000', R),
    ('sasl.oauthbearer.clock.skew.seconds', T.INT, '30', R),
    ('sasl.oauthbearer.expected.audience', T.LIST, None, R),
    ('sasl.oauthbearer.expected.issuer', T.STRING, None, R),
    ('delegation.token.master.key', T.PASSWORD, None, R),
    ('delegation.token.secret.key', T.PASSWORD, None, R),
    ('delegation.token.max.lifetime.ms', T.LONG, '604800000', R, False, Range(1)),
    ('delegation.token.expiry.time.ms', T.LONG, '86400000', R, False, Range(1)),
    ('delegation.token.expiry.check.interval.ms', T.LONG, '3600000', R, False, Range(1)),
    ('password.encoder.secret', T.PASSWORD, None, R),
    ('password.encoder.old.secret', T.PASSWORD, None, R),
    ('password.encoder.keyfactory.algorithm', T.STRING, None, R),
    ('password.encoder.cipher.algorithm', T.STRING, 'AES/CBC/PKCS5Padding', R),
    ('password.encoder.key.length', T.INT, '128', R, False, Range(8)),
    ('password.encoder.iterations', T.INT, '4096', R, False, Range(1024)),
)

BROKER_CONFIGS: dict[str, BrokerKey] = {row[0]: BrokerKey(*row) for row in _ROWS}

# SslConfigs.RECONFIGURABLE_CONFIGS: changed only per listener (listener.name.<l>.ssl.keystore.location...).
DYNAMIC_SECURITY_CONFIGS = (
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
)

# DynamicBrokerConfig.ClusterLevelListenerConfigs: listener-prefixed keys that may also be set cluster-wide.
CLUSTER_LEVEL_LISTENER_KEYS = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})

# QuotaConfigs.brokerQuotaConfigs: dynamic-only keys (not KafkaConfig's, so never described unless set, and read-only
# in a description) that DynamicConfig.Broker parses, before KafkaConfig's dynamic keys, and types in DescribeConfigs.
BROKER_QUOTA_CONFIGS: dict[str, BrokerKey] = {
    name: BrokerKey(name, T.LONG, str(LONG_MAX), C, validator=Range(0))
    for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                 "replica.alter.log.dirs.io.max.bytes.per.second")
}

# DynamicBrokerConfig.ListenerMechanismConfigs: listener.name.<l>.<mechanism>.<key> stands for <key>.
_LISTENER_MECHANISM_KEYS = ("sasl.jaas.config", "sasl.login.class", "sasl.login.callback.handler.class",
                            "sasl.server.callback.handler.class")
LISTENER_PREFIX = re.compile(r"listener\.name\.[^.]*\.(.*)")


@lru_cache(maxsize=4096)
def synonyms_of(name: str) -> tuple[str, ...]:
    """DynamicBrokerConfig.brokerConfigSynonyms(name, matchListenerOverride = true)."""
    grouped = broker_synonyms(name)
    if len(grouped) > 1:
        return grouped
    match = LISTENER_PREFIX.fullmatch(name)
    if match:
        base = match[1]
        mechanism = next((key for key in _LISTENER_MECHANISM_KEYS if base.endswith(key)), None)
        return (name, mechanism or base)
    return (name,)


def override_properties(base: Mapping[str, str], *layers: Mapping[str, str]) -> dict[str, str]:
    """DynamicBrokerConfig.overrideProps: each layer's keys replace the base's, and first remove their synonyms
    (a dynamic ``log.retention.ms`` hides a static ``log.retention.hours``), so the right precedence applies."""
    merged = dict(base)
    for layer in layers:
        for name, value in layer.items():
            for synonym in broker_synonyms(name):
                merged.pop(synonym, None)
            merged[name] = value
    return merged


def is_kafka_broker_key(name: str) -> bool:
    """Whether a server.properties key is one Kafka 3.9 knows: a KafkaConfig key, or one with a listener prefix
    whose base key is (``listener.name.<l>.ssl.keystore.location``, ``listener.name.<l>.plain.sasl.jaas.config``)."""
    return any(synonym in BROKER_CONFIGS for synonym in (name, *synonyms_of(name)))

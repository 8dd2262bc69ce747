"""DescribeLogDirs (key 35), v0-4, and AlterReplicaLogDirs (key 34), v0-2, as a Kafka 3.9 KRaft broker answers
(KafkaApis.handleDescribeLogDirsRequest / handleAlterReplicaLogDirsRequest, ReplicaManager.describeLogDirs /
alterReplicaLogDirs).

Behaviour. Both first ask their declared check (DESCRIBE, resp. ALTER, on the cluster). DescribeLogDirs without it
answers no directories and, from v3, error 31; AlterReplicaLogDirs answers 31 in every partition as the request
lists them (a partition named under two directories twice).

DescribeLogDirs answers one result per configured directory of ``log.dirs`` (each once, as its absolute path;
Kafka refuses to start with one named twice), with the replicas this node hosts in it (every partition is kept in
the first directory),
each with its log's size (the bytes of its segments, as UnifiedLog.size), offset lag 0 (the leader is its own high
watermark) and is_future false; v4 adds the file system's total and usable bytes. A null topic list means every
partition; otherwise only the requested partitions that exist appear (unknown ones are simply absent), and a topic
with none of them is left out (an emulated release before 3.7 lists it with no partitions: KAFKA-16807). Without
``log.dirs`` everything is in memory: one virtual directory, ``MEMORY_LOG_DIR``, with the bytes held and total/usable -1 (Kafka's "unknown volume bytes"), because there is no
volume a user could act on and the process' memory is not a disk.

AlterReplicaLogDirs checks each partition as ReplicaManager does, in its order: a topic name too long for a
``-future`` directory (over 255 characters) 17, a path that is not exactly one of the configured directories'
absolute paths 57 (LOG_DIR_NOT_FOUND; a trailing slash does not match, as in Kafka), an unknown topic or partition
3, a partition this node holds no replica of 9 (REPLICA_NOT_AVAILABLE), else 0 when the replica already is in that
directory. kafka-shim cannot move a replica between directories: a move to another configured directory answers
56 (KAFKA_STORAGE_ERROR) rather than a 0 that would leave a reassignment waiting forever.

Answer order: DescribeLogDirs lists the partitions as Kafka's ``LogManager.currentLogs`` iterates them (a
``ConcurrentHashMap`` of every log on the node keyed by TopicPartition, its table grown for the most logs it ever
held: ``Partitions.peak_open``; within a bucket in creation order), grouped by topic in the order of the Scala
``HashMap`` that ``groupBy`` builds over all the node's topics. In a cluster of several in-process brokers the table is
sized for the partitions of all of them. AlterReplicaLogDirs answers as KafkaApis groups ReplicaManager's result (a
Scala ``mutable.HashMap`` of partitions) by topic: topics in the immutable ``HashMap`` order ``groupBy`` builds, each
topic's partitions in its own ``mutable.HashMap``'s order; a partition named twice once, with the last path.

Version notes. DescribeLogDirs v1 is v0 (throttling), v2 flexible, v3 adds the top-level error, v4 the volume
sizes. AlterReplicaLogDirs v1 is v0, v2 flexible.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from kafka_shim.authorizer.model import CLUSTER_NAME
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import AlterReplicaLogDirsResponse, DescribeLogDirsResponse
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import scala_mutable_map_order, topic_partition_hash
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import scala_set
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext

log = get_logger(__name__)

_DESCRIBE = check(ApiKey.DESCRIBE_LOG_DIRS, "cluster")
_ALTER = check(ApiKey.ALTER_REPLICA_LOG_DIRS, "cluster")

# The name of the one directory an in-memory broker reports; not a path, so nobody looks for it on disk.
MEMORY_LOG_DIR = "kafka-shim:memory"
UNKNOWN_VOLUME_BYTES = -1  # DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES
# A future replica's directory is "<topic>-<partition>.<32 hex digits>-future"; Kafka refuses names above 255.
_FUTURE_SUFFIX_LENGTH = 1 + 32 + len("-future")
_MAX_DIR_NAME = 255
# java.util.concurrent.ConcurrentHashMap's first table (LogManager's Pool of logs is made with the default).
_CHM_INITIAL_CAPACITY = 16

_Result = DescribeLogDirsResponse.DescribeLogDirsResult
_Topic = DescribeLogDirsResponse.DescribeLogDirsTopic
_Partition = DescribeLogDirsResponse.DescribeLogDirsPartition
_AlterTopic = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
_AlterPartition = AlterReplicaLogDirsResponse.AlterReplicaLogDirPartitionResult


def absolute_log_dir(path: Path | str) -> str:
    """Java's Paths.get(dir).toAbsolutePath().toString(): relative to the working directory, repeated and trailing
    slashes dropped, nothing else resolved."""
    text = str(path)
    if not text.startswith("/"):
        text = os.getcwd() + "/" + text
    return re.sub(r"/+", "/", text).rstrip("/") or "/"


def configured_log_dirs(ctx: RequestContext) -> list[str]:
    """The directories a DescribeLogDirs reports, first the one holding the partitions; the virtual one in memory."""
    dirs = ctx.services.config.log_dirs
    if not dirs:
        return [MEMORY_LOG_DIR]
    return list(dict.fromkeys(absolute_log_dir(d) for d in dirs))


def _hosted(ctx: RequestContext) -> Iterable[tuple[str, int]]:
    """(topic, partition) of every replica this node holds, in creation order."""
    node = ctx.node_id
    for name, topic in list(ctx.services.cluster.topics.items()):
        for partition in topic.partitions:
            if node in partition.replicas:
                yield name, partition.index


# -- DescribeLogDirs ------------------------------------------------------------------------------------------------

def describe_log_dirs_error_response(request: messages.DescribeLogDirsRequest, code: int, message: str | None) -> DescribeLogDirsResponse:
    """DescribeLogDirsRequest.getErrorResponse: the code (v3+) and no directories."""
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=code, results=[])


@handles(ApiKey.DESCRIBE_LOG_DIRS, 0, 4, error_response=describe_log_dirs_error_response)
def describe_log_dirs(ctx: RequestContext, request: messages.DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not allowed(ctx, _DESCRIBE, CLUSTER_NAME):
        return describe_log_dirs_error_response(request, _DESCRIBE.error_code, None)
    wanted = None if request.topics is None else {(t.topic, p) for t in request.topics for p in t.partitions}
    topics: dict[str, list[_Partition]] = {}
    partitions = ctx.services.partitions
    # before KAFKA-16807 (3.7.1) every topic in the directory was listed, those with no requested partition empty
    every_topic = ctx.services.release_rules.log_dirs_list_every_topic
    for name, index in _kafka_log_order(list(_hosted(ctx)), partitions.peak_open if partitions is not None else 0):
        state = partitions.get(name, index) if partitions is not None else None
        if state is None:
            continue
        if wanted is not None and (name, index) not in wanted:
            if every_topic:
                topics.setdefault(name, [])
            continue
        topics.setdefault(name, []).append(_Partition(partition_index=index, partition_size=state.log.size, offset_lag=0,
                                                      is_future_key=False))
    dirs = configured_log_dirs(ctx)
    results = [_directory(ctx, path, topics if i == 0 else {}) for i, path in enumerate(dirs)]
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, results=results)


def _kafka_log_order(hosted: list[tuple[str, int]], peak: int) -> list[tuple[str, int]]:
    """The node's partitions as ReplicaManager.describeLogDirs walks them: the logs in ConcurrentHashMap order,
    grouped by topic (``groupBy``: an immutable HashMap, in its order over every topic the node holds)."""
    capacity = _CHM_INITIAL_CAPACITY
    while peak >= capacity - (capacity >> 2):  # addCount resizes once the count reaches three quarters
        capacity *= 2
    position = {key: index for index, key in enumerate(hosted)}

    def bucket(key: tuple[str, int]) -> tuple[int, int]:
        h = topic_partition_hash(key)
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (capacity - 1), position[key]

    logs = sorted(hosted, key=bucket)
    by_topic: dict[str, list[tuple[str, int]]] = {}
    for key in logs:
        by_topic.setdefault(key[0], []).append(key)
    return [key for topic in scala_set(by_topic, java_string_hash, hashed=True) for key in by_topic[topic]]


def _directory(ctx: RequestContext, path: str, topics: dict[str, list[_Partition]]) -> _Result:
    entries = [_Topic(name=name, partitions=parts) for name, parts in topics.items()]
    if path == MEMORY_LOG_DIR:
        return _Result(error_code=ErrorCode.NONE, log_dir=path, topics=entries, total_bytes=UNKNOWN_VOLUME_BYTES,
                       usable_bytes=UNKNOWN_VOLUME_BYTES)
    try:
        usage = shutil.disk_usage(path)
    except OSError as exc:  # Kafka reports a directory it cannot read as offline
        log.warning("log_dir_unreadable", log_dir=path, error=str(exc))
        return _Result(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path, topics=[])
    # statvfs' f_bavail (what an unprivileged writer may use) is Java's getUsableSpace, as Kafka reports it.
    return _Result(error_code=ErrorCode.NONE, log_dir=path, topics=entries, total_bytes=usage.total, usable_bytes=usage.free)


# -- AlterReplicaLogDirs --------------------------------------------------------------------------------------------

def alter_replica_log_dirs_error_response(request: messages.AlterReplicaLogDirsRequest, code: int,
                                          message: str | None) -> AlterReplicaLogDirsResponse:
    """AlterReplicaLogDirsRequest.getErrorResponse: every partition with the code, one entry per (directory, topic)."""
    return AlterReplicaLogDirsResponse(throttle_time_ms=0, results=[
        _AlterTopic(topic_name=t.name, partitions=[_AlterPartition(partition_index=p, error_code=code) for p in t.partitions])
        for d in request.dirs for t in d.topics
    ])


@handles(ApiKey.ALTER_REPLICA_LOG_DIRS, 0, 2, error_response=alter_replica_log_dirs_error_response)
def alter_replica_log_dirs(ctx: RequestContext, request: messages.AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse:
    if not allowed(ctx, _ALTER, CLUSTER_NAME):
        return alter_replica_log_dirs_error_response(request, _ALTER.error_code, None)
    destinations: dict[tuple[str, int], str] = {}  # AlterReplicaLogDirsRequest.partitionDirs: the last path named wins
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                destinations[(t.name, p)] = d.path
    dirs = configured_log_dirs(ctx)
    codes: dict[tuple[str, int], ErrorCode] = {}
    for (topic, partition), path in destinations.items():
        code = codes[(topic, partition)] = _alter_one(ctx, dirs, topic, partition, path)
        if code != ErrorCode.NONE:
            log.info("alter_replica_log_dir_refused", topic=topic, partition=partition, log_dir=path, error_code=int(code))
    return AlterReplicaLogDirsResponse(throttle_time_ms=0, results=[
        _AlterTopic(topic_name=topic, partitions=[_AlterPartition(partition_index=p, error_code=codes[(topic, p)]) for _, p in keys])
        for topic, keys in _kafka_alter_order(list(codes))
    ])


def _kafka_alter_order(keys: list[tuple[str, int]]) -> list[tuple[str, list[tuple[str, int]]]]:
    """The (topic, its partitions) of KafkaApis' ``result.groupBy(_._1.topic)``: ReplicaManager maps the request's
    partitions into a Scala mutable.HashMap; groupBy puts each topic's into a mutable.HashMap of its own and the
    topics into an immutable HashMap (built from empty, so hashed even for a few topics). Each order depends on the
    hash codes only."""
    by_topic: dict[str, list[tuple[str, int]]] = {}
    for key in scala_mutable_map_order(keys, topic_partition_hash):
        by_topic.setdefault(key[0], []).append(key)
    return [(topic, scala_mutable_map_order(by_topic[topic], topic_partition_hash))
            for topic in scala_set(by_topic, java_string_hash, hashed=True)]


def _alter_one(ctx: RequestContext, dirs: list[str], topic: str, partition: int, path: str) -> ErrorCode:
    """ReplicaManager.alterReplicaLogDirs for one partition on a node whose replicas all live in ``dirs[0]``."""
    if len(topic) + 1 + len(str(partition)) + _FUTURE_SUFFIX_LENGTH > _MAX_DIR_NAME:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if path not in dirs:
        return ErrorCode.LOG_DIR_NOT_FOUND
    found = ctx.services.cluster.topics.get(topic)
    if found is None or not 0 <= partition < len(found.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if ctx.node_id not in found.partitions[partition].replicas:
        return ErrorCode.REPLICA_NOT_AVAILABLE  # Kafka's NOT_LEADER_OR_FOLLOWER, kept as 9 for this API
    return ErrorCode.NONE if path == dirs[0] else ErrorCode.KAFKA_STORAGE_ERROR

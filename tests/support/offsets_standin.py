"""A test-only stand-in for OffsetCommit (8) and OffsetFetch (9) while the offsets part of issue 14 is not merged.

Real consumers fetch their committed offsets right after their first assignment, so the classic group tests need
these two APIs to consume at all. ``install()`` registers them only when no real handler exists, so once
``shim/handlers/offsets.py`` lands it does nothing and the tests run against the real one. It keeps offsets in memory
per broker and asks the coordinator's member checks (``validate_classic_offset_commit``, or
``validate_consumer_offset_commit`` for a KIP-848 group, whose members commit with v9); no ACLs, no
metadata size limit, no persistence.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.shim.handlers import REGISTRY, handles, load_all


def install() -> None:
    load_all()
    if ApiKey.OFFSET_COMMIT in REGISTRY or ApiKey.OFFSET_FETCH in REGISTRY:
        return

    def store(ctx) -> dict:
        groups = ctx.services.groups
        if not hasattr(groups, "_standin_offsets"):
            groups._standin_offsets = {}
        return groups._standin_offsets

    @handles(ApiKey.OFFSET_COMMIT, 2, 9)
    def offset_commit(ctx, request: messages.OffsetCommitRequest):
        groups = ctx.services.groups
        if groups.consumer_group(request.group_id) is not None:  # KIP-848 members commit with v9 and their epoch
            code = groups.validate_consumer_offset_commit(request.group_id, request.member_id,
                                                          request.generation_id_or_member_epoch, ctx.api_version)
        else:
            code = groups.validate_classic_offset_commit(
                request.group_id, request.generation_id_or_member_epoch, request.member_id,
                request.group_instance_id if ctx.api_version >= 7 else None, ctx.api_version)
        offsets = store(ctx)
        R = messages.OffsetCommitResponse
        topics = []
        for t in request.topics:
            for p in t.partitions:
                if code == ErrorCode.NONE:
                    offsets[(request.group_id, t.name, p.partition_index)] = (p.committed_offset, p.committed_metadata)
            topics.append(R.OffsetCommitResponseTopic(name=t.name, partitions=[
                R.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code) for p in t.partitions]))
        return R(throttle_time_ms=0, topics=topics)

    @handles(ApiKey.OFFSET_FETCH, 1, 7)
    def offset_fetch(ctx, request: messages.OffsetFetchRequest):
        offsets = store(ctx)
        R = messages.OffsetFetchResponse
        wanted = ([(t.name, list(t.partition_indexes)) for t in request.topics] if request.topics is not None else
                  sorted({(tp, []) for (g, tp, _) in offsets if g == request.group_id}))
        topics = []
        for name, parts in wanted:
            parts = parts or sorted(p for (g, tp, p) in offsets if g == request.group_id and tp == name)
            topics.append(R.OffsetFetchResponseTopic(name=name, partitions=[
                R.OffsetFetchResponsePartition(
                    partition_index=p, committed_offset=offsets.get((request.group_id, name, p), (-1, ""))[0],
                    committed_leader_epoch=-1, metadata=offsets.get((request.group_id, name, p), (-1, ""))[1] or "",
                    error_code=0) for p in parts]))
        return R(throttle_time_ms=0, topics=topics, error_code=0)

"""Differences the KRaft release probe (seeds against real 3.3.2 and 3.4.1 in KRaft mode) found between real Kafka 3.4.1
and kafka-shim with ``kafka.version=3.4``, each pinned as the same request to both brokers, answers compared field by
field: the group APIs that answered from hash maps before 3.5 moved them onto the GroupCoordinator interface.

scripts/real-kafka starts 3.4.1 in KRaft mode (REAL_KAFKA_MODE=kraft: StandardAuthorizer, the same SASL users and super
users, PLAIN only, as 3.4 cannot format SCRAM credentials); kafka-shim runs with ``kafka.version=3.4`` and the same.
One real broker for the module; every test names its own topics, groups and transactional ids. The names are chosen so
that the hash orders differ from the request's (checked on Kafka's answer), so an answer in request order cannot pass.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import (
    CreateAclsRequest,
    DeleteGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)
from tests.differential.test_kraft_release_findings import GROUP, Pair, release_pair, shim_config
from tests.support.compare import assert_same
from tests.support.wire import Wire

LINE, RELEASE = "3.4", "3.4.1"  # the last release line before 3.5's change, and the real release that judges it
P = "kraft34-"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    yield from release_pair(tmp_path_factory.mktemp(f"kafka-{RELEASE}"), RELEASE, shim_config(LINE), "KRaft 3.4 findings",
                            mode="kraft")


def _what(text: str) -> str:
    return f"{text} (Kafka {RELEASE} vs kafka-shim kafka.version={LINE})"


def _commit(pair: Pair, group: str, topics: list[str]) -> None:
    """Offsets 1 on partition 0 of each topic, as admin, once the group's coordinator is ready on both."""
    pair.coordinator(group, GROUP)
    pair.until_ready(ApiKey.OFFSET_COMMIT, 2, lambda side: OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1, topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=name, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])
            for name in topics]),
        lambda body: max(p.error_code for t in body.topics for p in t.partitions))


def test_delete_groups_answers_refused_groups_in_the_hash_map(pair: Pair) -> None:
    """Before 3.5 DeleteGroups answered the coordinator's mutable.HashMap ++ the refused groups, one mutable.HashMap:
    a refused group (30) may come first, where 3.5+ list the refused ones last."""
    allowed, refused = f"{P}dg-x", f"{P}dg-y"  # alice may delete the first (absent: 69), not the second
    pair.coordinator(allowed, GROUP)
    acl = CreateAclsRequest.AclCreation(resource_type=3, resource_name=allowed, resource_pattern_type=3,
                                        principal="User:alice", host="*", operation=6, permission_type=3)
    kafka, shim = pair.both(ApiKey.CREATE_ACLS, 1, CreateAclsRequest(creations=[acl]))
    assert [r.error_code for r in kafka.body.results] == [r.error_code for r in shim.body.results] == [0]
    body = DeleteGroupsRequest(groups_names=[allowed, refused])
    deadline = time.monotonic() + 30
    while True:  # the ACL reaches Kafka's authorizer and the coordinator loads a moment later
        answers = []
        for address in pair.addresses:
            with Wire(address) as wire:
                wire.sasl_plain("alice", "alice-secret")
                answers.append(wire.request(ApiKey.DELETE_GROUPS, 1, body))
        if {r.error_code for r in answers[0].body.results} == {30, 69} or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert_same(answers[0], answers[1], what=_what("DeleteGroups v1 of an allowed and a refused group"))
    assert [(r.group_id, r.error_code) for r in answers[0].body.results] == [(refused, 30), (allowed, 69)]


def test_offset_fetch_answers_partitions_from_hash_maps(pair: Pair) -> None:
    """Before 3.5 OffsetFetch answered a group's partitions from one immutable Map (a partition named twice once),
    grouped by topic in OffsetFetchResponse's java.util.HashMap, where 3.5+ answer as the request names them."""
    group, first, second = f"{P}of-g1", f"{P}of-1", f"{P}of-2"
    for name in (first, second):
        pair.create_topic(name)
    _commit(pair, group, [first, second])
    topic = OffsetFetchRequest.OffsetFetchRequestTopic
    body = OffsetFetchRequest(group_id=group, topics=[topic(name=first, partition_indexes=[0]),
                                                      topic(name=second, partition_indexes=[0]),
                                                      topic(name=first, partition_indexes=[0])], require_stable=False)
    for version in (1, 5):
        kafka, shim = pair.both(ApiKey.OFFSET_FETCH, version, body)
        assert_same(kafka, shim, what=_what(f"OffsetFetch v{version} naming a topic twice"))
        assert [t.name for t in kafka.body.topics] == [second, first]


def test_offset_fetch_v8_fetches_a_group_named_twice_once(pair: Pair) -> None:
    """Before 3.5 OffsetFetch v8 kept its groups in maps by id: a group named twice is answered once, fetched with its
    first entry's all-partitions choice (OffsetFetchRequest.isAllPartitionsForGroup) and its last entry's partitions;
    a group whose first entry names partitions and last asks for all fails on a null list (-1 on every group, in
    getErrorResponse's HashMap sized by the request's entries)."""
    group, other, first, second = f"{P}v8-g1", f"{P}v8-g3", f"{P}v8-1", f"{P}v8-2"
    for name in (first, second):
        pair.create_topic(name)
    _commit(pair, group, [first, second])
    _commit(pair, other, [first])
    named = [OffsetFetchRequest.OffsetFetchRequestTopics(name=first, partition_indexes=[0])]
    entry = OffsetFetchRequest.OffsetFetchRequestGroup
    all_first = OffsetFetchRequest(groups=[entry(group_id=group, topics=None), entry(group_id=group, topics=named)],
                                   require_stable=False)
    kafka, shim = pair.both(ApiKey.OFFSET_FETCH, 8, all_first)
    assert_same(kafka, shim, what=_what("OffsetFetch v8 of a group asked for all partitions, then for one"))
    assert [(g.group_id, sorted(t.name for t in g.topics)) for g in kafka.body.groups] == [(group, [first, second])]
    null_last = OffsetFetchRequest(groups=[entry(group_id=group, topics=named), entry(group_id=other, topics=named),
                                           entry(group_id=other, topics=None)], require_stable=False)
    kafka, shim = pair.both(ApiKey.OFFSET_FETCH, 8, null_last)
    assert_same(kafka, shim, what=_what("OffsetFetch v8 of a group asked for one partition, then for all"))
    assert [(g.group_id, g.error_code) for g in kafka.body.groups] == [(other, -1), (group, -1)]


def test_txn_offset_commit_answers_from_one_hash_map(pair: Pair) -> None:
    """Before 3.5 TxnOffsetCommit answered every partition from one mutable.HashMap (a partition named twice once),
    grouped by topic in a java.util.HashMap, where 3.5+ list the refused and unknown topics first, in request order."""
    present, absent, group, transactional_id = f"{P}tx-a", f"{P}tx-b", f"{P}txn-g", f"{P}txn"
    pair.create_topic(present)
    _commit(pair, group, [present])
    producers = pair.init_transaction(transactional_id)
    partition = TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition

    def commit(side: int) -> TxnOffsetCommitRequest:
        producer_id, epoch = producers[side]
        return TxnOffsetCommitRequest(
            transactional_id=transactional_id, group_id=group, producer_id=producer_id, producer_epoch=epoch,
            generation_id=-1, member_id="", topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=present, partitions=[
                    partition(partition_index=0, committed_offset=1), partition(partition_index=0, committed_offset=2)]),
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=absent, partitions=[
                    partition(partition_index=0, committed_offset=1)])])

    for version in (0, 3):
        kafka, shim = pair.each(ApiKey.TXN_OFFSET_COMMIT, version, commit)
        assert_same(kafka, shim, what=_what(f"TxnOffsetCommit v{version} of a present and an absent topic"))
        assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in kafka.body.topics] == [
            (present, [(0, 0)]), (absent, [(0, 3)])]

"""AddRaftVoter (80) and RemoveRaftVoter (81) against a real Kafka 3.9 with a static single-voter quorum: denied, and
each check the Raft client makes before refusing a voter change at kraft.version 0."""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.protocol.messages import AddRaftVoterRequest, RemoveRaftVoterRequest
from tests.support.acl_peers import ALTER, ANONYMOUS, CLUSTER, Peers, acl

ADD, REMOVE = 80, 81
DIRECTORY = uuid.UUID("11111111-2222-3333-4444-555555555555")


def _add(voter_id: int = 2, directory: uuid.UUID = DIRECTORY, listeners=(("CONTROLLER", "localhost", 9093),),
         cluster_id: str | None = None) -> AddRaftVoterRequest:
    return AddRaftVoterRequest(cluster_id=cluster_id, timeout_ms=30000, voter_id=voter_id, voter_directory_id=directory,
                               listeners=[AddRaftVoterRequest.Listener(name=n, host=h, port=p) for n, h, p in listeners])


def test_voter_changes_denied(peers: Peers) -> None:
    peers.same(ADD, 0, _add(), "AddRaftVoter denied")
    peers.same(REMOVE, 0, RemoveRaftVoterRequest(cluster_id=None, voter_id=2, voter_directory_id=DIRECTORY), "RemoveRaftVoter denied")


@pytest.mark.parametrize("body", [
    _add(), _add(voter_id=-1), _add(directory=uuid.UUID(int=0)), _add(listeners=()),
    _add(listeners=(("EXTERNAL", "h", 1), ("other", "h2", 2))), _add(cluster_id="not-this-one"),
    _add(listeners=(("controller", "localhost", 9093),)),
], ids=["kraft-version-0", "no-id", "no-directory", "no-listener", "other-listeners", "cluster-id", "lower-case"])
def test_add_raft_voter_checks(peers: Peers, body) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER))
    peers.same(ADD, 0, body, "AddRaftVoter", ignore=("error_message",) if body.cluster_id else ())


@pytest.mark.parametrize("voter", [(1, DIRECTORY), (-1, DIRECTORY), (2, uuid.UUID(int=0))], ids=str)
def test_remove_raft_voter_checks(peers: Peers, voter) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER))
    peers.same(REMOVE, 0, RemoveRaftVoterRequest(cluster_id=None, voter_id=voter[0], voter_directory_id=voter[1]), "RemoveRaftVoter")

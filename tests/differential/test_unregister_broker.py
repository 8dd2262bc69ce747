"""UnregisterBroker (64) against a real Kafka 3.9 (single node 1): an unknown id, denied and allowed; and
`kafka-cluster.sh unregister` against both."""

from __future__ import annotations

import subprocess
import sys

from kafka_shim.protocol.messages import UnregisterBrokerRequest
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_peers import ALTER, ANONYMOUS, CLUSTER, Peers, acl
from tests.support.peers import REAL_KAFKA, RealKafka

UNREGISTER = 64


def test_unregister_an_unknown_broker(peers: Peers) -> None:
    peers.same(UNREGISTER, 0, UnregisterBrokerRequest(broker_id=99), "UnregisterBroker denied")
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER))
    peers.same(UNREGISTER, 0, UnregisterBrokerRequest(broker_id=99), "UnregisterBroker of an unknown id")


def test_kafka_cluster_sh_unregister(oracle: RealKafka, shim_peer: EmbeddedBroker) -> None:
    def tool(bootstrap: str, *config: str) -> tuple[int, str]:
        proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", "org.apache.kafka.tools.ClusterTool", "unregister",
                               "--bootstrap-server", bootstrap, *config, "--id", "99"], capture_output=True, text=True, timeout=300)
        # the tool's own lines, without log4j's timestamp prefix
        return proc.returncode, [line.split("] ", 1)[-1] for line in (proc.stdout + proc.stderr).strip().splitlines()]

    kafka = tool("{}:{}".format(*oracle.sasl), "--config", oracle.info["files"]["admin_properties"])
    assert tool(shim_peer.bootstrap_servers) == kafka

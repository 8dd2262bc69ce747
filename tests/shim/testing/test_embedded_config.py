"""EmbeddedBroker's configuration as the README shows it: a BrokerConfig, or server.properties keys as a dict."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shim.shim import EmbeddedBroker


def test_a_dict_of_server_properties_configures_the_broker_on_a_free_port() -> None:
    with EmbeddedBroker({"num.partitions": "3"}) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("defaulted")])["defaulted"].result(30)  # -1 partitions: num.partitions
        assert len(admin.list_topics(timeout=30).topics["defaulted"].partitions) == 3
        assert not broker.bootstrap_servers.endswith(":9092")

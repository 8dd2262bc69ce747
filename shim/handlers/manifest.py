"""Which handler module serves each API key, at which versions, and whether it has a whole-request error form.

The broker's API table is built from this manifest at start, so ApiVersions can list every API without importing a
single handler; a handler module is imported on the first request of one of its keys, or earlier, one module per
turn of the broker's loop once it listens (importing all of them at start, with the authorizer checks, codecs and
partition code they pull in, was a third of kafka-shim's start-up). The entries
restate the ``@handles`` registrations; tests/shim/handlers/test_manifest.py compares the two, and loading a
handler checks its registration against its entry, so they cannot drift apart unnoticed. A new handler module
needs its keys added here (the test names the missing ones).
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_shim.protocol.codes import ApiKey


class ApiModule(NamedTuple):  # a NamedTuple: a dataclass costs ~20x more to define, and this is read at every start
    module: str  # the module of this package whose @handles registers the key
    min_version: int
    max_version: int
    error_form: bool  # registered with error_response= (the request class's getErrorResponse)


# In the order a started broker loads them while idle (what clients ask first, first).
MANIFEST: dict[int, ApiModule] = {
    ApiKey.API_VERSIONS: ApiModule("api_versions", 0, 4, error_form=True),
    ApiKey.METADATA: ApiModule("metadata", 0, 12, error_form=True),
    ApiKey.PRODUCE: ApiModule("produce", 0, 11, error_form=True),
    ApiKey.FETCH: ApiModule("fetch", 0, 17, error_form=True),
    ApiKey.LIST_OFFSETS: ApiModule("list_offsets", 0, 9, error_form=True),
    ApiKey.FIND_COORDINATOR: ApiModule("find_coordinator", 0, 6, error_form=True),
    ApiKey.JOIN_GROUP: ApiModule("groups", 0, 9, error_form=True),
    ApiKey.SYNC_GROUP: ApiModule("groups", 0, 5, error_form=True),
    ApiKey.HEARTBEAT: ApiModule("groups", 0, 4, error_form=True),
    ApiKey.LEAVE_GROUP: ApiModule("groups", 0, 5, error_form=True),
    ApiKey.OFFSET_FETCH: ApiModule("offsets", 0, 9, error_form=True),
    ApiKey.OFFSET_COMMIT: ApiModule("offsets", 0, 9, error_form=True),
    ApiKey.OFFSET_DELETE: ApiModule("offsets", 0, 0, error_form=True),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: ApiModule("consumer_groups", 0, 0, error_form=True),
    ApiKey.CONSUMER_GROUP_DESCRIBE: ApiModule("consumer_groups", 0, 0, error_form=True),
    ApiKey.DESCRIBE_GROUPS: ApiModule("group_admin", 0, 5, error_form=True),
    ApiKey.LIST_GROUPS: ApiModule("group_admin", 0, 5, error_form=True),
    ApiKey.DELETE_GROUPS: ApiModule("group_admin", 0, 2, error_form=True),
    ApiKey.INIT_PRODUCER_ID: ApiModule("init_producer_id", 0, 5, error_form=True),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ApiModule("offset_for_leader_epoch", 0, 4, error_form=True),
    ApiKey.CREATE_TOPICS: ApiModule("topics", 0, 7, error_form=True),
    ApiKey.DELETE_TOPICS: ApiModule("topics", 0, 6, error_form=True),
    ApiKey.CREATE_PARTITIONS: ApiModule("topics", 0, 3, error_form=True),
    ApiKey.DESCRIBE_CLUSTER: ApiModule("describe_cluster", 0, 1, error_form=True),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: ApiModule("describe_topic_partitions", 0, 0, error_form=True),
    ApiKey.DESCRIBE_CONFIGS: ApiModule("configs", 0, 4, error_form=True),
    ApiKey.ALTER_CONFIGS: ApiModule("configs", 0, 2, error_form=True),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ApiModule("configs", 0, 1, error_form=True),
    ApiKey.DELETE_RECORDS: ApiModule("delete_records", 0, 2, error_form=True),
    ApiKey.DESCRIBE_LOG_DIRS: ApiModule("log_dirs", 0, 4, error_form=True),
    ApiKey.ALTER_REPLICA_LOG_DIRS: ApiModule("log_dirs", 0, 2, error_form=True),
    ApiKey.DESCRIBE_QUORUM: ApiModule("describe_quorum", 0, 2, error_form=True),
    ApiKey.SASL_HANDSHAKE: ApiModule("sasl", 0, 1, error_form=True),
    ApiKey.SASL_AUTHENTICATE: ApiModule("sasl", 0, 2, error_form=True),
    ApiKey.DESCRIBE_ACLS: ApiModule("acls", 0, 3, error_form=True),
    ApiKey.CREATE_ACLS: ApiModule("acls", 0, 3, error_form=True),
    ApiKey.DELETE_ACLS: ApiModule("acls", 0, 3, error_form=True),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ApiModule("scram_credentials", 0, 0, error_form=True),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ApiModule("scram_credentials", 0, 0, error_form=True),
    ApiKey.ELECT_LEADERS: ApiModule("elect_leaders", 0, 2, error_form=True),
    ApiKey.DESCRIBE_PRODUCERS: ApiModule("describe_producers", 0, 0, error_form=True),
    ApiKey.ADD_PARTITIONS_TO_TXN: ApiModule("transactions", 0, 5, error_form=True),
    ApiKey.ADD_OFFSETS_TO_TXN: ApiModule("transactions", 0, 4, error_form=True),
    ApiKey.END_TXN: ApiModule("transactions", 0, 4, error_form=True),
    ApiKey.TXN_OFFSET_COMMIT: ApiModule("txn_offset_commit", 0, 4, error_form=True),
    ApiKey.WRITE_TXN_MARKERS: ApiModule("write_txn_markers", 0, 1, error_form=True),
    ApiKey.CREATE_DELEGATION_TOKEN: ApiModule("delegation_tokens", 0, 3, error_form=True),
    ApiKey.RENEW_DELEGATION_TOKEN: ApiModule("delegation_tokens", 0, 2, error_form=True),
    ApiKey.EXPIRE_DELEGATION_TOKEN: ApiModule("delegation_tokens", 0, 2, error_form=True),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: ApiModule("delegation_tokens", 0, 3, error_form=True),
    ApiKey.DESCRIBE_TRANSACTIONS: ApiModule("transactions_admin", 0, 0, error_form=True),
    ApiKey.LIST_TRANSACTIONS: ApiModule("transactions_admin", 0, 1, error_form=True),
    ApiKey.UNREGISTER_BROKER: ApiModule("unregister_broker", 0, 0, error_form=True),
    ApiKey.UPDATE_FEATURES: ApiModule("update_features", 0, 1, error_form=True),
    ApiKey.ADD_RAFT_VOTER: ApiModule("raft_voters", 0, 0, error_form=True),
    ApiKey.REMOVE_RAFT_VOTER: ApiModule("raft_voters", 0, 0, error_form=True),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ApiModule("client_quotas", 0, 1, error_form=True),
    ApiKey.ALTER_CLIENT_QUOTAS: ApiModule("client_quotas", 0, 1, error_form=True),
    ApiKey.LIST_CLIENT_METRICS_RESOURCES: ApiModule("client_metrics", 0, 0, error_form=True),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ApiModule("reassignments", 0, 0, error_form=True),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ApiModule("reassignments", 0, 0, error_form=True),
}

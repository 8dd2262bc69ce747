"""Pipelining as recorded, seen by the broker: a raw client sends a ListGroups that the broker answers late (an
injected delay) and, without waiting for it, a Metadata request; the replay (captured by the target broker itself,
with the same delay) sends the Metadata while the ListGroups still waits, and a request recorded after an answer
only after that answer. (Not behind a long-polling Fetch: while a Fetch is being answered the broker takes no further
request of its connection, as Kafka takes one request at a time.)"""

from __future__ import annotations

import datetime

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import CreateTopicsRequest, ListGroupsRequest, MetadataRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.traces.format import iter_requests
from kafka_shim.traces.replay.cli import main
from tests.support.wire import Wire

WAIT_MS = 1500  # how late the broker answers the first ListGroups
AFTER = 101  # the correlation id the Wire gives the request sent after both answers


def _config() -> BrokerConfig:
    return BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1"})


def _address(broker: EmbeddedBroker) -> tuple[str, int]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return host, int(port)


def _workload(address: tuple[str, int]) -> None:
    with Wire(address) as wire:
        wire.send_frame(encode_request(ApiKey.LIST_GROUPS, 4, 1, ListGroupsRequest(states_filter=[])))
        wire.send_frame(encode_request(ApiKey.METADATA, 12, 2, MetadataRequest(topics=None)))
        assert wire.read_answer(ApiKey.LIST_GROUPS, 4).correlation_id == 1
        assert wire.read_answer(ApiKey.METADATA, 12).correlation_id == 2
        # Sent only after both answers:
        assert wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=None)).correlation_id == AFTER


def _rows(trace) -> dict[int, dict]:
    return {r.row["correlation_id"]: r.row for r in iter_requests(trace) if r.row["api_key"] in (ApiKey.LIST_GROUPS, ApiKey.METADATA)}


def _answered(row: dict) -> datetime.datetime:
    return row["time"] + datetime.timedelta(microseconds=row["response_time_us"])


def test_the_replay_pipelines_where_the_client_did_and_waits_where_it_waited(tmp_path) -> None:
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    with EmbeddedBroker(_config(), capture_dir=recorded) as broker:
        broker.faults.delay("ListGroups", WAIT_MS)
        _workload(_address(broker))
    with EmbeddedBroker(_config(), capture_dir=replayed) as target:
        target.faults.delay("ListGroups", WAIT_MS)
        host, port = _address(target)
        assert main([str(recorded), "--bootstrap-server", f"{host}:{port}", "--pace", "fast"]) == 0
    for trace in (recorded, replayed):
        rows = _rows(trace)
        late, pipelined, after = rows[1], rows[2], rows[AFTER]
        assert late["response_time_us"] >= WAIT_MS * 1000 * 0.9
        assert pipelined["time"] < _answered(late), trace  # sent while the ListGroups was still waiting
        assert after["time"] >= _answered(rows[2]), trace  # sent once the answers had come


THINK_S = 0.6  # the client's pause between the CreateTopics answer and its next request (another connection)
SLOW_CREATE_MS = 1500  # how much later the replay's broker answers the CreateTopics


def _thinking_workload(address: tuple[str, int]) -> None:
    import time

    with Wire(address) as admin, Wire(address) as client:
        topic = CreateTopicsRequest.CreatableTopic(name="later", num_partitions=1, replication_factor=1)
        assert admin.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=10000)).body.topics[0].error_code == 0
        time.sleep(THINK_S)  # the recorded client's think time, the behaviour under test
        client.request(ApiKey.METADATA, 12, MetadataRequest(topics=None))


def test_recorded_pace_keeps_the_think_time_after_an_answer_that_came_late(tmp_path) -> None:
    """A request waits for the answers recorded before it; at the recorded pace it also keeps the gap the client left
    after the last of them, measured from when that answer came in the replay (Kafka spreads a new topic to its
    metadata after answering CreateTopics: a Metadata sent at once may not see it yet)."""
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    with EmbeddedBroker(_config(), capture_dir=recorded) as broker:
        _thinking_workload(_address(broker))
    with EmbeddedBroker(_config(), capture_dir=replayed) as target:
        target.faults.delay("CreateTopics", SLOW_CREATE_MS)
        host, port = _address(target)
        assert main([str(recorded), "--bootstrap-server", f"{host}:{port}", "--pace", "recorded"]) in (0, 1)
    rows = {r.row["api_key"]: r.row for r in iter_requests(replayed) if r.row["api_key"] in (ApiKey.CREATE_TOPICS, ApiKey.METADATA)}
    create, metadata = rows[ApiKey.CREATE_TOPICS], rows[ApiKey.METADATA]
    assert create["response_time_us"] >= SLOW_CREATE_MS * 1000 * 0.9
    assert metadata["time"] - _answered(create) >= datetime.timedelta(seconds=THINK_S * 0.8)

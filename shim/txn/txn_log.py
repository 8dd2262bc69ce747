"""The transaction log: transaction states kept in ``__transaction_state`` in Kafka 3.9's record format.

Kafka's counterparts: TransactionLog (``keyToBytes`` / ``valueToBytes`` / ``readTxnRecordKey`` /
``readTxnRecordValue``) with the TransactionLogKey (v0) and TransactionLogValue schemas of the
transaction-coordinator module, and TransactionStateManager's loader. 3.9 writes value version 0 until the
``transaction.version`` feature enables flexible records, so kafka-shim writes v0 and reads v0-1. Each record is a
version-prefixed key and value in a magic-2 batch, uncompressed, written to partition ``abs(javaHash(id)) %
partitions``; an expired transactional id is a tombstone. ``kafka-dump-log.sh --transaction-log-decoder`` prints
them as it prints Kafka's. At start every partition is read from its log start: the last record of each id wins.
"""

from __future__ import annotations

import struct
from typing import Protocol

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.log.partition_log import PartitionLog, decoded_batches
from kafka_shim.shim.txn.metadata import TransactionMetadata, Transit, TxnState

log = get_logger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"
_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class TransactionTopic(Protocol):
    """``__transaction_state`` as the coordinator needs it (the Broker adapts the partitions manager)."""

    def partition_count(self) -> int | None:
        """The topic's partitions, or None while it does not exist."""

    def log(self, partition: int) -> PartitionLog:
        """A partition's log (the topic exists)."""

    def leader_epoch(self, partition: int) -> int:
        """The partition's leader epoch, stamped on the batches the coordinator writes (as on a producer's)."""

    def appended(self, partition: int) -> None:
        """Tell the broker a partition grew."""


class TxnLogError(Exception):
    """The record could not be written (no topic, a full disk): the request answers ``error_code``."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def partition_for(transactional_id: str, partitions: int) -> int:
    """TransactionStateManager.partitionFor: Utils.abs(transactionalId.hashCode) % partitions."""
    h = java_string_hash(transactional_id)
    h = h - (1 << 32) if h & 0x80000000 else h
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def key_bytes(transactional_id: str) -> bytes:
    return _I16.pack(0) + _string(transactional_id)


def value_bytes(transit: Transit) -> bytes:
    """TransactionLogValue v0; Empty carries a null partition list, other states their partitions by topic."""
    out = bytearray(_I16.pack(0))
    out += _I64.pack(transit.producer_id) + _I16.pack(transit.producer_epoch) + _I32.pack(transit.timeout_ms)
    out += _I8.pack(int(transit.state))
    if transit.state == TxnState.EMPTY:
        out += _I32.pack(-1)
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(transit.partitions):
            by_topic.setdefault(topic, []).append(partition)
        out += _I32.pack(len(by_topic))
        for topic, ids in by_topic.items():
            out += _string(topic) + _I32.pack(len(ids)) + b"".join(_I32.pack(i) for i in ids)
    out += _I64.pack(transit.update_ms) + _I64.pack(transit.start_ms)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: struct.Struct) -> int:
        value = fmt.unpack_from(self.data, self.pos)[0]
        self.pos += fmt.size
        return value

    def string(self) -> str:
        length = self.take(_I16)
        text = self.data[self.pos:self.pos + length].decode("utf-8")
        self.pos += length
        return text

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def compact_string(self) -> str:
        length = self.varint() - 1
        text = self.data[self.pos:self.pos + length].decode("utf-8")
        self.pos += length
        return text


def read_key(key: bytes) -> str | None:
    """The transactional id of a TransactionLogKey v0, None for another version (Kafka skips those)."""
    reader = _Reader(key)
    if reader.take(_I16) != 0:
        return None
    return reader.string()


def read_value(transactional_id: str, value: bytes) -> TransactionMetadata:
    """TransactionLog.readTxnRecordValue: v0, or v1 (flexible: compact strings and arrays, tagged fields ignored)."""
    reader = _Reader(value)
    version = reader.take(_I16)
    if version not in (0, 1):
        raise ValueError(f"unknown TransactionLogValue version {version}")
    producer_id, epoch, timeout_ms, status = reader.take(_I64), reader.take(_I16), reader.take(_I32), reader.take(_I8)
    partitions: set[tuple[str, int]] = set()
    count = reader.take(_I32) if version == 0 else reader.varint() - 1
    for _ in range(max(count, 0)):
        topic = reader.string() if version == 0 else reader.compact_string()
        ids = reader.take(_I32) if version == 0 else reader.varint() - 1
        partitions.update((topic, reader.take(_I32)) for _ in range(ids))
        if version == 1:
            reader.varint()  # the struct's tagged fields
    update_ms, start_ms = reader.take(_I64), reader.take(_I64)
    state = TxnState(status)
    return TransactionMetadata(transactional_id, producer_id, producer_epoch=epoch, timeout_ms=timeout_ms, state=state,
                               partitions=partitions if state != TxnState.EMPTY else set(), start_ms=start_ms,
                               update_ms=update_ms)




class TransactionLog:
    """Writes transitions to ``__transaction_state`` and reads the last state of every id back."""

    def __init__(self, topic: TransactionTopic) -> None:
        self.topic = topic

    def partition_of(self, transactional_id: str) -> int | None:
        count = self.topic.partition_count()
        return None if count is None else partition_for(transactional_id, count)

    def append(self, transactional_id: str, transit: Transit | None, now_ms: int) -> None:
        """One record (a tombstone for ``None``), acks=-1 as Kafka's coordinator writes: raises TxnLogError."""
        count = self.topic.partition_count()
        if count is None:
            raise TxnLogError(ErrorCode.NOT_COORDINATOR, f"{TRANSACTION_STATE_TOPIC} does not exist")
        value = None if transit is None else value_bytes(transit)
        data = encode_batch(build_batch([(key_bytes(transactional_id), value, [], now_ms)]))
        partition = partition_for(transactional_id, count)
        try:
            self.topic.log(partition).append(data, leader_epoch=self.topic.leader_epoch(partition))
        except Exception as exc:  # a full disk or a failing log: Kafka's append fails and the request with it
            # TransactionStateManager.appendTransactionToLog maps storage errors to NOT_COORDINATOR / UNKNOWN
            raise TxnLogError(ErrorCode.NOT_COORDINATOR, str(exc)) from exc
        self.topic.appended(partition)

    def load(self) -> dict[str, TransactionMetadata]:
        """Every id's last state (TransactionStateManager.loadTransactionMetadata)."""
        states: dict[str, TransactionMetadata] = {}
        for partition in range(self.topic.partition_count() or 0):
            for batch in decoded_batches(self.topic.log(partition)):
                if batch.is_control:
                    continue
                for record in batch.records:
                    try:
                        transactional_id = read_key(record.key or b"")
                        if transactional_id is None:
                            continue
                        if record.value is None:
                            states.pop(transactional_id, None)
                        else:
                            states[transactional_id] = read_value(transactional_id, record.value)
                    except (ValueError, struct.error, IndexError, UnicodeDecodeError) as exc:
                        log.warning("unreadable_transaction_log_record", partition=partition,
                                    offset=batch.base_offset + record.offset_delta, error=str(exc),
                                    hint="the record is skipped; the transaction state it held is not restored")
        return states

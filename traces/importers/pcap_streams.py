"""TCP connections out of segments: both directions reassembled in sequence order.

Segments are grouped by their address/port pair into connections (a new SYN on a pair whose connection ended
starts another one). Each direction's bytes are put together by sequence number, not by arrival: out-of-order
segments are placed where they belong, retransmissions and overlapping segments contribute only the bytes not
already there (the first copy of a byte wins, as the receiving TCP keeps it). Bytes the capture missed (a packet
tcpdump dropped, a packet cut short) are a gap: the direction's bytes end there, and ``gap_at`` says where, so the
Kafka layer can stop and report instead of misreading what follows. Sequence numbers are unwrapped (32-bit
wrap-around), so a direction may carry more than 4 GiB.

Each byte also gets the time it became readable in order: the time of the packet that completed the contiguous
stream up to it (an early out-of-order segment is readable only once the hole before it is filled).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_shim.traces.importers.pcap_packets import ACK, FIN, RST, SYN, Segment

_WRAP = 1 << 32


@dataclass(slots=True)
class Direction:
    """One direction of a connection: its bytes in order up to the first gap, and when each part was readable."""

    segments: list[tuple[int, int, bytes, bool]] = field(default_factory=list)  # (unwrapped seq, time, payload, cut)
    isn: int | None = None  # the SYN's sequence number (data starts at isn + 1)
    last_seq: int | None = None  # unwrapped, for unwrapping the next one
    fin: bool = False
    fin_seq: int | None = None  # unwrapped sequence number of the FIN: the data ends there
    peer_acked: int | None = None  # the highest sequence number the other end acknowledged (unwrapped)
    rst: bool = False
    first_time_us: int | None = None  # of the first segment with data: who spoke first is the client
    data: bytes = b""
    gap_at: int | None = None  # offset in ``data``'s stream of the first missing byte, or None
    _offsets: list[int] = field(default_factory=list)
    _times: list[int] = field(default_factory=list)

    def add(self, segment: Segment) -> None:
        if segment.flags & SYN:
            self.isn = segment.seq
        if segment.flags & RST:
            self.rst = True
        if segment.flags & FIN:
            self.fin = True
            self.fin_seq = self._unwrap(segment.seq) + len(segment.payload)
        if not segment.payload:
            return
        if self.first_time_us is None:
            self.first_time_us = segment.time_us
        seq = self._unwrap(segment.seq)
        self.segments.append((seq, segment.time_us, segment.payload, segment.truncated))

    def acknowledged(self, ack: int) -> None:
        """The other end acknowledged up to ``ack``: bytes before it were sent, captured or not."""
        if self.last_seq is None:
            return
        nearest = self._nearest(ack)
        self.peer_acked = nearest if self.peer_acked is None else max(self.peer_acked, nearest)

    def _unwrap(self, seq: int) -> int:
        if self.last_seq is None:
            self.last_seq = seq
            return seq
        best = self._nearest(seq)
        self.last_seq = max(self.last_seq, best)
        return best

    def _nearest(self, seq: int) -> int:
        # the candidate nearest to the last one seen: segments never jump by 2 GiB
        assert self.last_seq is not None
        base = self.last_seq - (self.last_seq % _WRAP)
        return min((base + seq + k * _WRAP for k in (-1, 0, 1)), key=lambda s: abs(s - self.last_seq))

    def assemble(self) -> None:
        """Put the bytes together in sequence order, up to the first gap."""
        if not self.segments:
            return
        if self.isn is not None:
            start = self._unwrap(self.isn) + 1
            if start > min(s for s, *_ in self.segments):
                start = min(s for s, *_ in self.segments)
        else:
            start = min(s for s, *_ in self.segments)  # the capture began mid-connection
        chunks: list[bytes] = []
        position, ready_time = start, 0
        # sorted by sequence number, then arrival: the first copy of a byte is the one kept
        for seq, time_us, payload, cut in sorted(self.segments, key=lambda s: (s[0], s[1])):
            end = seq + len(payload)
            if end <= position:
                continue  # a retransmission of bytes already placed
            if seq > position:
                self.gap_at = position - start
                break
            ready_time = max(ready_time, time_us)
            self._offsets.append(position - start)
            self._times.append(ready_time)
            chunks.append(payload[position - seq:])
            position = end
            if cut:
                self.gap_at = position - start  # the capture holds no more of this packet
                break
        if self.gap_at is None and self._sent_beyond(position):
            self.gap_at = position - start  # the last bytes were sent (a FIN after them, or acknowledged), not captured
        self.data = b"".join(chunks)
        self.segments = []

    def _sent_beyond(self, position: int) -> bool:
        if self.fin_seq is not None and self.fin_seq > position:
            return True
        # a FIN counts one in the sequence space: an acknowledgement one past the data is the FIN's
        return self.peer_acked is not None and self.peer_acked > position + 1

    def time_at(self, offset: int) -> int:
        """When the byte at ``offset`` was readable in order (µs)."""
        i = bisect.bisect_right(self._offsets, offset) - 1
        return self._times[max(i, 0)] if self._times else (self.first_time_us or 0)


@dataclass(slots=True)
class Connection:
    """A TCP connection: the two ends as first seen (``a`` sent the SYN when it was captured) and their directions."""

    a: tuple[str, int]
    b: tuple[str, int]
    a_to_b: Direction = field(default_factory=Direction)
    b_to_a: Direction = field(default_factory=Direction)
    saw_syn: bool = False
    first_where: str = ""

    def direction(self, src: tuple[str, int]) -> Direction:
        return self.a_to_b if src == self.a else self.b_to_a

    @property
    def ended(self) -> bool:
        return self.a_to_b.fin or self.b_to_a.fin or self.a_to_b.rst or self.b_to_a.rst


def connections(segments: Iterable[Segment]) -> list[Connection]:
    """Segments grouped into connections, in order of their first packet, each direction assembled."""
    open_by_pair: dict[frozenset[tuple[str, int]], Connection] = {}
    found: list[Connection] = []
    for segment in segments:
        src, dst = (segment.src, segment.sport), (segment.dst, segment.dport)
        pair = frozenset((src, dst))
        connection = open_by_pair.get(pair)
        opening = segment.flags & SYN and not segment.flags & ACK
        if connection is None or (opening and connection.ended) or (
                opening and connection.a_to_b.isn is not None and connection.a_to_b.isn != segment.seq):
            connection = Connection(src, dst, first_where=segment.where)
            connection.saw_syn = bool(opening)
            if not opening and segment.flags & SYN:  # a SYN-ACK first: the other end opened it
                connection.a, connection.b = dst, src
                connection.saw_syn = True
            open_by_pair[pair] = connection
            found.append(connection)
        connection.direction(src).add(segment)
        if segment.flags & ACK:
            connection.direction(dst).acknowledged(segment.ack)
    for connection in found:
        connection.a_to_b.assemble()
        connection.b_to_a.assemble()
    return found

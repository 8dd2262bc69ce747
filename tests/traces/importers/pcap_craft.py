"""Crafted packet captures for the pcap importer's tests: Kafka frames put into TCP segments on a chosen link type,
written with dpkt's pcap and pcapng writers. Segments are plain data, so a test can reorder, repeat, cut or lose
them before writing, as networks and tcpdump do."""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass, replace
from pathlib import Path

import dpkt

from kafka_shim.protocol.framing import encode_request, encode_response
from kafka_shim.protocol.messages import Message

SYN, FIN, ACK, PSH = 0x02, 0x01, 0x10, 0x08


@dataclass(frozen=True)
class Packet:
    time: float
    from_client: bool
    seq: int
    flags: int
    payload: bytes
    ack: int = 0


def request(api_key: int, version: int, correlation_id: int, body: Message, client_id: str = "craft") -> bytes:
    return encode_request(api_key, version, correlation_id, body, client_id)


def response(api_key: int, version: int, correlation_id: int, body: Message) -> bytes:
    return encode_response(api_key, version, correlation_id, body)


def conversation(exchange: list[tuple[bool, bytes]], *, mss: int = 1000, start: float = 1_700_000_000.0,
                 client_isn: int = 1000, broker_isn: int = 5000, close: bool = True, handshake: bool = True) -> list[Packet]:
    """A TCP connection carrying ``exchange`` ((from_client, size-prefixed frames) in order), split at ``mss``, each
    packet 1 ms after the one before."""
    packets: list[Packet] = []
    t = start
    isn = {True: client_isn, False: broker_isn}
    seq = {True: client_isn + 1, False: broker_isn + 1}

    def add(from_client: bool, flags: int, payload: bytes = b"") -> None:
        nonlocal t
        s = isn[from_client] if flags & SYN else seq[from_client]
        ack = seq[not from_client] if flags & ACK else 0  # all the other end sent so far
        packets.append(Packet(t, from_client, s, flags, payload, ack))
        t += 0.001
        seq[from_client] = s + len(payload) + (1 if flags & (SYN | FIN) else 0)

    if handshake:
        add(True, SYN)
        add(False, SYN | ACK)
        add(True, ACK)
    for from_client, data in exchange:
        for i in range(0, len(data), mss):
            add(from_client, ACK | PSH, data[i:i + mss])
    if close:
        add(True, FIN | ACK)
        add(False, FIN | ACK)
    return packets


def retimed(packets: list[Packet], start: float = 1_700_000_000.0) -> list[Packet]:
    """The packets in their new order, times rising 1 ms apart again (capture order is time order)."""
    return [replace(p, time=start + i * 0.001) for i, p in enumerate(packets)]


def _ip(src: str, dst: str, tcp: bytes) -> bytes:
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version == 4:
        header = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0, a.packed, b.packed)
        return header + tcp
    return struct.pack(">IHBB16s16s", 6 << 28, len(tcp), 6, 64, a.packed, b.packed) + tcp


def _tcp(sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0) + payload


def frames(packets: list[Packet], client: tuple[str, int], broker: tuple[str, int], link: str) -> list[tuple[float, bytes]]:
    """Link-layer frames of ``link`` (ethernet, sll, sll2, null, raw) for the packets."""
    out = []
    for p in packets:
        (src, sport), (dst, dport) = (client, broker) if p.from_client else (broker, client)
        ip = _ip(src, dst, _tcp(sport, dport, p.seq, p.ack, p.flags, p.payload))
        ethertype = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
        if link == "ethernet":
            frame = b"\x02" * 6 + b"\x04" * 6 + struct.pack(">H", ethertype) + ip
        elif link == "sll":
            frame = struct.pack(">HHH8sH", 0 if not p.from_client else 4, 772, 6, b"\0" * 8, ethertype) + ip
        elif link == "sll2":
            frame = struct.pack(">HHIHBB8s", ethertype, 0, 1, 772, 0, 6, b"\0" * 8) + ip
        elif link == "null":
            family = socket.AF_INET if ethertype == 0x0800 else 30
            frame = struct.pack("<I", family) + ip
        else:
            frame = ip
        out.append((p.time, frame))
    return out


LINK_TYPES = {"ethernet": dpkt.pcap.DLT_EN10MB, "sll": 113, "sll2": 276, "null": dpkt.pcap.DLT_NULL, "raw": 101}


def write(path: Path, packets: list[Packet], *, client: tuple[str, int] = ("10.1.2.3", 51000),
          broker: tuple[str, int] = ("10.1.2.4", 19092), link: str = "ethernet", pcapng: bool = False) -> Path:
    """Write the packets as a capture file of ``link`` type; pcapng when asked."""
    with open(path, "wb") as f:
        writer = (dpkt.pcapng.Writer(f, linktype=LINK_TYPES[link]) if pcapng
                  else dpkt.pcap.Writer(f, linktype=LINK_TYPES[link], nano=False))
        for t, frame in frames(packets, client, broker, link):
            writer.writepkt(frame, ts=t)
    return path

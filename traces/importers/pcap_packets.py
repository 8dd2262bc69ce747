"""TCP segments out of a packet capture file: pcap or pcapng (read with dpkt), IPv4 and IPv6.

Link types: Ethernet (with VLAN tags), Linux cooked capture v1 and v2 (``tcpdump -i any`` writes SLL, newer
libpcap SLL2), BSD loopback (NULL / LOOP, as macOS ``tcpdump -i lo0``) and raw IP. What cannot be read is reported
(``ImportReport``) and skipped: an unknown link type, an IP fragment (Kafka's TCP traffic is never fragmented in
practice), a packet cut short by the snap length or by a file that ends mid-packet (its bytes are kept as far as
they go, the reassembly sees the rest as missing), a file that ends inside a packet header.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

import dpkt

from kafka_shim.traces.importers.report import ImportReport

# libpcap's LINKTYPE_ values.
LINK_NULL = 0
LINK_ETHERNET = 1
LINK_RAW = 101
LINK_RAW_OLD = (12, 14)  # DLT_RAW on some BSDs
LINK_LOOP = 108
LINK_LINUX_SLL = 113
LINK_LINUX_SLL2 = 276
LINK_IPV4 = 228
LINK_IPV6 = 229

_ETHERTYPE_IPV4, _ETHERTYPE_IPV6, _ETHERTYPE_VLAN = 0x0800, 0x86DD, (0x8100, 0x88A8)
_TCP = 6
_IPV6_EXTENSIONS = {0, 43, 60}  # hop-by-hop, routing, destination options: skipped to reach TCP
_IPV6_FRAGMENT = 44
_U16 = struct.Struct(">H")
_TCP_HEADER = struct.Struct(">HHIIBB")

# TCP flags.
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10


@dataclass(frozen=True, slots=True)
class Segment:
    """One TCP segment: who sent it to whom, when, its sequence number, flags and payload."""

    time_us: int
    src: str  # the address as a Java broker renders it
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    truncated: bool  # the capture holds fewer payload bytes than the packet carried
    where: str  # "FILE#packet" for reports


def read_segments(path: str | Path, report: ImportReport) -> Iterator[Segment]:
    """Every TCP segment of a pcap or pcapng file, in file order; what is not TCP over IP is skipped quietly, what
    cannot be read is reported."""
    name = Path(path).name
    with open(path, "rb") as f:
        reader = _open_reader(f, name, report)
        if reader is None:
            return
        link = reader.datalink()
        if link not in _LINK_PARSERS:
            report.problem("unknown_link_type", name, f"link type {link} is not one of Ethernet, Linux cooked (SLL/SLL2), "
                           "loopback or raw IP; nothing read from this file")
            return
        parse_link = _LINK_PARSERS[link]
        number = 0
        packets = iter(reader)
        while True:
            try:
                ts, frame = next(packets)
            except StopIteration:
                break
            except (dpkt.NeedData, dpkt.UnpackError, struct.error, ValueError) as exc:
                report.problem("truncated_file", f"{name}#{number + 1}", f"the file ends inside a packet record ({exc}); "
                               "the packets before it are read")
                break
            number += 1
            report.count("packets")
            where = f"{name}#{number}"
            segment = _segment(parse_link(frame), round(ts * 1_000_000), where, report)
            if segment is not None:
                yield segment


def _open_reader(f: BinaryIO, name: str, report: ImportReport) -> Any:
    magic = f.read(4)
    f.seek(0)
    try:
        if magic == b"\x0a\x0d\x0d\x0a":
            return dpkt.pcapng.Reader(f)
        return dpkt.pcap.Reader(f)
    except (ValueError, dpkt.NeedData, dpkt.UnpackError, struct.error) as exc:
        report.problem("not_a_capture", name, f"not a pcap or pcapng file ({exc or 'empty'})")
        return None


# -- link layers: each returns the IP packet (bytes) or None ----------------------------------------------------


def _ethernet(frame: bytes) -> bytes | None:
    if len(frame) < 14:
        return None
    offset, ethertype = 14, _U16.unpack_from(frame, 12)[0]
    while ethertype in _ETHERTYPE_VLAN and len(frame) >= offset + 4:
        ethertype = _U16.unpack_from(frame, offset + 2)[0]
        offset += 4
    return frame[offset:] if ethertype in (_ETHERTYPE_IPV4, _ETHERTYPE_IPV6) else None


def _sll(frame: bytes) -> bytes | None:
    if len(frame) < 16:
        return None
    return frame[16:] if _U16.unpack_from(frame, 14)[0] in (_ETHERTYPE_IPV4, _ETHERTYPE_IPV6) else None


def _sll2(frame: bytes) -> bytes | None:
    if len(frame) < 20:
        return None
    return frame[20:] if _U16.unpack_from(frame, 0)[0] in (_ETHERTYPE_IPV4, _ETHERTYPE_IPV6) else None


def _loopback(frame: bytes) -> bytes | None:
    # A 4-byte address family in the writer's byte order (NULL) or big-endian (LOOP); its values differ between
    # BSDs for IPv6 (24, 28, 30), so the IP version nibble after it decides.
    return frame[4:] if len(frame) > 4 else None


def _raw(frame: bytes) -> bytes | None:
    return frame


_LINK_PARSERS = {LINK_ETHERNET: _ethernet, LINK_LINUX_SLL: _sll, LINK_LINUX_SLL2: _sll2, LINK_NULL: _loopback,
                 LINK_LOOP: _loopback, LINK_RAW: _raw, LINK_IPV4: _raw, LINK_IPV6: _raw,
                 **dict.fromkeys(LINK_RAW_OLD, _raw)}


# -- IP and TCP ------------------------------------------------------------------------------------------------


def _segment(ip: bytes | None, time_us: int, where: str, report: ImportReport) -> Segment | None:
    if not ip:
        return None
    version = ip[0] >> 4
    if version == 4:
        parsed = _ipv4(ip, where, report)
    elif version == 6:
        parsed = _ipv6(ip, where, report)
    else:
        return None
    if parsed is None:
        return None
    src, dst, tcp, expected = parsed
    if len(tcp) < 20:
        if expected >= 20:
            report.problem("truncated_packet", where, "TCP header cut off by the capture; packet skipped")
        return None
    sport, dport, seq, ack, offset_byte, flags = _TCP_HEADER.unpack_from(tcp)
    header = (offset_byte >> 4) * 4
    payload = tcp[header:]
    truncated = len(tcp) < expected
    if truncated:
        report.problem("truncated_packet", where, f"{expected - len(tcp)} of its bytes are not in the capture "
                       "(snap length or a cut file); the stream has a gap there")
    return Segment(time_us, src, sport, dst, dport, seq, ack, flags, payload, truncated, where)


def _ipv4(ip: bytes, where: str, report: ImportReport) -> tuple[str, str, bytes, int] | None:
    if len(ip) < 20 or ip[9] != _TCP:
        return None
    header = (ip[0] & 0x0F) * 4
    total = _U16.unpack_from(ip, 2)[0]
    if _U16.unpack_from(ip, 6)[0] & 0x3FFF:  # more-fragments flag or a fragment offset
        report.problem("ip_fragment", where, "fragmented IPv4 packet; not reassembled, skipped")
        return None
    src, dst = _host(ip[12:16]), _host(ip[16:20])
    # total 0: TCP segmentation offload captured before the NIC split it; the bytes present are the packet
    end = total if total else len(ip)
    return src, dst, ip[header:end], end - header


def _ipv6(ip: bytes, where: str, report: ImportReport) -> tuple[str, str, bytes, int] | None:
    if len(ip) < 40:
        return None
    payload_length, next_header = _U16.unpack_from(ip, 4)[0], ip[6]
    src, dst = _host(ip[8:24]), _host(ip[24:40])
    offset, end = 40, 40 + payload_length if payload_length else len(ip)
    while next_header in _IPV6_EXTENSIONS and len(ip) >= offset + 2:
        next_header, offset = ip[offset], offset + (ip[offset + 1] + 1) * 8
    if next_header == _IPV6_FRAGMENT:
        report.problem("ip_fragment", where, "fragmented IPv6 packet; not reassembled, skipped")
        return None
    if next_header != _TCP:
        return None
    return src, dst, ip[offset:end], end - offset


@cache
def _host(raw: bytes) -> str:
    """An address as a Java broker writes it in connection ids: IPv4 dotted, IPv6 as eight groups uncompressed."""
    addr = ipaddress.ip_address(raw)
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return str(addr.ipv4_mapped)
        return ":".join(format(int(g, 16), "x") for g in addr.exploded.split(":"))
    return str(addr)

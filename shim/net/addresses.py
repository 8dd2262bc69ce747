"""Client addresses rendered the way a Java broker renders them (InetAddress.getHostAddress).

ACL hosts are compared as text, so an IPv6 client must look exactly as it would to
Kafka: eight groups, no compression, no leading zeros; IPv4-mapped addresses as IPv4.
"""

from __future__ import annotations

import ipaddress


def java_host_address(host: str) -> str:
    scope = ""
    if "%" in host:
        host, scope = host.split("%", 1)
        scope = "%" + scope
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return host + scope
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return str(addr.ipv4_mapped)
        groups = addr.exploded.split(":")
        return ":".join(format(int(g, 16), "x") for g in groups) + scope
    return str(addr)

"""What an address the console itself would connect to is (`address_kind`): the cloud metadata address, loopback,
link-local, private or other non-public space, or public — the one classification behind every outgoing request the
console makes for a user (webhooks, the MLflow mirror), each of which decides what it allows by these kinds.

Tier: shared (pure, plus name resolution in `resolve`; no database, no HTTP).
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["METADATA", "Address", "address_kind", "ip_of", "resolve"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# the cloud metadata services (AWS/GCP/Azure/OpenStack on IPv4, AWS on IPv6): never reached, whatever is allowed
METADATA = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})


def ip_of(text: str) -> Address:
    """Return the address `text` names (a zone index dropped; an IPv4-mapped IPv6 address as its IPv4 address)."""
    ip = ipaddress.ip_address(text.split("%", 1)[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped if mapped is not None else ip


def resolve(host: str, port: int) -> list[str]:
    """Return every address `host` resolves to for a TCP connection to `port` (OSError when it does not)."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def address_kind(ip: Address) -> str:
    """Return `metadata`, `loopback`, `link-local`, `unroutable` (unspecified, multicast, reserved), `private`
    (private, shared or any other non-global space) or `public`."""
    if ip in METADATA:
        return "metadata"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_unspecified or ip.is_multicast or ip.is_reserved:
        return "unroutable"
    if ip.is_private or not ip.is_global:
        return "private"
    return "public"

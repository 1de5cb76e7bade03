"""Where a hook may send: `check_url` reads a hook's URL and resolves its host, and refuses it at `url` unless every
address it resolves to is allowed; the sender connects to the address checked (never resolving twice), so a name
that changes its answer between the check and the connection (DNS rebinding) reaches nothing it was refused.

Refused, in this order: a scheme other than http or https, credentials in the URL, a host that does not resolve;
then per address: the cloud metadata addresses (169.254.169.254, fd00:ec2::254; always), the console itself (its
listening address and port, its `public_url`; always), and loopback, link-local, private, shared, unspecified,
multicast and reserved space unless the operator allows it (`notify.allow_hosts`).

Tier: shared (name resolution only; no database).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from ....contract import Problem
from ...settings import Settings
from ..outbound import Address, address_kind, resolve
from ..outbound import ip_of as _ip

__all__ = ["MAX_URL", "Resolver", "Target", "check_url", "resolve"]

MAX_URL = 2000
_WILDCARDS = ("", "0.0.0.0", "::")
_ALLOW_HINT = "an operator may allow such addresses with `notify.allow_hosts` (docs/console.md#notifications)"

Resolver = Callable[[str, int], Sequence[str]]


@dataclass(frozen=True)
class Target:
    """A checked hook URL: how to reach it (`addresses`, every one allowed) and what to ask for."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def _problem(code: str, message: str, hint: str) -> list[Problem]:
    return [Problem("url", code, message, hint)]


def _console_addresses(settings: Settings, resolver: Resolver) -> set[tuple[Address, int]]:
    """Return the (address, port) pairs the console answers on: its listening address (every address of the machine
    when it listens on all) and its public URL's."""
    own: set[tuple[Address, int]] = set()
    hosts = [settings.host] if settings.host not in _WILDCARDS else []
    if settings.host in _WILDCARDS:
        hosts += ["127.0.0.1", "::1", socket.gethostname()]
    for host in hosts:
        try:
            own.update((_ip(a), settings.port) for a in resolver(host, settings.port))
        except (OSError, ValueError):
            continue
    if settings.public_url:
        public = urlsplit(settings.public_url)
        try:
            port = public.port or (443 if public.scheme == "https" else 80)
            own.update((_ip(a), port) for a in resolver(public.hostname or "", port))
        except (OSError, ValueError):
            pass
    return own


def _allowed(ip: Address, settings: Settings) -> bool:
    return any(ip in ipaddress.ip_network(item, strict=False) for item in settings.notify.allow_hosts)


def _refusal(ip: Address, port: int, settings: Settings, own: set[tuple[Address, int]]) -> list[Problem]:
    kind = address_kind(ip)
    if kind == "metadata":
        return _problem("metadata_address", f"{ip} is the cloud metadata address",
                        "a hook must point at a receiver of yours on a public address")
    if (ip, port) in own or (ip.is_unspecified and port == settings.port):
        return _problem("console_address", f"{ip}:{port} is this console itself",
                        "a hook must point at a receiver of yours, not at the console")
    if _allowed(ip, settings):
        return []
    if kind != "public":
        return _problem("private_address", f"{ip} is not a public address (loopback, link-local or private)",
                        _ALLOW_HINT)
    return []


def check_url(url: object, settings: Settings, resolver: Resolver = resolve) -> tuple[Target | None, list[Problem]]:
    """Return the checked target of a hook's `url`, or None and the problems at `url` (resolving its host now)."""
    if not isinstance(url, str) or not url.strip() or len(url) > MAX_URL:
        return None, _problem("invalid_url", f"url must be an http or https URL of at most {MAX_URL} characters",
                              "e.g. https://hooks.example.com/starforge")
    try:
        parts = urlsplit(url.strip())
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return None, _problem("invalid_url", f"url is not a URL: {exc}", "e.g. https://hooks.example.com/starforge")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None, _problem("invalid_url", "url must use http or https and name a host",
                              "e.g. https://hooks.example.com/starforge")
    if parts.username is not None or parts.password is not None:
        return None, _problem("credentials_in_url", "url must not carry a user name or password",
                              "check the signature (X-StarForge-Signature) instead of a password in the URL")
    host = parts.hostname
    try:
        addresses = [_ip(a) for a in resolver(host, port)]
    except (OSError, ValueError, UnicodeError) as exc:
        return None, _problem("unresolvable_host", f"{host} does not resolve: {exc}",
                              "check the host name, or use an address")
    if not addresses:
        return None, _problem("unresolvable_host", f"{host} resolves to no address", "check the host name")
    own = _console_addresses(settings, resolver)
    for ip in addresses:
        found = _refusal(ip, port, settings, own)
        if found:
            return None, found
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(parts.scheme, host, port, path, tuple(str(ip) for ip in addresses)), []

"""Which MLflow tracking servers a job's metrics may be mirrored to: `mirror_target(url, settings)` answers the
tracking URI to use, or why the URL is refused (not an allowed host, loopback the operator did not allow, a
link-local or otherwise unroutable address). The console itself connects there, so the same care as any outgoing
request applies.

Tier: shared (pure rules and name resolution; no store, no HTTP).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...mirror_config import MlflowMirrorSettings, named_server
from ..outbound import address_kind, ip_of
from ..outbound import resolve as resolve_all

__all__ = ["Resolver", "Target", "mirror_target", "resolve"]

Resolver = Callable[[str, int], list[str]]


@dataclass(frozen=True)
class Target:
    """A mirror target: the tracking URI when allowed (`refused` empty), else why not."""

    tracking_uri: str = ""
    refused: str = ""


def resolve(host: str, port: int) -> list[str]:
    """Return the addresses `host` resolves to (empty when it does not)."""
    try:
        return sorted(resolve_all(host, port))
    except (OSError, UnicodeError):
        return []


def mirror_target(url: str, settings: MlflowMirrorSettings, *, resolver: Resolver = resolve) -> Target:
    """Return where a job whose observability URL is `url` is mirrored: the tracking URI (scheme, host, port and
    path; an MLflow UI fragment or query dropped), or why it is refused."""
    server, why = named_server(url, settings.allow_hosts)
    if server is None:
        return Target(refused=why)
    host = server.host
    addresses = resolver(host, server.port)
    if not addresses:
        return Target(refused=f"{host} does not resolve")
    for text in addresses:
        why = _refused(address_kind(ip_of(text)), settings.allow_loopback)
        if why:
            return Target(refused=f"{host} resolves to {text}, {why}")
    return Target(tracking_uri=f"{server.scheme}://{server.netloc}{server.path.rstrip('/')}")


def _refused(kind: str, allow_loopback: bool) -> str:
    """Why an address of an allowed host is still not mirrored to ("" when it is): private space is the operator's
    own MLflow server, named in `allow_hosts`; loopback only when allowed; metadata, link-local and unroutable
    addresses never."""
    if kind in ("metadata", "link-local"):
        return "a link-local address (cloud metadata services live there): never mirrored to"
    if kind == "loopback":
        return "" if allow_loopback else "a loopback address: mirrored to only when mlflow.allow_loopback is true"
    if kind == "unroutable":
        return "an address no server listens on"
    return ""

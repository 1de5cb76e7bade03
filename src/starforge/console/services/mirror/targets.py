"""Which MLflow tracking servers a job's metrics may be mirrored to: `mirror_target(url, settings)` answers the
tracking URI to use, or why the URL is refused (not an allowed host, loopback the operator did not allow, a
link-local or otherwise unroutable address). The console itself connects there, so the same care as any outgoing
request applies.

Tier: shared (pure rules and name resolution; no store, no HTTP).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from ...mirror_config import MlflowMirrorSettings
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
    try:
        parts = urlsplit(url.strip())
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return Target(refused="the observability URL is not a valid URL")
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        return Target(refused="the observability URL is not an http(s) URL with a host")
    if parts.username or parts.password:
        return Target(refused="credentials in the observability URL are never used: the operator configures them")
    named = {host, f"{host}:{port}"}
    if not named & set(settings.allow_hosts):
        return Target(refused=f"{host} is not an MLflow server this console mirrors to (mlflow.allow_hosts)")
    addresses = resolver(host, port)
    if not addresses:
        return Target(refused=f"{host} does not resolve")
    for text in addresses:
        why = _refused(address_kind(ip_of(text)), settings.allow_loopback)
        if why:
            return Target(refused=f"{host} resolves to {text}, {why}")
    path = parts.path.rstrip("/")
    return Target(tracking_uri=f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}{path}")


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

"""Who may reach a service through the proxy: one rule over the credential a request carries.

Tier: shared (a pure decision over values; the credential is looked up by `lifecycle.proxy_target`).

Allowed: the owner's bearer token; a key of THAT service (`sfk-…`, not revoked); the owner's web session, with the
session's CSRF token in `X-CSRF-Token` on a method that changes state. Refused: no credential, or one that names no
account (401); anyone else's token, session or key, or a key of another service (404: a stranger learns nothing,
not even that the service exists); a session without its CSRF token on an unsafe method (403).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CSRF_HEADER", "KEY_PREFIX", "SAFE_METHODS", "Credential", "decide"]

KEY_PREFIX = "sfk-"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Credential:
    """What a request proved: `via` is "token", "key", "session" or "" (nothing valid); `user_id` the account it
    names (None when nothing valid); `key_service` the service a key belongs to; `csrf_ok` whether a session's
    request carried its CSRF token."""

    via: str = ""
    user_id: int | None = None
    key_service: str = ""
    csrf_ok: bool = False


def decide(cred: Credential, *, owner_id: int, service_id: str, method: str) -> int:
    """Return 200 when `cred` may reach the service, else the status to refuse with (401, 403 or 404)."""
    if not cred.via or cred.user_id is None:
        return 401
    if cred.user_id != owner_id:
        return 404
    if cred.via == "key" and cred.key_service != service_id:
        return 404
    if cred.via == "session" and method.upper() not in SAFE_METHODS and not cred.csrf_ok:
        return 403
    return 200

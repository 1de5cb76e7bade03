"""API keys of one service, for a tool: `sfk-` and 32 random bytes, shown once, stored as SHA-256, revocable.

Tier: use case for `create_key`, `list_keys`, `revoke_key` (one transaction each); `key_owner` is a query.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import Problem
from ...store.models import ServiceKey, User
from ..accounts.credentials import UserView, hash_token
from ..context import Runtime
from ..errors import NotFound, Rejected
from .access import KEY_PREFIX
from .lifecycle import own_service

__all__ = ["create_key", "identify_key", "key_owner", "list_keys", "revoke_key"]

_PREFIX_CHARS = 12


def _view(row: ServiceKey) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "prefix": row.prefix, "created_at": row.created_at,
            "revoked_at": row.revoked_at}


def create_key(rt: Runtime, *, user: UserView, service_id: str, body: Any) -> dict[str, Any]:
    """Create a key of the caller's service; answer it once with `key` (only its hash is kept)."""
    name = body.get("name", "") if isinstance(body, dict) else None
    if not isinstance(name, str) or len(name) > 64:
        raise Rejected("The key was refused", [Problem("name", "invalid_request",
                                                       "name must be a string of at most 64 characters",
                                                       'e.g. {"name": "my-notebook"}')], status=422)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    with rt.db.write() as db:
        own_service(db, user, service_id)
        row = ServiceKey(job_id=service_id, user_id=user.id, name=name.strip(), token_hash=hash_token(secret),
                         prefix=secret[:_PREFIX_CHARS], created_at=time.time())
        db.add(row)
        db.flush()
        view = _view(row)
    return {k: view[k] for k in ("id", "name", "prefix", "created_at")} | {"key": secret}


def list_keys(rt: Runtime, *, user: UserView, service_id: str) -> dict[str, Any]:
    """List the keys of the caller's service (never their secrets), oldest first."""
    with rt.db.read() as db:
        own_service(db, user, service_id)
        rows = db.scalars(select(ServiceKey).where(ServiceKey.job_id == service_id).order_by(ServiceKey.id))
        return {"keys": [_view(r) for r in rows]}


def revoke_key(rt: Runtime, *, user: UserView, service_id: str, key_id: int) -> dict[str, Any]:
    """Revoke one key of the caller's service (revoking it again keeps the first time)."""
    with rt.db.write() as db:
        own_service(db, user, service_id)
        row = db.get(ServiceKey, key_id)
        if row is None or row.job_id != service_id:
            raise NotFound(f"no key {key_id} of service {service_id} (see `sf serve key ls {service_id}`)")
        if row.revoked_at is None:
            row.revoked_at = time.time()
        return {"id": row.id, "revoked_at": row.revoked_at}


def key_owner(db: Session, secret: str) -> tuple[int, str] | None:
    """Return `(user_id, service_id)` of a live key, or None for an unknown or revoked one, or one of a disabled
    account."""
    row = db.scalar(select(ServiceKey).where(ServiceKey.token_hash == hash_token(secret)))
    if row is None or row.revoked_at is not None:
        return None
    owner = db.get(User, row.user_id)
    if owner is None or owner.disabled:
        return None
    return row.user_id, row.job_id


def identify_key(rt: Runtime, secret: str) -> tuple[int, str] | None:
    """Return `(user_id, service_id)` of a live key `secret`, or None (a query of its own transaction)."""
    with rt.db.read() as db:
        return key_owner(db, secret)

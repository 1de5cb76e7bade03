"""The administrator API's use cases: accounts and roles, disabling an account, API tokens, quotas, data
registration.

Tier: use case (each function owns one transaction). The route lets only administrators through
(`roles.can_admin`, checked by the `current_admin` dependency); these functions trust that.
"""

from __future__ import annotations

from typing import Any

from ..context import Runtime
from ..quota import caps as quota
from ..registries import data
from . import api_tokens
from . import credentials as accounts

__all__ = [
    "create_token",
    "create_user",
    "get_quota",
    "list_tokens",
    "list_users",
    "register_data",
    "revoke_token",
    "set_disabled",
    "set_quota",
    "set_role",
]


def list_users(rt: Runtime) -> dict[str, Any]:
    """Return `{users: [...]}`: every account, oldest first."""
    with rt.db.read() as db:
        return {"users": [u.to_dict() for u in accounts.list_users(db)]}


def create_user(rt: Runtime, *, body: dict[str, Any]) -> dict[str, Any]:
    """Create the account `{username, role?, email?}` and return it with its first API token."""
    with rt.db.write() as db:
        user = accounts.create_user_from(db, body)
        token = accounts.issue_api_token(db, user, "created by an administrator")
    return {"user": user.to_dict(), "token": token}


def set_role(rt: Runtime, *, username: str, role: str) -> dict[str, Any]:
    """Change an account's role and return the account."""
    with rt.db.write() as db:
        return accounts.set_role(db, username, role).to_dict()


def set_disabled(rt: Runtime, *, username: str, disabled: bool, by: str) -> dict[str, Any]:
    """Disable an account (revoking its tokens and stopping its jobs, each with the reason) or re-enable it."""
    with rt.db.write() as db:
        view = accounts.set_disabled(db, username, disabled, by=by).to_dict()
    rt.wake()
    return view


def create_token(rt: Runtime, *, body: dict[str, Any]) -> dict[str, Any]:
    """Create an API token for `{username, name?, expires_in?}` and return its metadata with the secret (`token`),
    which is shown this once."""
    with rt.db.write() as db:
        view, secret = api_tokens.issue(db, body)
    return {**view.to_dict(), "token": secret}


def list_tokens(rt: Runtime, *, username: str) -> dict[str, Any]:
    """Return `{username, tokens: [...]}`: an account's API tokens as metadata (no secret, no hash)."""
    with rt.db.read() as db:
        return {"username": username, "tokens": [t.to_dict() for t in api_tokens.list_tokens(db, username)]}


def revoke_token(rt: Runtime, *, token_id: str) -> dict[str, Any]:
    """Revoke an API token (refused on its next request) and return its metadata."""
    with rt.db.write() as db:
        return api_tokens.revoke(db, token_id).to_dict()


def set_quota(rt: Runtime, *, body: dict[str, Any]) -> dict[str, Any]:
    """Set an account's quota from `{username, max_concurrent_gpus, …}` (missing keys keep their value)."""
    with rt.db.write() as db:
        user = accounts.get_user(db, str(body.get("username", "")))
        view = quota.set_quota(db, user, body, rt.settings.quota)
    rt.wake()
    return {"username": user.username, **view.to_dict()}


def get_quota(rt: Runtime, *, username: str) -> dict[str, Any]:
    """Return an account's quota (the deployment defaults when none was set)."""
    with rt.db.read() as db:
        user = accounts.get_user(db, username)
        return {"username": username, **quota.get_quota(db, user, rt.settings.quota).to_dict()}


def register_data(rt: Runtime, *, body: dict[str, Any]) -> dict[str, Any]:
    """Register `{kind, ref: owner/name@version, path, visibility?, grants?}` and return the registered version."""
    with rt.db.write() as db:
        return data.register_request(db, body).to_dict()

"""An account's long-lived API tokens as an administrator manages them: issue (the secret shown once), list
(metadata only, never a hash), revoke. Issuing goes through `accounts.issue_api_token`, the one way tokens are made.

Revoking sets the row's `revoked_at`; the commit of that update moves the account change stamp
(`store.signals`), so the token is refused on its very next request, by this console and by any other process.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import Problem
from ...store.models import Token, User
from ..errors import NotFound, Rejected
from . import credentials as accounts

__all__ = ["MAX_TTL", "ApiTokenView", "issue", "list_tokens", "revoke"]

MAX_TTL = 10 * 366 * 86400  # ten years: a longer lifetime is a typo, and none at all says "never expires"
_MAX_NAME = 128  # tokens.name column
_API = "api"
_LISTED = (_API, "scrape")  # what an administrator lists and revokes: API tokens and /metrics scrape tokens


@dataclass(frozen=True)
class ApiTokenView:
    """One API token's metadata (never its secret or hash)."""

    id: int
    username: str
    name: str
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    last_used_at: float | None

    def status(self, now: float) -> str:
        """Return `revoked`, `expired` or `active`."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at < now:
            return "expired"
        return "active"

    def to_dict(self, now: float | None = None) -> dict[str, Any]:
        """Return the wire form of `GET /api/admin/tokens` rows."""
        return {"id": self.id, "username": self.username, "name": self.name, "status": self.status(now or time.time()),
                "created_at": self.created_at, "expires_at": self.expires_at, "revoked_at": self.revoked_at,
                "last_used_at": self.last_used_at}


def _view(row: Token, username: str) -> ApiTokenView:
    return ApiTokenView(row.id, username, row.name, row.created_at, row.expires_at, row.revoked_at, row.last_used_at)


def _checked(body: dict[str, Any]) -> tuple[str, float | None]:
    name, ttl = body.get("name") or "", body.get("expires_in")
    problems: list[Problem] = []
    if not isinstance(name, str) or len(name) > _MAX_NAME or "\x00" in name:
        problems.append(Problem("name", "invalid_request", f"name must be text of at most {_MAX_NAME} characters",
                                "name what the token is for, e.g. ci-nightly"))
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl)
                            or not 0 < ttl <= MAX_TTL):
        problems.append(Problem("expires_in", "invalid_request",
                                f"expires_in must be a number of seconds between 1 and {MAX_TTL}",
                                "send e.g. 2592000 for 30 days, or leave it out for a token that never expires"))
    if problems:
        raise Rejected("Invalid token request", problems)
    return (name if isinstance(name, str) else ""), (None if ttl is None else float(ttl))


def issue(db: Session, body: dict[str, Any]) -> tuple[ApiTokenView, str]:
    """Create an API token for `{username, name?, expires_in? (seconds)}` and return its metadata and its secret;
    an unknown account is NotFound, a bad name or lifetime is Rejected with its field."""
    username = body.get("username")
    if not isinstance(username, str) or not username:
        raise Rejected("Invalid token request", [Problem("username", "invalid_request", "username is required",
                                                         "name the account the token is for")])
    name, ttl = _checked(body)
    user = accounts.get_user(db, username)
    secret = accounts.issue_api_token(db, user, name or "created by an administrator", ttl=ttl)
    db.flush()
    row = db.scalar(select(Token).where(Token.token_hash == accounts.hash_token(secret)))
    assert row is not None  # just written in this session
    return _view(row, user.username), secret


def list_tokens(db: Session, username: str) -> list[ApiTokenView]:
    """Return the API (and scrape) tokens of an account, oldest first (revoked and expired ones included, marked so)."""
    user = accounts.get_user(db, username)
    rows = db.scalars(select(Token).where(Token.user_id == user.id, Token.kind.in_(_LISTED)).order_by(Token.id))
    return [_view(row, user.username) for row in rows]


def revoke(db: Session, token_id: str) -> ApiTokenView:
    """Revoke the API (or scrape) token `token_id` (revoking a revoked one changes nothing); anything else is NotFound."""
    row = db.get(Token, int(token_id)) if token_id.isdigit() and len(token_id) < 16 else None
    if row is None or row.kind not in _LISTED:
        raise NotFound(f"no API token {token_id[:40]}")
    if row.revoked_at is None:
        row.revoked_at = time.time()
    owner = db.get(User, row.user_id)
    return _view(row, owner.username if owner is not None else "")

"""Bearer tokens, browser sessions and quotas remembered between requests, forgotten the moment any account, token or quota changes.

Every entry carries the change stamp (`store.signals.ChangeSignal`) read *before* the database was: it is served only
while the stamp is unchanged, so a token revoked, an account disabled or a quota lowered — by this console or by an
operator's command on the same state folder — is refused on the very next request, never after a delay. A cached
token is still checked against its expiry on every use. Only successful lookups are remembered (a flood of bad
tokens cannot grow the cache), and the cache empties itself whenever the stamp moves or it reaches its size.

Tier: use case (a miss reads the database in its own read transaction).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ...store.signals import ChangeSignal
from ..quota.caps import QuotaView, get_quota
from . import credentials as accounts
from .credentials import UserView

__all__ = ["AccountCache"]

MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class _Token:
    user: UserView
    expires_at: float | None
    stamp: int
    web: bool  # a browser session (served only to the web pages), else an API or access token (only to the API)


@dataclass(frozen=True)
class _Quota:
    quota: QuotaView
    stamp: int


class AccountCache:
    """The accounts behind bearer tokens and their quotas, valid while the change stamp does not move."""

    def __init__(self, db: Any, signal: ChangeSignal) -> None:
        self._db = db
        self._signal = signal
        self._tokens: dict[str, _Token] = {}
        self._quotas: dict[int, _Quota] = {}
        self._seen = signal.stamp()

    def _current(self) -> int:
        stamp = self._signal.stamp()
        if stamp != self._seen:  # something changed: drop everything at once rather than entry by entry
            self._tokens, self._quotas, self._seen = {}, {}, stamp
        return stamp

    def cached_user(self, secret: str, *, web: bool = False) -> UserView | None:
        """Return the account behind `secret` — a bearer token, or with `web` a browser session — if it is cached and
        still valid, without touching the database."""
        if not secret or len(secret) > accounts.MAX_SECRET:
            return None
        stamp = self._current()
        found = self._tokens.get(accounts.hash_token(secret))
        if found is None or found.stamp != stamp or found.web != web:
            return None  # a session offered as a bearer token (or the reverse): the database path refuses it
        if found.expires_at is not None and found.expires_at < time.time():
            return None  # the database path says why (expired)
        return found.user

    def user(self, secret: str, *, web: bool = False) -> UserView:
        """Return the account behind a bearer token (access or API token) — or, with `web`, behind a browser
        session — or raise AuthRequired."""
        cached = self.cached_user(secret, web=web)
        if cached is not None:
            return cached
        stamp = self._current()
        with self._db.read() as session:
            user, expires_at = accounts.authenticate_with_expiry(session, secret, web=web)
        self._remember(self._tokens, accounts.hash_token(secret), _Token(user, expires_at, stamp, web))
        return user

    def cached_quota(self, user: UserView) -> QuotaView | None:
        """Return the account's quota if it is cached and still valid, without touching the database."""
        found = self._quotas.get(user.id)
        return found.quota if found is not None and found.stamp == self._current() else None

    def quota(self, user: UserView, defaults: Any) -> QuotaView:
        """Return the account's quota (its row, or the deployment defaults)."""
        cached = self.cached_quota(user)
        if cached is not None:
            return cached
        stamp = self._current()
        with self._db.read() as session:
            view = get_quota(session, user, defaults)
        self._remember(self._quotas, user.id, _Quota(view, stamp))
        return view

    @staticmethod
    def _remember(table: dict[Any, Any], key: Any, entry: Any) -> None:
        if len(table) >= MAX_ENTRIES:
            table.clear()
        table[key] = entry

"""Signing in with tokens: authenticate a bearer token, rotate a refresh token, log out (wire-protocol §4.2, §4.6),
and start or end a browser session with a typed API token.

Tier: use case (each function owns one transaction). The device-code flow is `device_logins`; both answer a new
session with `session_body`. Signing in on the web page is limited per client address (`throttle`: a failure
backoff), so typed tokens cannot be guessed at speed.
"""

from __future__ import annotations

from typing import Any

from ....contract import Problem
from ..context import Runtime
from ..errors import AuthRequired, Rejected
from . import credentials as accounts
from .credentials import SessionTokens, UserView

__all__ = ["authenticate", "end_web_session", "logout", "refresh", "required_text", "session_body",
           "start_web_session"]


def required_text(body: Any, key: str) -> str:
    """Return the stripped text of `body[key]`; a missing, empty or NUL-holding value is a 422 naming `key`."""
    value = body.get(key) if isinstance(body, dict) else None
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise Rejected("Invalid request", [Problem(key, "invalid_request", f"{key} is required, as printable text",
                                                   f"send {{\"{key}\": \"...\"}} as shown by the client")],
                       status=422)
    return value.strip()


def session_body(user: UserView, tokens: SessionTokens) -> dict[str, Any]:
    """Return the answer of a login or refresh: tokens, lifetime and the account (the client makes no whoami)."""
    return {
        "access_token": tokens.access_token,
        "refresh_token": tokens.refresh_token,
        "expires_in": tokens.expires_in,
        "token_type": "Bearer",
        "user": {"username": user.username, "role": user.role, "email": user.email},
    }


def authenticate(rt: Runtime, *, token: str, web: bool = False) -> UserView:
    """Return the account behind a bearer token (access or API) — or, with `web`, behind a browser session — or
    raise AuthRequired."""
    return rt.accounts.user(token, web=web)  # from memory until any account, token or quota changes (`account_cache`)


def start_web_session(rt: Runtime, *, token: str, client: str, ttl: int) -> tuple[str, UserView]:
    """Return the secret of a new browser session of `ttl` seconds for the account behind an API (or access) token,
    and the account; AuthRequired for a bad token, TooManyRequests while `client` must wait after its failures."""
    token = token.strip()
    if not token:
        raise AuthRequired("enter an API token (`sf console token create`, or `sf token create`)")
    with rt.throttles.sign_in.attempt(client):
        user = authenticate(rt, token=token)
    with rt.db.write() as db:
        secret = accounts.issue_web_session(db, user, ttl=ttl)
    return secret, user


def end_web_session(rt: Runtime, *, secret: str) -> None:
    """Revoke a browser session; an unknown secret is ignored."""
    if secret and len(secret) <= accounts.MAX_SECRET:
        with rt.db.write() as db:
            accounts.end_web_session(db, secret)


def refresh(rt: Runtime, *, body: Any) -> dict[str, Any]:
    """Rotate the refresh token of `{refresh_token}` into a new session; refusals are 401, raised after the commit
    so that reusing a rotated token leaves its whole family revoked."""
    secret = required_text(body, "refresh_token")
    with rt.db.write() as db:
        outcome = accounts.refresh_session(db, secret, access_ttl=rt.settings.access_token_ttl,
                                           refresh_ttl=rt.settings.refresh_token_ttl)
    if outcome.error or outcome.user is None or outcome.tokens is None:
        raise AuthRequired(outcome.error)
    return session_body(outcome.user, outcome.tokens)


def logout(rt: Runtime, *, body: Any) -> dict[str, Any]:
    """Revoke the login behind `{refresh_token}`; an unknown or missing token is ignored."""
    secret = body.get("refresh_token") if isinstance(body, dict) else None
    if isinstance(secret, str) and secret:
        with rt.db.write() as db:
            accounts.logout(db, secret)
    return {"ok": True}

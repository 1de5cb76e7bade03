"""Web sessions: sign in with an API token, the session's CSRF token, sign out — on the login machinery of the API.

Tier: use case (each function owns at most one transaction). A browser session is an ordinary login: signing in
checks the typed token exactly as the API checks a bearer token (`logins.authenticate`), then issues an access token
of a new login family (`accounts.issue_session`) that the browser keeps in an HttpOnly cookie; the console stores
only its hash. Every later request is authenticated by that access token through the same account cache as the API,
so revoking, disabling or expiring works the same way, and signing out revokes the whole family. The CSRF token of a
session is derived from its secret (an HMAC), so it needs no storage and dies with the session.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from sqlalchemy import select

from ..runtime import Runtime
from ..services import accounts, logins
from ..services.accounts import UserView
from ..services.errors import AuthRequired, Forbidden
from ..store.models import Token

__all__ = ["COOKIE", "SESSION_SECONDS", "SignedIn", "WebCaller", "check_csrf", "csrf_token", "local_path", "sign_in",
           "sign_out"]

COOKIE = "sf_session"
SESSION_SECONDS = 12 * 3600  # a working day; never longer than the deployment's refresh-token lifetime
_CSRF_CONTEXT = b"starforge web csrf v1"


@dataclass(frozen=True)
class WebCaller:
    """Who a web request comes from: the account, and the session secret of its cookie ("" for a bearer token)."""

    user: UserView
    session: str = ""

    @property
    def csrf(self) -> str:
        """Return the CSRF token the pages of this session embed in their forms ("" for a bearer caller)."""
        return csrf_token(self.session) if self.session else ""


@dataclass(frozen=True)
class SignedIn:
    """A new browser session: its secret (the cookie's value), its lifetime in seconds, and the account."""

    secret: str
    max_age: int
    user: UserView


def sign_in(rt: Runtime, *, token: str) -> SignedIn:
    """Return a new browser session for the account behind an API (or access) token; AuthRequired otherwise."""
    token = token.strip()
    if not token:
        raise AuthRequired("enter an API token (`sf console token create`, or `sf token create`)")
    user = logins.authenticate(rt, token=token)
    lifetime = max(1, min(SESSION_SECONDS, rt.settings.refresh_token_ttl))
    with rt.db.write() as db:
        tokens = accounts.issue_session(db, user, access_ttl=lifetime, refresh_ttl=lifetime, cli_version="web")
    return SignedIn(tokens.access_token, lifetime, user)


def sign_out(rt: Runtime, *, secret: str) -> None:
    """Revoke the login family of a browser session (its access and refresh tokens); an unknown secret is ignored."""
    if not secret or len(secret) > accounts.MAX_SECRET:
        return
    with rt.db.write() as db:
        family = db.scalar(select(Token.family).where(Token.token_hash == accounts.hash_token(secret),
                                                       Token.kind == "access"))
        if family:
            accounts.revoke_family(db, family)


def csrf_token(secret: str) -> str:
    """Return the CSRF token of the session whose secret is `secret` (HMAC-SHA-256, hex)."""
    return hmac.new(secret.encode("utf-8"), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def check_csrf(caller: WebCaller, sent: str) -> None:
    """Refuse (403) a state change from a cookie session whose form does not carry the session's CSRF token; a
    bearer caller needs none (a browser never sends a bearer token on its own)."""
    if caller.session and not hmac.compare_digest(csrf_token(caller.session), sent or ""):
        raise Forbidden("the form's CSRF token is missing or wrong: reload the page and try again")


def local_path(path: str) -> str:
    """Return `path` if it is a page of this console (an absolute path, no scheme, host or backslash), else `/`:
    where a browser may be sent after signing in, never to another site."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path or any(c < " " for c in path):
        return "/"
    return path[:2000]

"""Accounts and credentials: users with roles, and tokens stored only as SHA-256 hashes.

Token kinds: `access` (short-lived, from a login), `refresh` (rotating; reuse of a rotated one revokes its whole
family), `api` (long-lived, for CI and scripts), `run` (valid only for one run's ingest), `scrape` (valid only for
`/metrics`: what Prometheus sends) and `web` (a browser session: it authenticates the web console's pages only,
never the API, since a browser hands its cookies to every port of the host). What a role may do is decided by `roles`, never here.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ...store.models import Token, User
from ..errors import AuthRequired, Conflict, NotFound, Rejected
from .roles import ROLES
from .view import UserView

__all__ = [
    "ROLES",
    "Refreshed",
    "SessionTokens",
    "UserView",
    "MAX_SECRET",
    "NOT_AN_API_TOKEN",
    "authenticate",
    "authenticate_run",
    "authenticate_scrape",
    "authenticate_with_expiry",
    "create_user",
    "create_user_from",
    "end_web_session",
    "ensure_user",
    "get_user",
    "hash_token",
    "issue_api_token",
    "issue_run_token",
    "issue_scrape_token",
    "issue_session",
    "issue_web_session",
    "list_users",
    "logout",
    "refresh_session",
    "revoke_family",
    "set_disabled",
    "set_role",
    "user_view",
]

# A username names the directory runs/<user>/ and fills users.username (64 characters wide).
_MAX_USERNAME = 64
MAX_SECRET = 200  # longer bearer values are no token of ours: refused without hashing or a query
_PREFIX = {"access": "sfa_", "refresh": "sfr_", "api": "sfp_", "run": "sfj_", "web": "sfw_", "scrape": "sfm_"}
_API_KINDS = ("access", "api")
NOT_AN_API_TOKEN = ("a web session is not an API token: send an API token (`sf console token create`) or the token of "
                    "`sf login`")


@dataclass(frozen=True)
class SessionTokens:
    """A login's access and refresh tokens (secrets shown once) with the access lifetime."""

    access_token: str
    refresh_token: str
    expires_in: int


def user_view(row: User) -> UserView:
    """Convert a user row to its view."""
    return UserView(row.id, row.username, row.role, row.email or "", bool(row.disabled), row.auth_source or "local")


def hash_token(secret: str) -> str:
    """Return the stored form of a token secret (hex SHA-256; secrets are 256-bit random, so no salt is needed)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _new_secret(kind: str) -> str:
    return _PREFIX[kind] + secrets.token_urlsafe(32)


def create_user_from(db: Session, body: dict[str, object]) -> UserView:
    """Create an account from an admin request body `{username, role?, email?}`, refusing values of the wrong type."""
    from starforge.contract import Problem

    username, role, email = body.get("username", ""), body.get("role") or "operator", body.get("email") or ""
    problems = [Problem(key, "invalid_request", f"{key} must be text", "send a JSON string")
                for key, value in (("username", username), ("role", role), ("email", email))
                if not isinstance(value, str)]
    if isinstance(email, str) and (len(email) > 255 or "\x00" in email):
        problems.append(Problem("email", "invalid_request", "email must be at most 255 characters, without NUL"))
    if problems:
        raise Rejected("Invalid user", problems)
    return create_user(db, str(username), str(role), str(email))


def create_user(db: Session, username: str, role: str = "operator", email: str = "") -> UserView:
    """Create an account; refuse an invalid name or role and a username already taken (ignoring case).

    A username becomes a directory name, so it is a safe segment of at most 64 characters, and two names that
    differ only in case are refused: on a case-insensitive filesystem they would share `runs/<user>/`.
    """
    from starforge.contract import Problem, is_safe_segment

    hint = f"use letters, digits, '.', '_' and '-', starting with a letter or digit, at most {_MAX_USERNAME} characters"
    if len(username) > _MAX_USERNAME:
        raise Rejected("Invalid user", [Problem("username", "unsafe_path_component",
                                                f"a username is at most {_MAX_USERNAME} characters "
                                                f"({len(username)} given)", hint)])
    if not is_safe_segment(username):
        raise Rejected("Invalid user", [Problem("username", "not_a_safe_segment",
                                                f"{username!r} is not a valid username", hint)])
    if role not in ROLES:
        raise Rejected("Invalid user", [Problem("role", "invalid_role", f"role must be one of {', '.join(ROLES)}")])
    taken = db.scalar(select(User.username).where(func.lower(User.username) == username.lower()))
    if taken is not None:
        raise Conflict(f"user {taken} already exists" if taken == username else
                       f"user {taken} already exists; usernames that differ only in case are refused")
    row = User(username=username, role=role, email=email, disabled=False, auth_source="local", created_at=time.time())
    db.add(row)
    db.flush()
    return user_view(row)


def ensure_user(db: Session, username: str, role: str | None = None) -> UserView:
    """Return the account, creating it with `role` (default operator) when it does not exist."""
    row = db.scalar(select(User).where(User.username == username))
    if row is None:
        return create_user(db, username, role or "operator")
    if role is not None and row.role != role:
        row.role = role
    return user_view(row)


def get_user(db: Session, username: str) -> UserView:
    """Return the account named `username` or raise NotFound."""
    row = db.scalar(select(User).where(User.username == username))
    if row is None:
        raise NotFound(f"no user {username}")
    return user_view(row)


def list_users(db: Session) -> list[UserView]:
    """Return every account, oldest first."""
    return [user_view(row) for row in db.scalars(select(User).order_by(User.id))]


def set_role(db: Session, username: str, role: str) -> UserView:
    """Change an account's role."""
    from starforge.contract import Problem

    if role not in ROLES:
        raise Rejected("Invalid role", [Problem("role", "invalid_role", f"role must be one of {', '.join(ROLES)}")])
    row = db.scalar(select(User).where(User.username == username))
    if row is None:
        raise NotFound(f"no user {username}")
    row.role = role
    return user_view(row)


def set_disabled(db: Session, username: str, disabled: bool, *, by: str = "an administrator") -> UserView:
    """Disable or re-enable an account. Disabling revokes every token it holds (API, session and run tokens) and
    stops its unfinished jobs, each with the reason; re-enabling restores neither."""
    from ..jobs.queries import unfinished_jobs
    from ..jobs.rows import stop_job

    row = db.scalar(select(User).where(User.username == username))
    if row is None:
        raise NotFound(f"no user {username}")
    row.disabled = disabled
    if disabled:
        now = time.time()
        for token in db.scalars(select(Token).where(Token.user_id == row.id, Token.revoked_at.is_(None))):
            token.revoked_at = now
        for job in unfinished_jobs(db, row.id):
            stop_job(db, job, f"stopped because the account {username} was disabled by {by}")
    return user_view(row)


def _store(db: Session, user_id: int, kind: str, *, ttl: float | None, family: str = "", **extra: str) -> str:
    secret = _new_secret(kind)
    now = time.time()
    db.add(
        Token(
            user_id=user_id,
            kind=kind,
            token_hash=hash_token(secret),
            family=family,
            expires_at=None if ttl is None else now + ttl,
            created_at=now,
            **extra,
        )
    )
    return secret


def issue_api_token(db: Session, user: UserView, name: str = "", *, ttl: float | None = None) -> str:
    """Create a long-lived API token (expiring after `ttl` seconds, never without one) and return its secret."""
    return _store(db, user.id, "api", ttl=ttl, name=name or "api token")


def issue_session(
    db: Session, user: UserView, *, access_ttl: int, refresh_ttl: int, cli_version: str = "", family: str = ""
) -> SessionTokens:
    """Create an access token and a refresh token in a (new) family and return their secrets."""
    family = family or secrets.token_hex(8)
    access = _store(db, user.id, "access", ttl=access_ttl, family=family, cli_version=cli_version)
    refresh = _store(db, user.id, "refresh", ttl=refresh_ttl, family=family, cli_version=cli_version)
    return SessionTokens(access, refresh, access_ttl)


def issue_web_session(db: Session, user: UserView, *, ttl: int) -> str:
    """Create a browser session of `ttl` seconds and return its secret (the cookie's value; only its hash is kept)."""
    return _store(db, user.id, "web", ttl=ttl, family=secrets.token_hex(8), name="web session")


def end_web_session(db: Session, secret: str) -> None:
    """Revoke the browser session whose secret is `secret`; anything else (another kind, unknown) is ignored."""
    found = _lookup(db, secret)
    if found is not None and found[0].kind == "web" and found[0].revoked_at is None:
        found[0].revoked_at = time.time()


def issue_run_token(db: Session, user: UserView, run_id: str) -> str:
    """Create the ingest token of one run (valid only for that run id, only on ingest)."""
    return _store(db, user.id, "run", ttl=None, run_id=run_id, name=f"run {run_id}")


def issue_scrape_token(db: Session, user: UserView, name: str = "") -> str:
    """Create a scrape token owned by `user` (good only for `/metrics`, never the API) and return its secret."""
    return _store(db, user.id, "scrape", ttl=None, name=name or "metrics scrape token")


def _lookup(db: Session, secret: str) -> tuple[Token, User] | None:
    if not secret or len(secret) > MAX_SECRET:
        return None
    token = db.scalar(select(Token).where(Token.token_hash == hash_token(secret)))
    if token is None:
        return None
    user = db.get(User, token.user_id)
    if user is None:
        return None
    return token, user


def authenticate(db: Session, secret: str) -> UserView:
    """Return the account behind a bearer token (access or api), or raise AuthRequired."""
    return authenticate_with_expiry(db, secret)[0]


def authenticate_with_expiry(db: Session, secret: str, *, web: bool = False) -> tuple[UserView, float | None]:
    """Return the account behind a bearer token (access or api) — or, with `web`, behind a browser session — and
    when it expires, or raise AuthRequired. Neither is ever accepted for the other."""
    found = _lookup(db, secret)
    if found is None:
        raise AuthRequired("invalid token: log in again with `sf login`" if not web else
                           "your session is not known here (it may have ended): sign in again")
    token, user = found
    if web and token.kind != "web":
        raise AuthRequired("this is not a web session: sign in on the console's page")
    if not web and token.kind == "web":
        raise AuthRequired(NOT_AN_API_TOKEN)
    if not web and token.kind not in _API_KINDS:
        raise AuthRequired("this token cannot be used here")
    if token.revoked_at is not None:
        raise AuthRequired("your session has ended: sign in again" if web else
                           "token revoked: log in again with `sf login`")
    if token.expires_at is not None and token.expires_at < time.time():
        raise AuthRequired("your session expired: sign in again" if web else
                           "token expired: log in again with `sf login`")
    if user.disabled:
        raise AuthRequired(f"account {user.username} is disabled")
    return user_view(user), token.expires_at


def authenticate_run(db: Session, secret: str, run_id: str | None) -> UserView:
    """Return the owner of the run behind an ingest token; with a `run_id`, only if the token belongs to it."""
    found = _lookup(db, secret)
    if found is None or found[0].kind != "run" or found[0].revoked_at is not None:
        raise AuthRequired("invalid run token")
    token, user = found
    if run_id is not None and token.run_id != run_id:
        raise AuthRequired("this run token belongs to another run")
    return user_view(user)


def authenticate_scrape(db: Session, secret: str) -> UserView | None:
    """Return the owner of a scrape token, None when `secret` is no scrape token (the caller tries it as an API
    token), or raise AuthRequired for one revoked or of a disabled account."""
    found = _lookup(db, secret)
    if found is None or found[0].kind != "scrape":
        return None
    token, user = found
    if token.revoked_at is not None:
        raise AuthRequired("scrape token revoked: create another with `sf console token create --scrape`")
    if user.disabled:
        raise AuthRequired(f"account {user.username} is disabled")
    return user_view(user)


@dataclass(frozen=True)
class Refreshed:
    """The outcome of a refresh: the new session, or why it was refused (the caller raises after committing)."""

    error: str = ""
    user: UserView | None = None
    tokens: SessionTokens | None = None


def refresh_session(db: Session, secret: str, *, access_ttl: int, refresh_ttl: int) -> Refreshed:
    """Rotate a refresh token; reusing an already rotated one revokes its whole family (token theft)."""
    found = _lookup(db, secret)
    if found is None or found[0].kind != "refresh":
        return Refreshed("invalid refresh token: log in again with `sf login`")
    token, user = found
    now = time.time()
    if token.revoked_at is not None:
        revoke_family(db, token.family)
        return Refreshed("refresh token already used: every session of this login was revoked; log in again")
    if token.expires_at is not None and token.expires_at < now:
        return Refreshed("refresh token expired: log in again with `sf login`")
    if user.disabled:
        return Refreshed(f"account {user.username} is disabled")
    token.revoked_at = now
    view = user_view(user)
    tokens = issue_session(
        db, view, access_ttl=access_ttl, refresh_ttl=refresh_ttl, cli_version=token.cli_version, family=token.family
    )
    return Refreshed("", view, tokens)


def revoke_family(db: Session, family: str) -> None:
    """Revoke every token of a login (logout, refresh reuse)."""
    if family:
        db.execute(
            update(Token).where(Token.family == family, Token.revoked_at.is_(None)).values(revoked_at=time.time())
        )


def logout(db: Session, refresh_secret: str) -> None:
    """Revoke the family of a refresh token; unknown tokens are ignored."""
    found = _lookup(db, refresh_secret)
    if found is not None:
        revoke_family(db, found[0].family)

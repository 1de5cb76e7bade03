"""The device-code login flow (RFC 8628 shape, wire-protocol §4.3): start, approve by a signed-in user, poll.

Tier: query (runs over the caller's session; never begins or commits a transaction). The API's use cases are `device_logins`.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.models import DeviceCode, User
from .accounts import SessionTokens, UserView, hash_token, issue_session, user_view
from .errors import NotFound

__all__ = ["DeviceGrant", "DevicePoll", "approve", "deny", "poll", "start"]

# No vowels or look-alikes: codes are read aloud and typed by people.
_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"


@dataclass(frozen=True)
class DevicePoll:
    """The outcome of one poll: the session when approved, else the RFC 8628 error name sent as `detail`."""

    error: str = ""
    user: UserView | None = None
    tokens: SessionTokens | None = None


@dataclass(frozen=True)
class DeviceGrant:
    """A started device login: the secret device code for the client and the short code for the person."""

    device_code: str
    user_code: str
    interval: int
    expires_in: int


def _user_code() -> str:
    raw = "".join(secrets.choice(_ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


def _normalise(user_code: str) -> str:
    code = "".join(ch for ch in user_code.upper() if ch.isalnum())
    return f"{code[:4]}-{code[4:]}" if len(code) == 8 else user_code.strip().upper()


def start(db: Session, *, device_info: dict[str, object], ttl: int, interval: int) -> DeviceGrant:
    """Start a device login and return its codes."""
    device_code = secrets.token_urlsafe(32)
    user_code = _user_code()
    while db.scalar(select(DeviceCode).where(DeviceCode.user_code == user_code)) is not None:
        user_code = _user_code()
    now = time.time()
    db.add(
        DeviceCode(
            device_code_hash=hash_token(device_code),
            user_code=user_code,
            status="pending",
            device_info=json.dumps(device_info, ensure_ascii=False)[:4000],
            interval=interval,
            expires_at=now + ttl,
            created_at=now,
        )
    )
    return DeviceGrant(device_code, user_code, interval, ttl)


def _pending_by_user_code(db: Session, user_code: str) -> DeviceCode:
    row = db.scalar(select(DeviceCode).where(DeviceCode.user_code == _normalise(user_code)))
    if row is None or row.status != "pending" or row.expires_at < time.time():
        raise NotFound(f"no pending login with code {user_code.strip()!r} (it may have expired: run `sf login` again)")
    return row


def approve(db: Session, user: UserView, user_code: str) -> dict[str, object]:
    """Bind a pending device login to `user`; returns what the device told about itself."""
    row = _pending_by_user_code(db, user_code)
    row.status = "approved"
    row.user_id = user.id
    info: dict[str, object] = json.loads(row.device_info or "{}")
    return info


def deny(db: Session, user_code: str) -> None:
    """Refuse a pending device login."""
    _pending_by_user_code(db, user_code).status = "denied"


def poll(db: Session, device_code: str, *, access_ttl: int, refresh_ttl: int) -> DevicePoll:
    """Return the session once approved, else the pending/slow_down/denied/expired outcome (never raises)."""
    row = db.scalar(select(DeviceCode).where(DeviceCode.device_code_hash == hash_token(device_code or "")))
    if row is None:
        return DevicePoll("invalid_grant")
    now = time.time()
    if row.expires_at < now and row.status != "consumed":
        return DevicePoll("expired_token")
    if row.status == "denied":
        return DevicePoll("access_denied")
    if row.status == "consumed":
        return DevicePoll("invalid_grant")
    if row.status == "pending":
        too_fast = row.last_poll_at is not None and now - row.last_poll_at < row.interval * 0.8
        row.last_poll_at = now
        return DevicePoll("slow_down" if too_fast else "authorization_pending")
    user = db.get(User, row.user_id) if row.user_id is not None else None
    if user is None or user.disabled:
        return DevicePoll("access_denied")
    row.status = "consumed"
    view = user_view(user)
    info = json.loads(row.device_info or "{}")
    cli_version = str(info.get("cli_version", ""))[:64] if isinstance(info, dict) else ""
    tokens = issue_session(db, view, access_ttl=access_ttl, refresh_ttl=refresh_ttl, cli_version=cli_version)
    return DevicePoll("", view, tokens)

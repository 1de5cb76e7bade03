"""The device-code login flow (RFC 8628 shape, wire-protocol §4.3): start, look up, approve or deny by a signed-in
user, poll, and purge the expired.

Tier: query (runs over the caller's session; never begins or commits a transaction). The API's use cases are
`device_logins`. A pending login belongs to nobody until it is approved; it may be denied by an administrator or by
the account its device names as its `user` (what the device says of itself, §4.5), and by no one else: for anyone
else, denying it is a NotFound, as for an unknown code.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from ...store.models import DeviceCode, User
from ..errors import NotFound
from . import roles
from .credentials import SessionTokens, UserView, hash_token, issue_session, user_view

__all__ = ["PURGE_BATCH", "PURGE_GRACE", "DeviceGrant", "DevicePoll", "PendingLogin", "approve", "deny",
           "oldest_pending", "pending", "pending_count", "poll", "purge_expired", "start"]

PURGE_GRACE = 300.0  # an expired login is kept this long, so a late poll still reads `expired_token`
PURGE_BATCH = 100  # rows one purge deletes at most: bounded work, and still more than one start ever adds

# No vowels or look-alikes: codes are read aloud and typed by people.
_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"


@dataclass(frozen=True)
class DevicePoll:
    """The outcome of one poll: the session when approved, else the RFC 8628 error name sent as `detail`."""

    error: str = ""
    user: UserView | None = None
    tokens: SessionTokens | None = None


@dataclass(frozen=True)
class PendingLogin:
    """A pending device login as the approval page shows it: its code, what the device says of itself, when and
    from which address it was started, when it expires, and whether the viewer may deny it."""

    user_code: str
    device: dict[str, object]
    requested_at: float
    client: str
    expires_at: float
    can_deny: bool


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


def purge_expired(db: Session, *, now: float, limit: int = PURGE_BATCH) -> int:
    """Delete at most `limit` device logins that expired more than `PURGE_GRACE` seconds ago; return how many."""
    ids = list(db.scalars(select(DeviceCode.id).where(DeviceCode.expires_at < now - PURGE_GRACE)
                          .order_by(DeviceCode.expires_at).limit(limit)))
    if ids:
        db.execute(delete(DeviceCode).where(DeviceCode.id.in_(ids)))
    return len(ids)


def pending_count(db: Session, *, client: str, now: float) -> int:
    """Return how many unexpired pending device logins `client` started."""
    return int(db.scalar(select(func.count()).select_from(DeviceCode).where(
        DeviceCode.client == client, DeviceCode.status == "pending", DeviceCode.expires_at >= now)) or 0)


def oldest_pending(db: Session, *, client: str, now: float) -> float:
    """Return when the first of `client`'s unexpired pending device logins expires (`now` when there is none)."""
    first = db.scalar(select(func.min(DeviceCode.expires_at)).where(
        DeviceCode.client == client, DeviceCode.status == "pending", DeviceCode.expires_at >= now))
    return float(first) if first is not None else now


def start(db: Session, *, device_info: dict[str, object], ttl: int, interval: int, client: str = "") -> DeviceGrant:
    """Start a device login requested from the address `client` and return its codes."""
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
            client=client[:64],
        )
    )
    return DeviceGrant(device_code, user_code, interval, ttl)


def _pending_by_user_code(db: Session, user_code: str) -> DeviceCode:
    row = db.scalar(select(DeviceCode).where(DeviceCode.user_code == _normalise(user_code)))
    if row is None or row.status != "pending" or row.expires_at < time.time():
        raise NotFound(f"no pending login with code {user_code.strip()!r} (it may have expired: run `sf login` again)")
    return row


def _device_of(row: DeviceCode) -> dict[str, object]:
    info = json.loads(row.device_info or "{}")
    return info if isinstance(info, dict) else {}


def _may_deny(row: DeviceCode, user: UserView) -> bool:
    return roles.can_admin(user) or (bool(user.username) and _device_of(row).get("user") == user.username)


def pending(db: Session, user: UserView, user_code: str) -> PendingLogin:
    """Return the pending device login of `user_code` as `user` may see it (NotFound when there is none)."""
    row = _pending_by_user_code(db, user_code)
    return PendingLogin(row.user_code, _device_of(row), row.created_at, row.client or "", row.expires_at,
                        _may_deny(row, user))


def approve(db: Session, user: UserView, user_code: str) -> dict[str, object]:
    """Bind a pending device login to `user`; returns what the device told about itself."""
    row = _pending_by_user_code(db, user_code)
    row.status = "approved"
    row.user_id = user.id
    return _device_of(row)


def deny(db: Session, user: UserView, user_code: str) -> None:
    """Refuse a pending device login: for an administrator, or for the account its device names as `user`; for
    anyone else it is a NotFound (404), as an unknown code is."""
    row = _pending_by_user_code(db, user_code)
    if not _may_deny(row, user):
        raise NotFound(f"no pending login with code {user_code.strip()!r} that you may deny (only the account the "
                       "device names, or an administrator, can)")
    row.status = "denied"


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

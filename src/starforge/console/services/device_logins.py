"""The device-code login as the API runs it (wire-protocol §4.3): start, poll, approve or deny by a signed-in
user, and approval from the browser page with a typed token.

Tier: use case (each function owns one transaction; `device` holds the queries and rows). The client's `device`
parameter is base64url JSON describing the machine; it is decoded with bounded nesting, and an unreadable one is
simply dropped.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from ..runtime import Runtime
from . import accounts, device
from .accounts import UserView
from .errors import AuthRequired, ConsoleError
from .json_text import load_json
from .logins import required_text, session_body
from .outcome import Outcome

__all__ = ["PageApproval", "approve", "approve_on_page", "decode_device", "deny", "poll", "start"]


@dataclass(frozen=True)
class PageApproval:
    """What the approval page shows: the account a login was approved for, or why it was not (with the status)."""

    username: str = ""
    error: str = ""
    status: int = 200


def decode_device(value: object) -> dict[str, Any]:
    """Return the device description of a login (base64url JSON, padding optional), or {} when it is unreadable."""
    if not isinstance(value, str) or not value:
        return {}
    try:
        raw = base64.urlsafe_b64decode((value + "=" * (-len(value) % 4)).encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return {}
    info, problems = load_json(raw, "device")
    return info if isinstance(info, dict) and not problems else {}


def start(rt: Runtime, *, body: Any, base_url: str) -> dict[str, Any]:
    """Start a device login for `{device?}` and return its codes and the page (under `base_url`) that approves it."""
    info = decode_device(body.get("device") if isinstance(body, dict) else None)
    with rt.db.write() as db:
        grant = device.start(db, device_info=info, ttl=rt.settings.device_code_ttl,
                             interval=rt.settings.device_poll_interval)
    base = base_url.rstrip("/")
    return {
        "device_code": grant.device_code,
        "user_code": grant.user_code,
        "verification_uri": f"{base}/cli/device",
        "verification_uri_complete": f"{base}/cli/device?code={grant.user_code}",
        "interval": grant.interval,
        "expires_in": grant.expires_in,
    }


def poll(rt: Runtime, *, body: Any) -> Outcome:
    """Poll `{device_code}`: 200 with the session once approved, else 400 with the RFC 8628 error in `detail`."""
    code = body.get("device_code") if isinstance(body, dict) else None
    with rt.db.write() as db:
        outcome = device.poll(db, code if isinstance(code, str) else "", access_ttl=rt.settings.access_token_ttl,
                              refresh_ttl=rt.settings.refresh_token_ttl)
    if outcome.error or outcome.user is None or outcome.tokens is None:
        return Outcome(400, {"detail": outcome.error or "invalid_grant", "error": outcome.error})
    return Outcome(200, session_body(outcome.user, outcome.tokens))


def approve(rt: Runtime, *, user: UserView, body: Any) -> dict[str, Any]:
    """Approve the pending login `{user_code}` for the caller (`sf login approve CODE`)."""
    code = required_text(body, "user_code")
    with rt.db.write() as db:
        info = device.approve(db, user, code)
    return {"approved": True, "username": user.username, "device": info}


def deny(rt: Runtime, *, body: Any) -> dict[str, Any]:
    """Refuse the pending login `{user_code}`."""
    code = required_text(body, "user_code")
    with rt.db.write() as db:
        device.deny(db, code)
    return {"denied": True}


def approve_on_page(rt: Runtime, *, user_code: str, token: str) -> PageApproval:
    """Approve a pending login for the account behind a token typed into the page; never raises for bad input."""
    try:
        with rt.db.write() as db:
            user = accounts.authenticate(db, token.strip())
            device.approve(db, user, user_code)
    except ConsoleError as exc:
        return PageApproval(error=exc.detail, status=401 if isinstance(exc, AuthRequired) else 400)
    return PageApproval(username=user.username)

"""The device-code login as the API runs it (wire-protocol §4.3): start, poll, look up, approve or deny by a
signed-in user.

Tier: use case (each function owns one transaction; `device` holds the queries and rows). The client's `device`
parameter is base64url JSON describing the machine; it is decoded with bounded nesting, and an unreadable one is
simply dropped. Anyone may start a login, so starting is limited per client address: a rate (`throttle`), a cap on
the unexpired pending logins one address holds, and every start purges a bounded batch of long-expired rows. Looking
up a user code (to show, approve or deny it) counts the unknown ones per address and backs off (`throttle`).
"""

from __future__ import annotations

import base64
import time
from typing import Any

from ..context import Runtime
from ..errors import TooManyRequests
from ..json_text import load_json
from ..outcome import Outcome
from . import device
from .credentials import UserView
from .device import PendingLogin
from .logins import required_text, session_body

__all__ = ["approve", "decode_device", "deny", "pending", "poll", "start"]


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


def start(rt: Runtime, *, body: Any, base_url: str, client: str) -> dict[str, Any]:
    """Start a device login for `{device?}` requested from the address `client` and return its codes and the page
    (under `base_url`) that approves it; TooManyRequests past the address's rate or pending cap."""
    info = decode_device(body.get("device") if isinstance(body, dict) else None)
    rt.throttles.device_codes.take(client)
    cap = rt.throttles.limits.pending_device_codes
    with rt.db.write() as db:  # the purge commits even when this address is over its cap
        now = time.time()
        device.purge_expired(db, now=now)
        full = device.pending_count(db, client=client, now=now) >= cap
        wait = int(device.oldest_pending(db, client=client, now=now) - now) + 1 if full else 0
        grant = None if full else device.start(db, device_info=info, ttl=rt.settings.device_code_ttl,
                                               interval=rt.settings.device_poll_interval, client=client)
    if grant is None:
        raise TooManyRequests(f"this address already has {cap} device logins waiting for approval: approve one, or "
                              f"try again in {wait} s, when the oldest expires", retry_after=wait)
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


def pending(rt: Runtime, *, user: UserView, user_code: str, client: str) -> PendingLogin:
    """Return the pending login of `user_code` for the approval page: what the device says of itself, when and from
    where it was started (NotFound when unknown or expired; TooManyRequests while `client` must wait)."""
    code = required_text({"user_code": user_code}, "user_code")
    with rt.throttles.user_codes.attempt(client), rt.db.read() as db:
        return device.pending(db, user, code)


def approve(rt: Runtime, *, user: UserView, body: Any, client: str) -> dict[str, Any]:
    """Approve the pending login `{user_code}` for the caller (`sf login approve CODE`, the web page)."""
    code = required_text(body, "user_code")
    with rt.throttles.user_codes.attempt(client), rt.db.write() as db:
        info = device.approve(db, user, code)
    return {"approved": True, "username": user.username, "device": info}


def deny(rt: Runtime, *, user: UserView, body: Any, client: str) -> dict[str, Any]:
    """Refuse the pending login `{user_code}`: an administrator, or the account its device names (`device.deny`)."""
    code = required_text(body, "user_code")
    with rt.throttles.user_codes.attempt(client), rt.db.write() as db:
        device.deny(db, user, code)
    return {"denied": True}

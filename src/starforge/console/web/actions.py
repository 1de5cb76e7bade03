"""What a web form does: stop, pause, resume or retry a job, look up then approve or deny a CLI device login, change
an account — each checks the session's CSRF token, then calls the same service as the API.

Tier: use case (the services called own their transactions; no HTTP here).
"""

from __future__ import annotations

from typing import Any

from ..services.accounts import admin, device_logins, roles
from ..services.accounts.device import PendingLogin
from ..services.context import Runtime
from ..services.errors import Forbidden
from ..services.jobs import control as job_control
from .sessions import WebCaller, check_csrf

__all__ = ["approve_device", "deny_device", "pause_job", "resume_job", "retry_job", "review_device", "set_disabled",
           "set_role", "stop_job"]


def stop_job(rt: Runtime, caller: WebCaller, *, ref: str, csrf: str) -> dict[str, Any]:
    """Stop a job from its page: 403 without the session's CSRF token or for a viewer, 404 for a job the caller may
    not see (`job_control.stop`)."""
    check_csrf(caller, csrf)
    return job_control.stop(rt, user=caller.user, ref=ref)


def pause_job(rt: Runtime, caller: WebCaller, *, ref: str, csrf: str) -> dict[str, Any]:
    """Pause a job from its page (a running one checkpoints, stops and is held): 403 without the session's CSRF
    token or for a viewer, 404 for a job the caller may not see (`job_control.pause`)."""
    check_csrf(caller, csrf)
    return job_control.pause(rt, user=caller.user, ref=ref)


def resume_job(rt: Runtime, caller: WebCaller, *, ref: str, csrf: str) -> dict[str, Any]:
    """Put a paused job back in the queue from its page (`job_control.resume`; the same refusals)."""
    check_csrf(caller, csrf)
    return job_control.resume(rt, user=caller.user, ref=ref)


def retry_job(rt: Runtime, caller: WebCaller, *, ref: str, csrf: str) -> dict[str, Any]:
    """Run a failed or stopped job again from its page (`job_control.retry`; the same refusals, and 409 for a job
    in any other status)."""
    check_csrf(caller, csrf)
    return job_control.retry(rt, user=caller.user, ref=ref)


def review_device(rt: Runtime, caller: WebCaller, *, user_code: str, csrf: str, client: str) -> PendingLogin:
    """Return the pending CLI device login of a typed code, to show before approving it (`device_logins.pending`)."""
    check_csrf(caller, csrf)
    return device_logins.pending(rt, user=caller.user, user_code=user_code, client=client)


def approve_device(rt: Runtime, caller: WebCaller, *, user_code: str, csrf: str, client: str) -> dict[str, Any]:
    """Approve a pending CLI device login for the signed-in account (`device_logins.approve`)."""
    check_csrf(caller, csrf)
    return device_logins.approve(rt, user=caller.user, body={"user_code": user_code}, client=client)


def deny_device(rt: Runtime, caller: WebCaller, *, user_code: str, csrf: str, client: str) -> dict[str, Any]:
    """Deny a pending CLI device login (an administrator, or the account the device names: `device_logins.deny`)."""
    check_csrf(caller, csrf)
    return device_logins.deny(rt, user=caller.user, body={"user_code": user_code}, client=client)


def _admin_only(caller: WebCaller, csrf: str) -> None:
    check_csrf(caller, csrf)
    if not roles.can_admin(caller.user):
        raise Forbidden("administrators only")


def set_role(rt: Runtime, caller: WebCaller, *, username: str, role: str, csrf: str) -> dict[str, Any]:
    """Change an account's role from the admin page (administrators only; `admin.set_role`)."""
    _admin_only(caller, csrf)
    return admin.set_role(rt, username=username, role=role)


def set_disabled(rt: Runtime, caller: WebCaller, *, username: str, disabled: bool, csrf: str) -> dict[str, Any]:
    """Disable an account (its tokens revoked, its jobs stopped) or enable it again, from the admin page
    (administrators only; `admin.set_disabled`)."""
    _admin_only(caller, csrf)
    return admin.set_disabled(rt, username=username, disabled=disabled, by=caller.user.username)

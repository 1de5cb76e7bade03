"""The playground pages: the caller's services to pick from, and one service with its model, its run, its expiry
(extend and stop forms) and a chat that streams through the console's OpenAI proxy (`/api/services/<id>/v1`).

Tier: use case (the reads and changes go through the serving services, exactly as `/api/services`; no HTTP here).
A service the caller may not see is the service's NotFound; the chat itself is the browser's (static/app.js),
sent with the session cookie and the CSRF token as a header.
"""

from __future__ import annotations

import time
from typing import Any

from ..services.context import Runtime
from ..services.serving import lifecycle
from .pages import frame
from .render import render
from .sessions import WebCaller, check_csrf

__all__ = ["LIVE", "extend_service", "hours_of", "playground_page", "stop_service"]

LIVE = frozenset({"queued", "starting", "ready"})


def playground_page(rt: Runtime, caller: WebCaller, *, service_id: str = "", now: float | None = None) -> str:
    """Return the playground: the caller's live services as links and, when `service_id` names one of theirs, that
    service with its facts, its extend and stop forms and the chat (NotFound for a service not theirs)."""
    services = lifecycle.list_services(rt, user=caller.user)["services"]
    service = lifecycle.get(rt, user=caller.user, service_id=service_id) if service_id else None
    return playground_html(caller, services, service, now=now)


def playground_html(caller: WebCaller, services: list[dict[str, Any]], service: dict[str, Any] | None, *,
                    now: float | None = None) -> str:
    """Return the playground page for `services` (the list) and the chosen `service` (or None)."""
    clock = time.time() if now is None else now
    shown = service or {}
    expires = float(shown.get("expires_at") or 0)
    return render("playground.html", **frame(caller, "playground"), services=services, service=service,
                  live=str(shown.get("status")) in LIVE, expires=expires, left=max(0.0, expires - clock),
                  base_url=shown.get("url", ""))


def hours_of(text: str) -> float | str:
    """Return the hours typed into the extend form as a number when they read as one (else as typed): the service
    decides what it accepts (`ttl.check_ttl`, at `hours`)."""
    try:
        return float(text.strip())
    except ValueError:
        return text



def extend_service(rt: Runtime, caller: WebCaller, *, service_id: str, hours: str, csrf: str) -> dict[str, Any]:
    """Move a service's expiry from its page (403 without the session's CSRF token, 404 for one not the caller's)."""
    check_csrf(caller, csrf)
    return dict(lifecycle.extend(rt, user=caller.user, service_id=service_id, body={"hours": hours_of(hours)}))


def stop_service(rt: Runtime, caller: WebCaller, *, service_id: str, csrf: str) -> dict[str, Any]:
    """Stop a service from its page (the same refusals as `extend_service`)."""
    check_csrf(caller, csrf)
    return dict(lifecycle.stop(rt, user=caller.user, service_id=service_id))

"""The playground pages: the caller's services to pick from, and one service with its model, its run, its expiry
(extend and stop forms) and a chat that streams through the console's OpenAI proxy (`/api/services/<id>/v1`).

Tier: use case (the reads and changes go through the serving services, exactly as `/api/services`; no HTTP here).
A service the caller may not see is the service's NotFound; the chat itself is the browser's (static/app.js),
sent with the session cookie and the CSRF token as a header.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

from ..services.context import Runtime
from ..services.errors import Rejected
from ..services.serving import lifecycle
from .admin_pages import FormAnswer
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
                    now: float | None = None, hours: str = "1", problem: str = "") -> str:
    """Return the playground page for `services` (the list) and the chosen `service` (or None); `hours` and
    `problem` refill the extend form after a refusal."""
    clock = time.time() if now is None else now
    shown = service or {}
    expires = float(shown.get("expires_at") or 0)
    return render("playground.html", **frame(caller, "playground"), services=services, service=service,
                  live=str(shown.get("status")) in LIVE, expires=expires, left=max(0.0, expires - clock),
                  base_url=shown.get("url", ""), hours=hours, problem=problem)


def hours_of(text: str) -> float | str:
    """Return the hours typed into the extend form as a number when they read as one (else as typed): the service
    decides what it accepts (`ttl.check_ttl`, at `hours`)."""
    try:
        return float(text.strip())
    except ValueError:
        return text



def extend_service(rt: Runtime, caller: WebCaller, *, service_id: str, hours: str, csrf: str) -> FormAnswer:
    """Move a service's expiry from its page: a redirect to it once done, or the page again with the refusal at the
    Hours field (422); 403 without the session's CSRF token, 404 for a service not the caller's."""
    check_csrf(caller, csrf)
    try:
        done = lifecycle.extend(rt, user=caller.user, service_id=service_id, body={"hours": hours_of(hours)})
    except Rejected as refused:
        said = "; ".join(f"{p.message} ({p.hint})" if p.hint else p.message for p in refused.problems)
        services = lifecycle.list_services(rt, user=caller.user)["services"]
        service = lifecycle.get(rt, user=caller.user, service_id=service_id)
        return FormAnswer(422, playground_html(caller, services, service, hours=hours[:40], problem=said))
    return FormAnswer(303, location=f"/ui/playground/{quote(str(done['id']), safe='')}")


def stop_service(rt: Runtime, caller: WebCaller, *, service_id: str, csrf: str) -> FormAnswer:
    """Stop a service from its page, then show it again (403 without the session's CSRF token, 404 for a service
    not the caller's)."""
    check_csrf(caller, csrf)
    done = lifecycle.stop(rt, user=caller.user, service_id=service_id)
    return FormAnswer(303, location=f"/ui/playground/{quote(str(done['id']), safe='')}")

"""The delivery log of an account's webhooks: each delivery, newest first, with every attempt's time, status code or
error, and when the next is due; only the caller's own (another account's hook is a 404).

Tier: use case (one read transaction).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from ...store.models import WebhookAttempt, WebhookDelivery
from ..accounts.credentials import UserView
from ..context import Runtime
from .hooks import own_hook

__all__ = ["MAX_LIMIT", "delivery_log"]

MAX_LIMIT = 500


def _view(row: WebhookDelivery, attempts: list[WebhookAttempt]) -> dict[str, Any]:
    return {
        "id": row.id, "hook_id": row.hook_id, "job_ref": row.job_id, "event": f"job.{row.event}",
        "state": row.state, "created_at": row.created_at, "attempts": row.attempts,
        "next_at": row.next_at if row.state == "pending" else None, "last_status": row.last_status,
        "last_error": row.last_error, "finished_at": row.finished_at,
        "tries": [{"number": a.number, "at": a.at, "status_code": a.status_code, "error": a.error,
                   "next_at": a.next_at} for a in attempts],
    }


def delivery_log(rt: Runtime, *, user: UserView, hook_id: int | None = None, limit: int = 50) -> dict[str, Any]:
    """Return the caller's deliveries (of hook `hook_id` when given), newest first, at most `limit`."""
    limit = max(1, min(limit, MAX_LIMIT))
    with rt.db.read() as db:
        query = select(WebhookDelivery).where(WebhookDelivery.user_id == user.id)
        if hook_id is not None:
            own_hook(db, user, hook_id)
            query = query.where(WebhookDelivery.hook_id == hook_id)
        rows = list(db.scalars(query.order_by(WebhookDelivery.id.desc()).limit(limit)))
        tries: dict[int, list[WebhookAttempt]] = {r.id: [] for r in rows}
        if rows:
            for attempt in db.scalars(select(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(list(tries)))
                                      .order_by(WebhookAttempt.delivery_id, WebhookAttempt.number)):
                tries[attempt.delivery_id].append(attempt)
        return {"deliveries": [_view(r, tries[r.id]) for r in rows]}

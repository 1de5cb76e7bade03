"""The outbox: `enqueue` writes one delivery row per hook of the job's account that asks for the event, in the
transaction of the status change itself (called by `jobs.set_status`), so a change that commits is never without
its deliveries and one that rolls back has none.

Tier: query (runs over the caller's session, in the caller's transaction). A delivery's body is frozen here: only
that job's fields, for hooks of that job's account.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...store.models import Job, JobEvent, Webhook, WebhookDelivery
from .events import event_type

__all__ = ["enqueue", "event_body"]

_CACHE = "starforge.notify.hooks"  # the account's hooks, read once per session (a session is one transaction)


def _hooks(db: Session, user_id: int) -> list[tuple[int, frozenset[str]]]:
    cache: dict[int, list[tuple[int, frozenset[str]]]] = db.info.setdefault(_CACHE, {})
    found = cache.get(user_id)
    if found is None:
        with db.no_autoflush:  # the caller's pending rows stay pending: reading hooks must not flush them early
            rows = db.execute(select(Webhook.id, Webhook.events).where(Webhook.user_id == user_id)).all()
        found = cache[user_id] = [(hook_id, frozenset(events.split(","))) for hook_id, events in rows]
    return found


def event_body(job: Job, event: JobEvent, kind: str, event_id: str) -> dict[str, Any]:
    """Return the JSON body of event `kind` of `job` (its change `event`): its own fields, nobody else's."""
    return {
        "id": event_id,
        "type": f"job.{kind}",
        "created_at": event.at,
        "data": {
            "job_ref": job.id, "name": job.name, "status": event.to_status, "previous": event.from_status,
            "reason": event.reason, "exp": job.exp, "project": job.project, "recipe": job.recipe,
            "profile": job.profile, "owner": job.username, "submitted_at": job.submitted_at,
            "started_at": job.started_at, "finished_at": job.finished_at, "attempts": job.attempts,
        },
    }


def enqueue(db: Session, job: Job, event: JobEvent) -> int:
    """Add the deliveries of `job`'s change `event` to its account's hooks that ask for it; return how many."""
    kind = event_type(event.from_status, event.to_status, event.reason or "")
    if kind is None:
        return 0
    wanted = [hook_id for hook_id, events in _hooks(db, job.user_id) if kind in events]
    if not wanted:
        return 0
    body = json.dumps(event_body(job, event, kind, "evt_" + secrets.token_hex(12)), ensure_ascii=False,
                      separators=(",", ":"), default=str)
    due = time.time()  # the sender's clock, whatever clock the change was recorded on
    for hook_id in wanted:
        db.add(WebhookDelivery(hook_id=hook_id, user_id=job.user_id, job_id=job.id, event=kind, body=body,
                               created_at=event.at, state="pending", attempts=0, next_at=due, last_error=""))
    return len(wanted)

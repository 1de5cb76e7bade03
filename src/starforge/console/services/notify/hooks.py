"""An account's webhooks: `add_hook` checks the URL and the events and answers the signing secret once,
`list_hooks` and `remove_hook` see only the caller's own hooks (another account's is a 404).

Tier: use case (one transaction each; the URL is resolved before the transaction opens).
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ....contract import Problem
from ...store.models import Webhook, WebhookDelivery
from ..accounts.credentials import UserView
from ..accounts.roles import can_submit
from ..context import Runtime
from ..errors import Forbidden, NotFound, Rejected
from .addresses import check_url
from .events import read_events
from .keys import new_salt, secret_of

__all__ = ["add_hook", "hook_view", "list_hooks", "own_hook", "remove_hook"]

_PREFIX_CHARS = 12
_TITLE = "The webhook was refused"


def hook_view(row: Webhook, counts: dict[str, int] | None = None) -> dict[str, Any]:
    """Return the API view of a hook (never its secret: only the secret's first characters)."""
    view: dict[str, Any] = {"id": row.id, "url": row.url, "events": row.events.split(","),
                            "secret_prefix": row.prefix, "created_at": row.created_at}
    if counts is not None:
        view["deliveries"] = {state: counts.get(state, 0) for state in ("pending", "delivered", "failed")}
    return view


def own_hook(db: Session, user: UserView, hook_id: int) -> Webhook:
    """Return the caller's hook `hook_id`; NotFound for a missing one and for another account's."""
    row = db.get(Webhook, hook_id)
    if row is None or row.user_id != user.id:
        raise NotFound(f"no webhook {hook_id} of yours (see `sf notify ls`)")
    return row


def add_hook(rt: Runtime, *, user: UserView, body: Any) -> dict[str, Any]:
    """Add a webhook from `{url, events?}` (events default to succeeded, failed, preempted) and return it with its
    signing secret `secret` (`whsec_…`), shown in this answer only; refusals are problems at `url` or `events`."""
    if not can_submit(user):
        raise Forbidden("a viewer runs no jobs, so it has no job events to be told about")
    body = body if isinstance(body, dict) else {}
    target, problems = check_url(body.get("url"), rt.settings)
    events, event_problems = read_events(body.get("events"))
    problems += event_problems
    if problems:
        raise Rejected(_TITLE, problems)
    assert target is not None
    salt = new_salt()
    secret = secret_of(rt.settings.state_dir, salt)
    with rt.db.write() as db:
        held = db.scalar(select(func.count()).select_from(Webhook).where(Webhook.user_id == user.id)) or 0
        if held >= rt.settings.notify.max_hooks:
            raise Rejected(_TITLE, [Problem("url", "too_many_hooks", f"you hold {held} webhooks, the most allowed",
                                            "remove one with `sf notify rm ID` first")])
        row = Webhook(user_id=user.id, url=str(body["url"]).strip(), events=",".join(events), salt=salt,
                      prefix=secret[:_PREFIX_CHARS], created_at=time.time())
        db.add(row)
        db.flush()
        return hook_view(row) | {"secret": secret}


def list_hooks(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """List the caller's webhooks, oldest first, each with its deliveries counted by state."""
    with rt.db.read() as db:
        rows = list(db.scalars(select(Webhook).where(Webhook.user_id == user.id).order_by(Webhook.id)))
        counted = db.execute(select(WebhookDelivery.hook_id, WebhookDelivery.state, func.count())
                             .where(WebhookDelivery.user_id == user.id)
                             .group_by(WebhookDelivery.hook_id, WebhookDelivery.state)).all()
        counts: dict[int, dict[str, int]] = {}
        for hook_id, state, n in counted:
            counts.setdefault(hook_id, {})[state] = n
        return {"hooks": [hook_view(r, counts.get(r.id, {})) for r in rows]}


def remove_hook(rt: Runtime, *, user: UserView, hook_id: int) -> dict[str, Any]:
    """Remove the caller's webhook `hook_id` with its deliveries (nothing more is sent to it)."""
    with rt.db.write() as db:
        row = own_hook(db, user, hook_id)
        removed = {"id": row.id, "url": row.url, "removed": True}
        db.delete(row)  # its deliveries and their attempts go with it (ON DELETE CASCADE)
        return removed

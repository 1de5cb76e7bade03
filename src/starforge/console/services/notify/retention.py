"""The delivery log's bound: of each hook's finished deliveries (delivered or failed) only the newest
`notify.keep_deliveries` are kept (their attempts go with the others, by the foreign key's cascade); a pending delivery is the outbox and is never removed.

Tier: use case (one write transaction per hook over its limit; the webhook sender runs it now and then).
"""

from __future__ import annotations

from sqlalchemy import delete, func, select

from ...store.models import WebhookDelivery
from ..context import Runtime

__all__ = ["FINISHED", "prune_deliveries"]

FINISHED = ("delivered", "failed")


def prune_deliveries(rt: Runtime) -> int:
    """Remove every hook's finished deliveries beyond the newest `notify.keep_deliveries`; return how many went."""
    keep = rt.settings.notify.keep_deliveries
    with rt.db.read() as db:
        over = list(db.scalars(
            select(WebhookDelivery.hook_id).where(WebhookDelivery.state.in_(FINISHED))
            .group_by(WebhookDelivery.hook_id).having(func.count() > keep)))
    removed = 0
    for hook_id in over:
        with rt.db.write() as db:
            finished = (WebhookDelivery.hook_id == hook_id) & WebhookDelivery.state.in_(FINISHED)
            cutoff = db.scalar(select(WebhookDelivery.id).where(finished)
                               .order_by(WebhookDelivery.id.desc()).offset(keep).limit(1))
            if cutoff is None:
                continue
            done = db.execute(delete(WebhookDelivery).where(finished, WebhookDelivery.id <= cutoff))
            removed += int(getattr(done, "rowcount", 0) or 0)
    return removed

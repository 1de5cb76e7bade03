"""The webhook sender: a thread of the process that runs the scheduler, which claims due deliveries, sends each
(signed, to the address it checks again now) on a small pool, and records every attempt: delivered on a 2xx, else
due again after the next pause of `notify.retry_seconds`, and `failed` after the last one; once a minute it trims
the delivery log (`retention`).

Tier: use case (owns its transactions: one to claim a batch, one per attempt recorded). A claim moves the delivery's
`next_at` past the attempt's timeout (its lease), under a row lock on PostgreSQL (`SKIP LOCKED`), so two senders
never send one delivery at once; a sender killed mid-attempt leaves it due again when the lease ends. It never
touches the scheduler's rows or locks, so a slow receiver never holds a scheduling cycle.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sqlalchemy import select

from ....wire.webhook_signature import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, sign
from ...store.models import Webhook, WebhookAttempt, WebhookDelivery
from ..context import Runtime
from .addresses import check_url
from .keys import secret_of
from .post import Answer, post
from .retention import prune_deliveries

__all__ = ["NotifySender", "send_due"]

log = logging.getLogger("starforge.notify")
BATCH = 32
WORKERS = 4
PRUNE_EVERY = 60.0  # seconds between two trims of the delivery log (`retention`)
_LEASE_GRACE = 30.0


@dataclass(frozen=True)
class _Claimed:
    delivery_id: int
    number: int
    event: str
    body: str
    url: str
    salt: str


def _claim(rt: Runtime, now: float) -> list[_Claimed]:
    lease = now + rt.settings.notify.timeout_seconds + _LEASE_GRACE
    claimed: list[_Claimed] = []
    with rt.db.write() as db:
        rows = db.execute(
            select(WebhookDelivery, Webhook.url, Webhook.salt).join(Webhook, Webhook.id == WebhookDelivery.hook_id)
            .where(WebhookDelivery.state == "pending", WebhookDelivery.next_at <= now)
            .order_by(WebhookDelivery.next_at).limit(BATCH)
            .with_for_update(of=WebhookDelivery, skip_locked=True)
        ).all()
        for delivery, url, salt in rows:
            delivery.attempts += 1
            delivery.next_at = lease
            claimed.append(_Claimed(delivery.id, delivery.attempts, delivery.event, delivery.body, url, salt))
    return claimed


def _attempt(rt: Runtime, item: _Claimed) -> Answer:
    target, problems = check_url(item.url, rt.settings)  # again at send time: the name may answer otherwise now
    if target is None:
        return Answer(None, f"refused: {problems[0].message}" if problems else "refused")
    body = item.body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "StarForge-Webhooks",
        SIGNATURE_HEADER: sign(secret_of(rt.settings.state_dir, item.salt), body, int(time.time())),
        EVENT_HEADER: f"job.{item.event}",
        DELIVERY_HEADER: str(item.delivery_id),
    }
    return post(target, body, headers, timeout=rt.settings.notify.timeout_seconds)


def _record(rt: Runtime, item: _Claimed, answer: Answer) -> None:
    now = time.time()
    pauses = rt.settings.notify.retry_seconds
    with rt.db.write() as db:
        delivery = db.get(WebhookDelivery, item.delivery_id)
        if delivery is None:  # its hook was removed meanwhile
            return
        retry_at = None if answer.delivered or item.number > len(pauses) else now + pauses[item.number - 1]
        delivery.last_status, delivery.last_error = answer.status, answer.error
        if answer.delivered:
            delivery.state, delivery.next_at, delivery.finished_at = "delivered", None, now
        elif retry_at is None:
            delivery.state, delivery.next_at, delivery.finished_at = "failed", None, now
        else:
            delivery.next_at = retry_at
        db.add(WebhookAttempt(delivery_id=item.delivery_id, number=item.number, at=now, status_code=answer.status,
                              error=answer.error, next_at=retry_at))


def _send_one(rt: Runtime, item: _Claimed) -> None:
    try:
        answer = _attempt(rt, item)
    except Exception as exc:  # a bug or a broken key file: recorded as this attempt's error, the loop goes on
        log.exception("webhook delivery %s failed", item.delivery_id)
        answer = Answer(None, f"{type(exc).__name__}: {exc}"[:500])
    _record(rt, item, answer)


def send_due(rt: Runtime, pool: ThreadPoolExecutor) -> int:
    """Claim the deliveries due now, send them on `pool` and wait for their attempts to be recorded; return how
    many were attempted."""
    claimed = _claim(rt, time.time())
    for future in [pool.submit(_send_one, rt, item) for item in claimed]:
        future.result()
    return len(claimed)


class NotifySender:
    """The sender's thread: `start()`, then a pass every `notify.poll_seconds` (at once again after a full batch)
    until `stop()`."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._stopping = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="starforge-notify-send")
        self._thread = threading.Thread(target=self._run, name="starforge-notify", daemon=True)

    def start(self) -> None:
        """Start sending."""
        self._thread.start()

    def _run(self) -> None:
        pruned_at = 0.0
        while not self._stopping.is_set():
            try:
                full = send_due(self.rt, self._pool) >= BATCH
                if time.monotonic() - pruned_at >= PRUNE_EVERY:
                    pruned_at = time.monotonic()
                    prune_deliveries(self.rt)
            except Exception:  # the database was unreachable for a moment: the next pass retries
                log.exception("webhook pass failed")
                full = False
            if not full:
                self._stopping.wait(self.rt.settings.notify.poll_seconds)

    def stop(self) -> None:
        """Stop after the attempts under way (each ends within its timeout)."""
        self._stopping.set()
        self._thread.join(timeout=self.rt.settings.notify.timeout_seconds + 5)
        self._pool.shutdown(wait=False, cancel_futures=True)

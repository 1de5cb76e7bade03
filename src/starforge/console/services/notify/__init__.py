"""Webhooks on job state changes: the events (`events`), an account's hooks (`hooks`), the outbox written with each
status change (`outbox`), the sender of the process that runs the scheduler (`sender`) and the delivery log
(`deliveries`). Only the light parts are named here: the status door imports this package, and the sender's HTTP
and TLS modules load with the sender.

Tier: shared (a package: each module names its own tier).
"""

from .events import DEFAULT_EVENTS, EVENTS, event_type
from .outbox import enqueue

__all__ = ["DEFAULT_EVENTS", "EVENTS", "enqueue", "event_type"]

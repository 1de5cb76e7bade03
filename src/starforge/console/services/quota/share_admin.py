"""The administrator API's fair-share use cases: every account's share of each series, its decayed usage, what it
holds and borrows and how many jobs it has waiting; and setting an account's weight.

Tier: use case (each function owns one transaction). The route lets only administrators through (`current_admin`);
these functions trust that. A weight is refused at its field (`weight`) with a hint, before anything is written.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from typing import Any

from ....contract import Problem
from ..accounts import credentials as accounts
from ..context import Runtime
from ..errors import Rejected
from . import shares

__all__ = ["MAX_WEIGHT", "set_share", "show_shares", "weight_problem"]

MAX_WEIGHT = 10_000.0  # a weight is relative: beyond this it only ever means "everything"


def show_shares(rt: Runtime) -> dict[str, Any]:
    """Return `{fair_share: {enabled, half_life_hours, default_weight}, preemption: {policy, grace_seconds},
    shares: [{user_id, username, weight, share, usage_gpu_hours, allocated, borrowed, waiting_jobs}]}`: each
    account's line of `shares.report`, as of now."""
    now = time.time()
    with rt.db.read() as db:
        lines = shares.report(db, settings=rt.settings, capacity=rt.capacity, now=now)
    fair, preemption = rt.settings.fair_share, rt.settings.preemption
    return {"fair_share": {"enabled": fair.enabled, "half_life_hours": fair.half_life_hours,
                           "default_weight": fair.default_weight},
            "preemption": {"policy": preemption.policy, "grace_seconds": preemption.grace_seconds},
            "at": now, "shares": [asdict(line) for line in lines]}


def weight_problem(value: Any) -> Problem | None:
    """Return why `value` is not a weight (a number above 0, at most `MAX_WEIGHT`), or None."""
    hint = (f"send a number above 0 and at most {MAX_WEIGHT:g}: an account of weight 2 is entitled to twice the "
            "share of one of weight 1 (the default is fair_share.default_weight)")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Problem("weight", "not_a_number", "must be a number", hint)
    if not math.isfinite(value):
        return Problem("weight", "not_finite", "NaN and infinities are refused", hint)
    if not 0 < value <= MAX_WEIGHT:
        return Problem("weight", "out_of_range", f"must be above 0 and at most {MAX_WEIGHT:g}", hint,
                       {"got": value, "range": {"min": 0, "max": MAX_WEIGHT}})
    return None


def set_share(rt: Runtime, *, username: str, body: dict[str, Any]) -> dict[str, Any]:
    """Set an account's weight from `{weight}` and return `{username, weight}`; a bad weight is refused (400) at
    `weight`, an unknown account is a 404. The scheduler orders the queue by the new weight from its next cycle."""
    weight: Any = body.get("weight")
    problem = weight_problem(weight)
    if problem is not None:
        raise Rejected("The weight was refused", [problem])
    with rt.db.write() as db:
        user = accounts.get_user(db, username)
        shares.set_weight(db, user.id, float(weight), now=time.time())
    rt.wake()
    return {"username": user.username, "weight": float(weight)}

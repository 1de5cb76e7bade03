"""Quota caps that make a request impossible (refused), as opposed to busy (queued by the commit step): the quota
policy's refusals (`quota.policy.refusals`)."""

from __future__ import annotations

from .....contract import Problem
from ...quota.policy import refusals, reserved_hours
from ..context import AdmissionContext

__all__ = ["check_quota"]


def check_quota(ctx: AdmissionContext) -> list[Problem]:
    """Refuse a job above `max_concurrent_gpus` (it can never run) and one whose reserved GPU hours do not fit what
    is left of the daily budget once the account's hours run today and its unfinished jobs' reservations (and the
    earlier points of the same request) are counted."""
    total = ctx.spec.total_gpus
    pools = " + ".join(f"{p.nodes}×{p.gpus_per_node}" for p in ctx.spec.spec.resources.pools)
    hours = reserved_hours(gpus=total, profile=ctx.profile, quota=ctx.quota,
                           profile_max_hours=ctx.settings.profile_max_hours)
    return refusals(ctx.quota, ctx.ledger, gpus=total, hours=hours, shape=pools)

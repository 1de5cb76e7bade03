"""Quota caps that make a request impossible (refused), as opposed to busy (queued by the commit step)."""

from __future__ import annotations

from .....contract import Problem
from ...quota.budget import job_hours, over_budget
from ..context import AdmissionContext

__all__ = ["check_quota"]


def check_quota(ctx: AdmissionContext) -> list[Problem]:
    """Refuse a job above `max_concurrent_gpus` (it can never run) and one whose reserved GPU hours do not fit what
    is left of the daily budget once the account's hours run today and its unfinished jobs' reservations (and the
    earlier points of the same request) are counted (`budget.over_budget`)."""
    problems = []
    total = ctx.spec.total_gpus
    cap = ctx.quota.max_concurrent_gpus
    if cap and total > cap:
        pools = " + ".join(f"{p.nodes}×{p.gpus_per_node}" for p in ctx.spec.spec.resources.pools)
        problems.append(Problem("spec.resources.pools", "quota_exceeded",
                                f"the job asks for {total} GPUs ({pools}) but your quota allows {cap} at once",
                                "use a smaller --profile, or ask an administrator to raise max_concurrent_gpus",
                                {"requested": total, "limit": cap}))
    hours = job_hours(gpus=total, profile=ctx.profile, quota=ctx.quota,
                      profile_max_hours=ctx.settings.profile_max_hours)
    refused = over_budget(ctx.ledger, hours, gpus=total)
    if refused is not None:
        problems.append(refused)
    return problems

"""Quota caps that make a request impossible (refused), as opposed to busy (queued by the commit step)."""

from __future__ import annotations

from .....contract import Problem
from ..context import AdmissionContext

__all__ = ["check_quota"]


def check_quota(ctx: AdmissionContext) -> list[Problem]:
    """Refuse a job above `max_concurrent_gpus` (it can never run) and submissions past the daily GPU-hour budget."""
    problems = []
    total = ctx.spec.total_gpus
    cap = ctx.quota.max_concurrent_gpus
    if cap and total > cap:
        pools = " + ".join(f"{p.nodes}×{p.gpus_per_node}" for p in ctx.spec.spec.resources.pools)
        problems.append(Problem("spec.resources.pools", "quota_exceeded",
                                f"the job asks for {total} GPUs ({pools}) but your quota allows {cap} at once",
                                "use a smaller --profile, or ask an administrator to raise max_concurrent_gpus",
                                {"requested": total, "limit": cap}))
    budget = ctx.quota.daily_gpu_hours
    if budget and ctx.usage.gpu_hours_today >= budget:
        problems.append(Problem("quota", "quota_exhausted",
                                f"you used {ctx.usage.gpu_hours_today:.1f} of your {budget:g} GPU hours today",
                                "submit again tomorrow (UTC), or ask an administrator to raise daily_gpu_hours",
                                {"used": ctx.usage.gpu_hours_today, "limit": budget}))
    return problems

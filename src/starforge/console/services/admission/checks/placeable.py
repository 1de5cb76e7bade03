"""An honest queue: admission refuses, at `spec.resources.pools[i].series`, a job that no capacity of this deployment
can ever serve (`capacity.unplaceable`), unless the submitter allows it to wait or the console queues such jobs.

A refused series is one the deployment has no slot of, or fewer slots in total than the job needs at once; without
this check the job would wait as `pending` until an operator adds capacity. `allow_pending` (the `--allow-pending`
flag of `sf submit`) and the setting `admission.unplaceable: queue` (capacity that appears later, such as an
autoscaling cluster) keep the old behaviour. A series outside the profile registry is `check_profiles`'s problem.
"""

from __future__ import annotations

from .....contract import Problem, profile_name
from ...jobs.rows import series_demand
from ...quota.capacity import unplaceable
from ..context import AdmissionContext

__all__ = ["check_placeable"]


def check_placeable(ctx: AdmissionContext) -> list[Problem]:
    """Refuse each pool whose series no capacity of this deployment can serve, naming the series that have some."""
    if ctx.allow_pending or ctx.settings.unplaceable == "queue":
        return []
    profile = profile_name(ctx.profile)
    blocked = unplaceable(ctx.capacity, series_demand(ctx.spec, profile))
    if not blocked:  # the common case, on the admission hot path: nothing more to compute
        return []
    known = ctx.settings.series()
    served = sorted(series for series, slots in ctx.capacity.items() if slots > 0)
    problems: list[Problem] = []
    for i, pool in enumerate(ctx.spec.spec.resources.pools):
        series = pool.series or profile
        why = blocked.pop(series, None)  # one problem per series, at its first pool
        if why is None or series not in known:
            continue
        problems.append(Problem(
            f"spec.resources.pools[{i}].series", "series_no_capacity",
            f"{why}: the job could never start here",
            f"series with capacity here: {', '.join(served) or 'none'}; or pass --allow-pending (`allow_pending: "
            f"true`) to let it wait until an operator adds {series} capacity",
            {"got": series, "allowed": served},
        ))
    return problems

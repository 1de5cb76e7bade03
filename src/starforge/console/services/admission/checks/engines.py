"""One engine per job: the console refuses, at `spec.resources.pools`, a job whose series run on different engines.

Each series runs on one engine (`executors.series`, else the default `executor`); a job is started by one engine,
so pools on a Slurm series and a Ray (or local) series can never start together.
"""

from __future__ import annotations

from .....contract import Problem, profile_name
from ...jobs.rows import series_demand
from ..context import AdmissionContext

__all__ = ["check_engines"]


def check_engines(ctx: AdmissionContext) -> list[Problem]:
    """Refuse a job whose pools would need more than one engine of this deployment."""
    profile = profile_name(ctx.profile)
    engines = ctx.settings.engines_of(series_demand(ctx.spec, profile))
    if len(engines) < 2:
        return []
    split = "; ".join(f"{', '.join(series)} on {engine}" for engine, series in sorted(engines.items()))
    return [Problem("spec.resources.pools", "engines_span",
                    f"the job's pools run on different engines of this deployment ({split})",
                    "use pools of series served by one engine (`sf console` operators map series to engines in "
                    "`executors.series`), or submit one job per engine", {"got": sorted(engines)})]

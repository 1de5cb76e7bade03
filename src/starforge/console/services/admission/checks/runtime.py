"""Runnable frameworks: the console refuses a job it could not start on a series of its profile (`Settings.runtime_blocker`).

A recipe runs on a series when its framework may run there (GPU-only frameworks need a series with GPUs), its
file entrypoint has a configured checkout, and a runtime can be built for it (or the console's interpreter has it).
"""

from __future__ import annotations

from .....contract import Problem, profile_name
from ...jobs.rows import series_demand
from ..context import AdmissionContext

__all__ = ["check_runtime"]


def check_runtime(ctx: AdmissionContext) -> list[Problem]:
    """Refuse, at `spec.framework.kind`, a recipe this console cannot start on one of the job's series."""
    recipe = ctx.recipe
    if recipe is None:  # the catalog handshake already refused it
        return []
    framework = ctx.spec.spec.framework
    version = framework.version or recipe.runtime.default_version
    profile = profile_name(ctx.profile)
    for series in series_demand(ctx.spec, profile):
        found = ctx.settings.runtime_blocker(recipe, version, series)
        if found is not None:
            return [Problem("spec.framework.kind", "framework_unavailable", found.reason, found.hint,
                            {"got": framework.kind})]
    return []

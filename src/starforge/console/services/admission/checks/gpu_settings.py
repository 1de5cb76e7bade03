"""Settings that need a GPU: admission refuses, at `spec.hyperparams.<name>`, a `needs_gpu` setting a job turns on
while one of its series has no GPUs (`runtimes.cpu_series`), with the `--set <name>=false` that fixes it.

The rule is the recipes' (`starforge.recipes.gpu_problems`); this check only says which of the job's series have
no GPUs. It runs for `POST /api/jobs`, `POST /api/admission/check` (`sf submit --dry-run`) and MCP alike.
"""

from __future__ import annotations

from .....contract import Problem, profile_name
from .....recipes import gpu_problems
from ...jobs.rows import series_demand
from ..context import AdmissionContext

__all__ = ["check_gpu_settings"]


def check_gpu_settings(ctx: AdmissionContext) -> list[Problem]:
    """Refuse each `needs_gpu` setting the spec turns on when a series of the job has no GPUs."""
    recipe = ctx.recipe
    if recipe is None:  # the catalog handshake already refused it
        return []
    profile = profile_name(ctx.profile)
    cpu = [s for s in series_demand(ctx.spec, profile) if ctx.settings.series_kind(s) == "cpu"]
    framework = ctx.spec.spec.framework
    return gpu_problems(ctx.spec.spec.hyperparams, recipe, cpu, framework.version)

"""Profiles and pools: the job's profile is registered and allowed (the quota policy's `allowed_profiles` rule);
every pool's series is known."""

from __future__ import annotations

from .....contract import Problem, profile_name
from ...quota.policy import profile_refusal, usable_profiles
from ..context import AdmissionContext

__all__ = ["check_profiles"]


def check_profiles(ctx: AdmissionContext) -> list[Problem]:
    """Refuse an unknown or forbidden profile (403) and pools of an unknown series."""
    problems = []
    names = {p.name for p in ctx.settings.profiles}
    profile = profile_name(ctx.profile)
    if profile and profile not in names:
        problems.append(Problem("X-Forge-Meta.profile", "profile_unknown", f"profile {profile!r} is not registered",
                                f"registered profiles: {', '.join(sorted(names))}",
                                {"got": profile, "allowed": usable_profiles(ctx.quota, names)}))
    refused = profile_refusal(ctx.quota, profile)
    if refused is not None:
        problems.append(refused)
    series = set(ctx.settings.series())
    for i, pool in enumerate(ctx.spec.spec.resources.pools):
        name = pool.series or profile
        if name and name not in series:
            problems.append(Problem(f"spec.resources.pools[{i}].series", "series_unknown",
                                    f"series {name!r} is not in this console's profile registry",
                                    f"known series: {', '.join(sorted(series))}",
                                    {"got": name, "allowed": sorted(series)}))
    return problems

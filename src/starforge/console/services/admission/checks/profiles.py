"""Profiles and pools: the job's profile is registered and allowed; every pool's series is known."""

from __future__ import annotations

from .....contract import Problem
from ..context import AdmissionContext

__all__ = ["check_profiles"]


def check_profiles(ctx: AdmissionContext) -> list[Problem]:
    """Refuse an unknown or forbidden profile (403) and pools of an unknown series."""
    problems = []
    names = {p.name for p in ctx.settings.profiles}
    profile = ctx.profile.split(":", 1)[0].strip()
    allowed = ctx.quota.allowed_profiles
    if profile and profile not in names:
        usable = sorted(n for n in names if not allowed or n in allowed)
        problems.append(Problem("X-Forge-Meta.profile", "profile_unknown", f"profile {profile!r} is not registered",
                                f"registered profiles: {', '.join(sorted(names))}", {"got": profile, "allowed": usable}))
    if profile and allowed and profile not in allowed:
        problems.append(Problem("X-Forge-Meta.profile", "profile_not_allowed",
                                f"your account may not use profile {profile!r}",
                                f"allowed for you: {', '.join(allowed)}", {"got": profile, "allowed": list(allowed)}))
    series = set(ctx.settings.series())
    for i, pool in enumerate(ctx.spec.spec.resources.pools):
        name = pool.series or profile
        if name and name not in series:
            problems.append(Problem(f"spec.resources.pools[{i}].series", "series_unknown",
                                    f"series {name!r} is not in this console's profile registry",
                                    f"known series: {', '.join(sorted(series))}",
                                    {"got": name, "allowed": sorted(series)}))
    return problems

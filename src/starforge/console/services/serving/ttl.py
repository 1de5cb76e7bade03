"""The lifetime arithmetic of a service: its first expiry, the cap, a request's move, `extend`.

Tier: shared (pure functions of numbers and the `serving:` settings; no database, no clock).

A service lives `ttl_hours` (the operator's default when none is asked) from its creation, then `idle_ttl_s` past
its last request; `extend` adds hours. Nothing moves `expires_at` beyond `created_at + max_ttl_hours`.
"""

from __future__ import annotations

import math

from ....contract import Problem
from ...scheduling_config import ServingSettings

__all__ = ["cap_of", "check_ttl", "extended", "first_expiry", "service_wall_seconds", "touched"]


def cap_of(created_at: float, settings: ServingSettings) -> float:
    """Return the time no service created at `created_at` outlives."""
    return created_at + settings.max_ttl_hours * 3600.0


def check_ttl(ttl_hours: object, settings: ServingSettings, *, field: str = "ttl_hours") -> list[Problem]:
    """Return the problems of an asked lifetime in hours (None: the default): a positive number within the cap."""
    if ttl_hours is None:
        return []
    if isinstance(ttl_hours, bool) or not isinstance(ttl_hours, int | float) or not math.isfinite(ttl_hours):
        return [Problem(field, "invalid_request", f"{field} must be a number of hours",
                        f"e.g. {settings.default_ttl_hours:g}")]
    if ttl_hours <= 0:
        return [Problem(field, "invalid_request", f"{field} must be greater than 0", f"e.g. {settings.default_ttl_hours:g}")]
    if ttl_hours > settings.max_ttl_hours:
        return [Problem(field, "ttl_over_cap",
                        f"{ttl_hours:g} hours is beyond this console's cap of {settings.max_ttl_hours:g} hours",
                        f"ask for at most {settings.max_ttl_hours:g} hours (serving.max_ttl_hours)",
                        {"got": ttl_hours, "max": settings.max_ttl_hours})]
    return []


def first_expiry(created_at: float, ttl_hours: float | None, settings: ServingSettings) -> float:
    """Return when a service created at `created_at` and asked to live `ttl_hours` (None: the default) expires."""
    hours = settings.default_ttl_hours if ttl_hours is None else float(ttl_hours)
    return min(created_at + hours * 3600.0, cap_of(created_at, settings))


def touched(now: float, *, created_at: float, expires_at: float, idle_ttl_s: float, settings: ServingSettings
            ) -> float:
    """Return the expiry after a request at `now`: at least `now + idle_ttl_s`, never earlier than it was, never
    beyond the cap."""
    return min(max(expires_at, now + idle_ttl_s), cap_of(created_at, settings))


def extended(now: float, *, created_at: float, expires_at: float, hours: float, settings: ServingSettings) -> float:
    """Return the expiry after `extend` by `hours` at `now` (from the later of now and the current expiry), capped."""
    return min(max(expires_at, now) + hours * 3600.0, cap_of(created_at, settings))


def service_wall_seconds(wall: float | None, settings: ServingSettings) -> float:
    """Return the wall time of a service's job: the cap (`max_ttl_hours`), or the profile's limit when shorter."""
    cap = settings.max_ttl_hours * 3600.0
    return min(wall, cap) if wall else cap

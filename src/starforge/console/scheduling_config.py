"""The scheduling keys of the console configuration, read and checked once: `fair_share:`, `preemption:` and
`restarts:` (a bad value stops the console at start, with its key named).

    fair_share:  {enabled: true, half_life_hours: 168, default_weight: 1}
    preemption:  {policy: off | priority | fair-share, grace_seconds: 120}
    restarts:    {max_restarts: 3, after_loss: 3}
    serving:     {default_ttl_hours: 1, max_ttl_hours: 24, idle_ttl_hours: 1}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["POLICIES", "FairShareSettings", "PreemptionSettings", "RestartSettings", "ServingSettings",
           "read_fair_share", "read_preemption", "read_restarts", "read_serving"]

POLICIES = ("off", "priority", "fair-share")


@dataclass(frozen=True)
class FairShareSettings:
    """Fair share: waiting jobs are ordered by their account's share-normalised usage (GPU-seconds per series,
    decayed with `half_life_hours`), then priority, then submission time; off: priority, then submission time."""

    enabled: bool = True
    half_life_hours: float = 168.0
    default_weight: float = 1.0  # the weight of an account no `sf admin share set` named

    @property
    def half_life_seconds(self) -> float:
        """Return the decay half-life in seconds."""
        return self.half_life_hours * 3600.0


@dataclass(frozen=True)
class PreemptionSettings:
    """Preemption: which running jobs a waiting one may preempt (`off`: none), and how long a preempted job has to
    save a checkpoint before it is stopped."""

    policy: str = "off"
    grace_seconds: float = 120.0

    @property
    def on(self) -> bool:
        """Return True when some running job may be preempted."""
        return self.policy != "off"


@dataclass(frozen=True)
class RestartSettings:
    """Automatic restarts: the cap on `sf submit --max-restarts`, and how many times a job whose node, process or
    console was lost resumes by itself (restarts the submitter did not have to ask for)."""

    max_restarts: int = 3
    after_loss: int = 3


@dataclass(frozen=True)
class ServingSettings:
    """Inference services: the lifetime a service gets when its owner names none, the cap no service outlives
    (counted from its start; also its job's wall time), and how long it lives on after its last request."""

    default_ttl_hours: float = 1.0
    max_ttl_hours: float = 24.0
    idle_ttl_hours: float = 1.0

    @property
    def idle_ttl_seconds(self) -> float:
        """Return the idle TTL in seconds."""
        return self.idle_ttl_hours * 3600.0


def _mapping(key: str, raw: Any, allowed: set[str], example: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"{key}: must be a mapping, e.g. {example}")
    unknown = sorted(set(map(str, raw)) - allowed)
    if unknown:
        raise ValueError(f"{key}.{unknown[0]}: unknown key (known: {', '.join(sorted(allowed))})")
    return raw


def _number(key: str, value: Any, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key}: must be a number of {'hours' if 'hours' in key else 'seconds'}, not {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{key}: must be {'greater than 0' if positive else '0 or more'}, not {value!r}")
    return float(value)


def _count(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key}: must be a whole number ≥ 0, not {value!r}")
    return value


def read_fair_share(raw: Any) -> FairShareSettings:
    """Return `fair_share:` read (ValueError naming the key when a value is wrong)."""
    raw = _mapping("fair_share", raw, {"enabled", "half_life_hours", "default_weight"},
                   "{enabled: true, half_life_hours: 168, default_weight: 1}")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ValueError(f"fair_share.enabled: must be true or false, not {enabled!r}")
    return FairShareSettings(
        enabled=enabled,
        half_life_hours=_number("fair_share.half_life_hours", raw.get("half_life_hours", 168.0), positive=True),
        default_weight=_number("fair_share.default_weight", raw.get("default_weight", 1.0), positive=True),
    )


def read_preemption(raw: Any) -> PreemptionSettings:
    """Return `preemption:` read (ValueError naming the key when a value is wrong)."""
    raw = _mapping("preemption", raw, {"policy", "grace_seconds"}, "{policy: priority, grace_seconds: 120}")
    policy = raw.get("policy", "off")
    if policy is False:  # YAML reads a bare `off` as false
        policy = "off"
    if policy not in POLICIES:
        raise ValueError(f"preemption.policy: must be one of {', '.join(POLICIES)}, not {policy!r}")
    return PreemptionSettings(policy=policy,
                              grace_seconds=_number("preemption.grace_seconds", raw.get("grace_seconds", 120.0),
                                                    positive=False))


def read_restarts(raw: Any) -> RestartSettings:
    """Return `restarts:` read (ValueError naming the key when a value is wrong)."""
    raw = _mapping("restarts", raw, {"max_restarts", "after_loss"}, "{max_restarts: 3, after_loss: 3}")
    return RestartSettings(max_restarts=_count("restarts.max_restarts", raw.get("max_restarts", 3)),
                           after_loss=_count("restarts.after_loss", raw.get("after_loss", 3)))


def read_serving(raw: Any) -> ServingSettings:
    """Return `serving:` read (ValueError naming the key when a value is wrong, or a default above the cap)."""
    raw = _mapping("serving", raw, {"default_ttl_hours", "max_ttl_hours", "idle_ttl_hours"},
                   "{default_ttl_hours: 1, max_ttl_hours: 24, idle_ttl_hours: 1}")
    found = ServingSettings(
        default_ttl_hours=_number("serving.default_ttl_hours", raw.get("default_ttl_hours", 1.0), positive=True),
        max_ttl_hours=_number("serving.max_ttl_hours", raw.get("max_ttl_hours", 24.0), positive=True),
        idle_ttl_hours=_number("serving.idle_ttl_hours", raw.get("idle_ttl_hours", 1.0), positive=True),
    )
    if found.default_ttl_hours > found.max_ttl_hours:
        raise ValueError(f"serving.default_ttl_hours: must be at most max_ttl_hours ({found.max_ttl_hours:g}), "
                         f"not {found.default_ttl_hours:g}")
    return found

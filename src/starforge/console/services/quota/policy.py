"""The quota policy: for every cap of the quota table (`starforge.wire.quota_fields`), whether a job is refused,
waits or is limited, one rule per cap and effect (`RULES`), called by admission (`checks.quota`,
`checks.profiles`), the follow-up admission, the submission writer, `capacity.decide` and the scheduler.

By cap (the table's `effects`):
- max_concurrent_gpus: refuse a job that alone asks for more GPUs (it could never start: `quota_exceeded`); wait
  while the account's active jobs hold so many that this one does not fit;
- max_concurrent_jobs: wait while the account has that many active jobs;
- daily_gpu_hours: refuse a submission whose reserved GPU hours do not fit what is left of today's budget
  (`quota_exhausted`, at admission and again at commit); a queued job that no longer fits when it is placed waits
  (it starts when the budget renews at 00:00 UTC, or once a running job ends early); limit each job's wall time to
  the whole budget over its GPUs. A follow-up step is neither refused nor held by it (`FOLLOWUP_EXEMPT`): the
  pipeline was admitted with its parent, and refusing its last step would waste the run it finishes;
- max_job_hours: limit each job's wall time;
- allowed_profiles: refuse a profile not in the list (`profile_not_allowed`, answered 403);
- priority: order the queue (a job carries its account's priority);
- max_storage_gb: reported (`sf status`), not enforced.

A job's wall-time limit is the shortest of its profile's `max_hours`, the account's `max_job_hours` and, with a
daily budget, the budget over the job's GPUs (no job may outrun a day's budget, so every job of a budgeted account
has a limit). A job not yet started reserves its GPUs × that limit of the budget; it fits when the account's ledger
(hours run today plus what its unfinished jobs still reserve) plus that reservation stays within the budget.

Tier: shared (pure: every rule decides on values its caller read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ....contract import Problem, profile_name
from ....wire.quota_fields import Effect, quota_field
from .caps import QuotaView

__all__ = ["FOLLOWUP_EXEMPT", "FOLLOWUP_EXEMPT_CODES", "RULES", "Ledger", "Wait", "budget_refusal", "budget_wait",
           "gpus_refusal", "gpus_wait", "jobs_wait", "over_budget", "profile_refusal", "queue_priority", "refusals",
           "reserved_hours", "usable_profiles", "wall_hours", "wall_seconds"]

_SLACK = 1e-9  # GPU hours: rounding never refuses an exact fit

# Caps that neither refuse nor hold a follow-up step (`spec.lifecycle.on_success`), and the codes of their refusals
FOLLOWUP_EXEMPT = ("daily_gpu_hours",)
FOLLOWUP_EXEMPT_CODES = frozenset(code for name in FOLLOWUP_EXEMPT for code in quota_field(name).codes)


@dataclass(frozen=True)
class Ledger:
    """An account's day against its budget: GPU hours run today (UTC), and GPU hours its unfinished jobs (and the
    earlier points of the same request) still reserve."""

    budget: float
    used: float = 0.0
    reserved: float = 0.0

    @property
    def left(self) -> float:
        """Return the GPU hours still free today (never below 0)."""
        return max(0.0, self.budget - self.used - self.reserved)

    def charged(self, hours: float) -> Ledger:
        """Return the ledger once a job reserving `hours` is counted."""
        return replace(self, reserved=self.reserved + hours)


@dataclass(frozen=True)
class Wait:
    """A job held in the queue by a cap: the cap's name, and the reason shown to the user."""

    cap: str
    reason: str


# ---- refuse ---------------------------------------------------------------------------------------------------------

def gpus_refusal(quota: QuotaView, *, gpus: int, shape: str = "") -> Problem | None:
    """max_concurrent_gpus: refuse a job that alone asks for more GPUs than the account may hold at once (`shape`:
    its pools, e.g. `2×8`)."""
    cap = quota.max_concurrent_gpus
    if not cap or gpus <= cap:
        return None
    return Problem("spec.resources.pools", "quota_exceeded",
                   f"the job asks for {gpus} GPUs ({shape}) but your quota allows {cap} at once",
                   "use a smaller --profile, or ask an administrator to raise max_concurrent_gpus",
                   {"requested": gpus, "limit": cap})


def over_budget(ledger: Ledger | None, hours: float, *, gpus: int, field: str = "quota",
                counted: str = "your queued and running jobs") -> Problem | None:
    """Return the `quota_exhausted` problem when a job reserving `hours` on `gpus` GPUs does not fit `ledger`, else
    None (no ledger: no budget); `counted` names the jobs whose reservations the ledger holds."""
    if ledger is None or ledger.budget <= 0 or ledger.used + ledger.reserved + hours <= ledger.budget + _SLACK:
        return None
    wall = hours / max(1, gpus)
    message = (f"this job reserves {hours:.4g} GPU hours ({gpus} GPU{'s' if gpus != 1 else ''} × its {wall:.4g} h "
               f"wall-time limit) but only {ledger.left:.4g} of your daily budget of {ledger.budget:g} GPU hours are "
               f"left: {ledger.used:.4g} used today and {ledger.reserved:.4g} reserved by {counted}")
    hint = ("wait for your jobs to end or for the budget to renew at 00:00 UTC, stop queued jobs "
            "(`sf job ls --status queued`), use fewer GPUs, or ask an administrator to raise daily_gpu_hours or set "
            "a shorter max_job_hours")
    return Problem(field, "quota_exhausted", message, hint,
                   {"used": round(ledger.used, 4), "limit": ledger.budget, "reserved": round(ledger.reserved, 4),
                    "needed": round(hours, 4)})


def budget_refusal(ledger: Ledger | None, *, hours: float, gpus: int, followup: bool = False) -> Problem | None:
    """daily_gpu_hours: refuse a submission reserving `hours` that do not fit what is left of today's budget
    (admission, and the submission writer again on the ledger it reads at commit); never a follow-up."""
    return None if followup else over_budget(ledger, hours, gpus=gpus)


def profile_refusal(quota: QuotaView, profile: str) -> Problem | None:
    """allowed_profiles: refuse a profile (its registry name) the account may not use."""
    allowed = quota.allowed_profiles
    if not profile or not allowed or profile in allowed:
        return None
    return Problem("X-Forge-Meta.profile", "profile_not_allowed", f"your account may not use profile {profile!r}",
                   f"allowed for you: {', '.join(allowed)}", {"got": profile, "allowed": list(allowed)})


def usable_profiles(quota: QuotaView, names: Iterable[str]) -> list[str]:
    """Return the registered profile `names` the account may use, sorted (allowed_profiles: empty allows all)."""
    allowed = quota.allowed_profiles
    return sorted(name for name in names if not allowed or name in allowed)


def refusals(quota: QuotaView, ledger: Ledger | None, *, gpus: int, hours: float, shape: str = "") -> list[Problem]:
    """Return the problems of every cap refusing a job at admission's quota check, in table order: `gpus` GPUs in
    pools of `shape`, reserving `hours` of the daily budget (`ledger`; None without one). The profile's cap is
    checked with the profile registry (`profile_refusal`, from `checks.profiles`)."""
    found = (gpus_refusal(quota, gpus=gpus, shape=shape), budget_refusal(ledger, hours=hours, gpus=gpus))
    return [problem for problem in found if problem is not None]


# ---- wait -----------------------------------------------------------------------------------------------------------

def gpus_wait(*, gpus: int, active_gpus: int, cap: int) -> Wait | None:
    """max_concurrent_gpus: hold a job of `gpus` GPUs while the account's active jobs use `active_gpus` of `cap`."""
    if not cap or active_gpus + gpus <= cap:
        return None
    return Wait("max_concurrent_gpus", f"quota: your active jobs use {active_gpus} of {cap} GPUs and this job needs "
                                       f"{gpus}; it starts when they finish")


def jobs_wait(*, active_jobs: int, cap: int) -> Wait | None:
    """max_concurrent_jobs: hold a job while the account has `cap` active jobs."""
    if not cap or active_jobs + 1 <= cap:
        return None
    return Wait("max_concurrent_jobs", f"quota: {active_jobs} of {cap} concurrent jobs are active; it starts when one "
                                       "ends")


def budget_wait(ledger: Ledger | None, *, hours: float, gpus: int, followup: bool = False) -> Wait | None:
    """daily_gpu_hours: hold a queued job reserving `hours` that no longer fit the ledger of the hours run today and
    reserved by the account's placed and running jobs (the scheduler's); never a follow-up."""
    over = None if followup else over_budget(ledger, hours, gpus=gpus, counted="your placed and running jobs")
    if over is None:
        return None
    return Wait("daily_gpu_hours", f"quota: {over.message}; it starts when the budget renews at 00:00 UTC or once a "
                                   "running job ends early")


# ---- limit ----------------------------------------------------------------------------------------------------------

def wall_hours(*, gpus: int, profile_hours: float, quota: QuotaView) -> float:
    """max_job_hours, daily_gpu_hours: return a job's wall-time limit in hours (0: none), the shortest of its
    profile's `max_hours`, the account's `max_job_hours` and, with a daily budget, the budget over the job's GPUs."""
    limits = [hours for hours in (profile_hours, quota.max_job_hours) if hours > 0]
    if quota.daily_gpu_hours > 0:
        limits.append(quota.daily_gpu_hours / max(1, gpus))
    return min(limits) if limits else 0.0


def wall_seconds(*, gpus: int, profile: str, quota: QuotaView, profile_max_hours: Mapping[str, float]) -> float | None:
    """Return the wall-time limit, in seconds, a job on `profile` runs under (None: none): what the scheduler gives
    the engine (`Limits.wall_seconds`), and what the job reserves of the daily budget."""
    hours = wall_hours(gpus=gpus, profile_hours=profile_max_hours.get(profile_name(profile), 0.0), quota=quota)
    return hours * 3600 if hours else None


def reserved_hours(*, gpus: int, profile: str, quota: QuotaView, profile_max_hours: Mapping[str, float]) -> float:
    """daily_gpu_hours: return the GPU hours a job not yet started reserves, its GPUs × its wall-time limit (0
    without a budget)."""
    if quota.daily_gpu_hours <= 0:
        return 0.0
    return gpus * wall_hours(gpus=gpus, profile_hours=profile_max_hours.get(profile_name(profile), 0.0), quota=quota)


# ---- order ----------------------------------------------------------------------------------------------------------

def queue_priority(quota: QuotaView) -> int:
    """priority: return the priority a new job of the account is queued with (higher first)."""
    return quota.priority


# Each cap's rule per effect of the table (a cap that is only reported has none); tests hold the two together
RULES: dict[str, dict[Effect, Callable[..., Any]]] = {
    "max_concurrent_gpus": {Effect.REFUSE: gpus_refusal, Effect.WAIT: gpus_wait},
    "max_concurrent_jobs": {Effect.WAIT: jobs_wait},
    "daily_gpu_hours": {Effect.REFUSE: budget_refusal, Effect.WAIT: budget_wait, Effect.LIMIT: wall_hours},
    "max_storage_gb": {},
    "allowed_profiles": {Effect.REFUSE: profile_refusal},
    "priority": {Effect.ORDER: queue_priority},
    "max_job_hours": {Effect.LIMIT: wall_hours},
}

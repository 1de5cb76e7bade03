"""The admission pipeline: stage B–D through the shared verdict, owner stamping, then the policy checks in order.

Order (jobspec-contract §12): contract → owner stamping → catalog handshake and recipe gates → path-component
names → image allowlist → init_from → cluster paths (a base model under model_roots, no bare data path) → registry
references (a registered base model, corpus, datasets, volumes, environment) → benchmark suites (a benchmark
job's suites are offered, `checks.benchmarks`) → plugins → profiles and pools →
capacity (a series no capacity of this deployment can serve is refused unless the submitter allows it to wait,
`checks.placeable`) → runnable framework (a runtime this console can build for every series of the job,
`runtimes.blocker`) → settings that need a GPU on a series without (`checks.gpu_settings`) → quota → bundle
safety.
A later stage runs only when the earlier ones found nothing; inside the policy stage every check runs and every
problem is reported.

The names check (ours, not in §12) opens the policy stage: it reads only the spec, and the names it refuses are
the fields every later check and the run directory are built from, so its problems come first.

Two steps, each run once per request: `screen` runs the document stages (the contract parse, the catalog, the
recipe gates) and stamps the owner, in memory; its `Screened.needs_store` then tells, before any policy check runs,
whether the policy stage must read the store (the account's quota not held by the caller, a daily budget, or a
registry reference to resolve), and `judge` runs the policy checks over a session, or in memory when none is
needed. `admit` is both steps over the caller's session.

Tier: query (`admit` and `judge` run over the caller's session and never write; `screen` and the checks are pure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from ....contract import JobSpec, Problem
from ....recipes.verdict import check_document
from ...settings import Settings
from ..accounts.credentials import UserView
from ..quota.budget import ledgers
from ..quota.caps import QuotaView, get_quota
from ..quota.policy import Ledger
from .checks import (
    check_benchmarks,
    check_bundle,
    check_cluster_paths,
    check_data,
    check_engines,
    check_gpu_settings,
    check_image,
    check_init_from,
    check_names,
    check_placeable,
    check_plugins,
    check_profiles,
    check_quota,
    check_runtime,
)
from .context import AdmissionContext, Resolutions
from .resolve import has_references, resolve_references

__all__ = ["POLICY_CHECKS", "AdmissionRequest", "Decision", "Screened", "admit", "judge", "screen", "stamp_owner"]

POLICY_CHECKS = (
    check_names, check_image, check_init_from, check_cluster_paths, check_data, check_benchmarks, check_plugins,
    check_profiles,
    check_placeable, check_engines, check_runtime, check_gpu_settings, check_quota, check_bundle,
)


@dataclass(frozen=True)
class AdmissionRequest:
    """One request to admit: who asks, the raw spec document, the job profile and the bundle (if any)."""

    user: UserView
    doc: Any
    profile: str
    bundle: bytes | None = None
    warnings: tuple[Problem, ...] = ()
    allow_pending: bool = False  # a job no capacity can serve waits as `pending` instead of being refused
    reserved_before: float = 0.0  # GPU hours the earlier points of the same request reserve (a sweep's)


@dataclass(frozen=True)
class Decision:
    """The verdict: the admitted (owner-stamped) spec, or every problem with the HTTP status to answer."""

    spec: JobSpec | None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    status: int = 200
    resolutions: Resolutions = field(default_factory=Resolutions)
    recipe: Any = None

    @property
    def ok(self) -> bool:
        """Return True when the request was admitted."""
        return not self.problems and self.spec is not None


def stamp_owner(spec: JobSpec, user: UserView) -> tuple[JobSpec, list[Problem]]:
    """Return the spec owned by `user`; a different non-empty client value only adds a warning."""
    warnings = []
    sent = spec.metadata.owner
    if sent and sent != user.username:
        warnings.append(
            Problem("metadata.owner", "owner_ignored", f"metadata.owner is set by the console; {sent!r} was ignored")
        )
    return spec.with_owner(user.username), warnings


@dataclass(frozen=True)
class Screened:
    """A request past the document stages (B–D) and owner stamping: the spec the policy checks read."""

    request: AdmissionRequest
    spec: JobSpec
    warnings: tuple[Problem, ...]

    def needs_store(self, quota: QuotaView | None) -> bool:
        """Return True when the policy stage must read the store: `quota` (the caller's copy of the account's) is
        None, it has a daily budget (the ledger of the day), or the spec names something a registry resolves."""
        return quota is None or bool(quota.daily_gpu_hours) or has_references(self.spec)


def screen(catalog: Any, request: AdmissionRequest) -> Screened | Decision:
    """Run the document stages on `request.doc` (its one parse) and stamp the owner; return what the policy stage
    reads, or the refusal (a Decision with every problem) when a document stage found one."""
    warnings = list(request.warnings)
    verdict = check_document(request.doc, catalog)
    warnings.extend(verdict.warnings)
    if verdict.problems or verdict.spec is None:
        return Decision(None, list(verdict.problems), warnings, 400)
    spec, owner_warnings = stamp_owner(verdict.spec, request.user)
    warnings.extend(owner_warnings)
    return Screened(request, spec, tuple(warnings))


def _ledger(db: Session, settings: Settings, request: AdmissionRequest, quota: QuotaView) -> Ledger | None:
    found = ledgers(db, {request.user.id: quota}, settings.profile_max_hours, waiting=True).get(request.user.id)
    return found.charged(request.reserved_before) if found is not None else None


def judge(db: Session | None, settings: Settings, catalog: Any, screened: Screened, quota: QuotaView | None = None,
          capacity: Mapping[str, int] | None = None) -> Decision:
    """Run the policy checks on a screened request and return the verdict; never writes to the store.

    With a session, `quota` is the account's when the caller holds it (read from `db` otherwise), the account's
    ledger is read only when the quota has a daily budget (the one check that reads it; `reserved_before` of the
    request added to it) and the spec's references are resolved. Without one (`db` None) the checks run in memory:
    the caller has asked `screened.needs_store(quota)` first (ValueError when it would have said yes). `capacity` is
    the deployment's slots per series as its engines declare them (what the scheduler places on;
    `settings.capacity` when not given)."""
    request, spec = screened.request, screened.spec
    if db is None:
        if quota is None or screened.needs_store(quota):
            raise ValueError("this admission needs the store: judge it over a session")
        caps, ledger, resolutions = quota, None, Resolutions()
    else:
        caps = quota or get_quota(db, request.user, settings.quota)
        ledger = _ledger(db, settings, request, caps)
        resolutions = resolve_references(db, spec, request.user)
    ctx = AdmissionContext(
        spec=spec,
        user=request.user,
        settings=settings,
        profile=request.profile,
        quota=caps,
        ledger=ledger,
        resolutions=resolutions,
        bundle=request.bundle,
        recipe=catalog.get(spec.spec.recipe.name),
        capacity=settings.capacity if capacity is None else capacity,
        allow_pending=request.allow_pending,
    )
    warnings = list(screened.warnings)
    problems = [problem for check in POLICY_CHECKS for problem in check(ctx)]
    if problems:
        status = 403 if any(p.code == "profile_not_allowed" for p in problems) else 400
        return Decision(None, problems, warnings, status)
    return Decision(spec, [], warnings, 200, ctx.resolutions, ctx.recipe)


def admit(db: Session, settings: Settings, catalog: Any, request: AdmissionRequest,
          quota: QuotaView | None = None, capacity: Mapping[str, int] | None = None) -> Decision:
    """Run every admission stage for `request` over the caller's session (`screen`, then `judge`); never writes to
    the store. `quota` and `capacity` are as `judge` takes them."""
    screened = screen(catalog, request)
    if isinstance(screened, Decision):
        return screened
    return judge(db, settings, catalog, screened, quota, capacity)

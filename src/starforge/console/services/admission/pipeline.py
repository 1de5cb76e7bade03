"""The admission pipeline: stage B–D through the shared verdict, owner stamping, then the policy checks in order.

Order (jobspec-contract §12): contract → owner stamping → catalog handshake and recipe gates → path-component
names → image allowlist → init_from → cluster paths (a base model under model_roots, no bare data path) → registry
references (a registered base model, corpus, datasets, volumes, environment) → plugins → profiles and pools →
capacity (a series no capacity of this deployment can serve is refused unless the submitter allows it to wait,
`checks.placeable`) → runnable framework (a runtime this console can build for every series of the job,
`runtimes.blocker`) → settings that need a GPU on a series without (`checks.gpu_settings`) → quota → bundle
safety.
A later stage runs only when the earlier ones found nothing; inside the policy stage every check runs and every
problem is reported.

The names check (ours, not in §12) opens the policy stage: it reads only the spec, and the names it refuses are
the fields every later check and the run directory are built from, so its problems come first.

Tier: query (`admit` runs over the caller's session and never writes; the checks are pure).
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
from ..quota.budget import Ledger, ledgers
from ..quota.caps import QuotaView, get_quota
from .checks import (
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

__all__ = ["POLICY_CHECKS", "AdmissionRequest", "Decision", "NeedsDatabase", "admit", "stamp_owner"]

POLICY_CHECKS = (
    check_names, check_image, check_init_from, check_cluster_paths, check_data, check_plugins, check_profiles,
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


class NeedsDatabase(Exception):
    """Raised by `admit` without a session when the decision needs the store (a reference, the day's usage)."""


def _ledger(db: Session, settings: Settings, request: AdmissionRequest, quota: QuotaView) -> Ledger | None:
    found = ledgers(db, {request.user.id: quota}, settings.profile_max_hours, waiting=True).get(request.user.id)
    return found.charged(request.reserved_before) if found is not None else None


def admit(db: Session | None, settings: Settings, catalog: Any, request: AdmissionRequest,
          quota: QuotaView | None = None, capacity: Mapping[str, int] | None = None) -> Decision:
    """Run every admission stage for `request`; never writes to the store. `quota` is the account's, when the
    caller already holds it (read from `db` otherwise); the account's ledger is read only when the quota has a
    daily budget, the one check that reads it (`request.reserved_before` added to it). `capacity` is the deployment's slots per series as its engines declare them
    (what the scheduler places on; `settings.capacity` when not given). Without a session (`db` None) the decision is taken
    in memory, or NeedsDatabase is raised once it turns out to need a lookup."""
    warnings = list(request.warnings)
    verdict = check_document(request.doc, catalog)
    warnings.extend(verdict.warnings)
    if verdict.problems or verdict.spec is None:
        return Decision(None, list(verdict.problems), warnings, 400)
    spec, owner_warnings = stamp_owner(verdict.spec, request.user)
    warnings.extend(owner_warnings)
    if db is None:
        if quota is None or quota.daily_gpu_hours or has_references(spec):
            raise NeedsDatabase
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
    problems = [problem for check in POLICY_CHECKS for problem in check(ctx)]
    if problems:
        status = 403 if any(p.code == "profile_not_allowed" for p in problems) else 400
        return Decision(None, problems, warnings, status)
    return Decision(spec, [], warnings, 200, ctx.resolutions, ctx.recipe)

"""Follow-up jobs: the `spec.lifecycle.on_success` actions of a successful run, admitted and queued as its children.

Tier: query (runs over the caller's session — the scheduler's transaction that records the parent's success;
never begins or commits one). Each child is made by the same `jobs.build_job` as a submission, after the
follow-up checks of `admission.followup` (which checks apply, and why the others do not, is written there).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...contract import JobSpec, Lifecycle, Pool, Resources, parse_or_raise, render_problems
from ..settings import Settings
from ..store.models import Artifact, Job, User
from .accounts import user_view
from .admission.followup import admit_followup
from .audit import decision_row
from .jobs import build_job, create_job, set_status

__all__ = ["child_spec", "create_followups", "latest_checkpoint"]


def latest_checkpoint(db: Session, run_id: str) -> str:
    """Return the path of the run's checkpoint with the highest step ("" when it registered none)."""
    rows = list(db.scalars(select(Artifact).where(Artifact.run_id == run_id, Artifact.kind == "checkpoint")))
    if not rows:
        return ""
    rows.sort(key=lambda a: (a.step if a.step is not None else -1, a.id))
    return rows[-1].path


def child_spec(parent: JobSpec, *, series: str, gpus: int) -> JobSpec:
    """Return the spec of a follow-up: the parent's, without lifecycle actions, on one `lifecycle` pool."""
    pool = Pool(name="lifecycle", nodes=1, gpus_per_node=gpus, series=series)
    return replace(parent, spec=replace(parent.spec, lifecycle=Lifecycle(), resources=Resources(pools=(pool,))))


def create_followups(db: Session, *, parent: Job, catalog: Any, settings: Settings) -> list[str]:
    """Admit and queue one job per on_success action the recipe declares, each starting from the parent's latest
    checkpoint; a child the follow-up checks refuse is recorded as failed with every problem. Returns their ids.

    No follow-up is created for an account that is disabled (its jobs are being stopped).
    """
    spec = parse_or_raise(json.loads(parent.spec_json))
    actions = spec.spec.lifecycle.on_success
    recipe = catalog.get(spec.spec.recipe.name)
    owner_row = db.get(User, parent.user_id)
    if not actions or recipe is None or owner_row is None or owner_row.disabled:
        return []
    owner = user_view(owner_row)
    series = spec.spec.resources.pools[0].series or parent.profile
    checkpoint = latest_checkpoint(db, parent.id)
    meta = json.loads(parent.meta_json or "{}")
    created: list[str] = []
    for action in actions:
        if action not in recipe.lifecycle:
            continue
        gpus = max(1, int(recipe.lifecycle_resources.get(action, 1)))
        child = child_spec(spec, series=series, gpus=gpus)
        problems = admit_followup(db, settings, spec=child, owner=owner, profile=parent.profile, recipe=recipe)
        job = create_job(db, build_job(
            user_id=parent.user_id, username=parent.username, spec=child, exp=parent.exp, profile=parent.profile,
            priority=parent.priority, meta=meta, resolved={"init_from": checkpoint}, package_sha=parent.package_sha,
            parent_id=parent.id, action=action,
        ))
        set_status(db, job, "queued", reason=f"{action} step of {parent.id}", waiting_for="capacity")
        if problems:
            set_status(db, job, "failed", reason=render_problems(f"The {action} step was refused", problems))
        db.add(decision_row(user_id=parent.user_id, source="followup", verdict="rejected" if problems else "queued",
                            exp=parent.exp, recipe=parent.recipe, job_id=job.id, problems=problems))
        created.append(job.id)
    return created

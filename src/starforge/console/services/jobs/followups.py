"""Follow-up jobs: the `spec.lifecycle.on_success` actions of a successful run, admitted and queued as its children.

Tier: query (runs over the caller's session — the scheduler's transaction that records the parent's success;
never begins or commits one). Each child is made by the same `jobs.build_job` as a submission, after the
follow-up checks of `admission.followup` (which checks apply, and why the others do not, is written there).
`followup_child` and `add_followup` also make the follow-ups asked for later, on request (`followup_requests`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import JobSpec, Lifecycle, Pool, Problem, Resources, parse_or_raise, render_problems
from ....recipes import runs_action
from ...settings import Settings
from ...store.models import Artifact, Job, User
from ..accounts.credentials import UserView, user_view
from ..admission.checks.benchmarks import BENCHMARK_RECIPE
from ..admission.followup import admit_followup
from ..audit import decision_row
from .benchmark_followups import benchmark_spec, benchmark_suites, recorded_suites, suite_problems
from .rows import build_job, create_job, set_status

__all__ = ["add_followup", "child_spec", "create_followups", "followup_child", "latest_checkpoint"]


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


def followup_child(
    db: Session, settings: Settings, *, parent: Job, spec: JobSpec, recipe: Any, owner: UserView, action: str,
    profile: str = "", suites: tuple[str, ...] | None = None, catalog: Any = None,
) -> tuple[JobSpec, list[Problem]]:
    """Return the spec of `parent`'s follow-up `action` and every problem of the follow-up checks (empty: it may be
    queued).

    `spec` is the parent's admitted spec and `recipe` its served recipe, which declares `action`. The child runs on
    the parent's profile and pool series unless `profile` names another; `suites`, when given, replace the
    evaluation suites the child's spec carries (`spec.evaluation.suites`, read by the eval entry point). With the
    `catalog`, an `eval` on suites is a benchmark job (`benchmark_followups`): recipe `evalkit/benchmark`.
    """
    series = spec.spec.resources.pools[0].series or parent.profile
    if profile:
        series = next((p.series or p.name for p in settings.profiles if p.name == profile), profile)
    gpus = max(1, int(recipe.lifecycle_resources.get(action, 1)))
    child = child_spec(spec, series=series, gpus=gpus)
    if suites is not None:
        child = replace(child, spec=replace(child.spec, evaluation=replace(child.spec.evaluation, suites=suites)))
    benchmarks = benchmark_suites(spec, action, suites) if catalog is not None else ()
    found: list[Problem] = []
    if benchmarks:
        child, recipe = benchmark_spec(child, catalog, benchmarks)
        found = suite_problems(db, benchmarks)
        if recipe is None:
            return child, [Problem("spec.evaluation.suites", "recipe_unknown", f"this console serves no "
                                   f"{BENCHMARK_RECIPE} recipe to run the benchmarks on",
                                   "ask an operator to serve it, or evaluate with the recipe's own step")]
    problems = admit_followup(db, settings, spec=child, owner=owner, profile=profile or parent.profile,
                              recipe=recipe)
    return child, found + problems





def add_followup(
    db: Session, *, parent: Job, child: JobSpec, action: str, checkpoint: str, problems: list[Problem],
    profile: str = "", meta: dict[str, Any] | None = None,
) -> Job:
    """Add `parent`'s follow-up row for `action`, queued for capacity and starting from `checkpoint` (failed with
    every problem when the follow-up checks refused it), and its admission decision; return the row."""
    parent_meta = json.loads(parent.meta_json or "{}")
    resolved = {**json.loads(parent.resolved_json or "{}"), "init_from": checkpoint}
    suites = recorded_suites(db, child) if not problems else None
    if suites is not None:  # a benchmark job: its suites' packs, and none of the parent's files
        resolved = {"init_from": checkpoint, "benchmarks": suites}
    job = create_job(db, build_job(
        user_id=parent.user_id, username=parent.username, spec=child, exp=parent.exp,
        profile=profile or parent.profile, priority=parent.priority, meta={**parent_meta, **(meta or {})},
        # the child keeps the parent's references (base model, data, plugins), so it keeps what they resolved to
        resolved=resolved, package_sha="" if suites is not None else parent.package_sha, parent_id=parent.id,
        action=action,
    ))
    set_status(db, job, "queued", reason=f"{action} step of {parent.id}", waiting_for="capacity")
    if problems:
        set_status(db, job, "failed", reason=render_problems(f"The {action} step was refused", problems))
    db.add(decision_row(user_id=parent.user_id, source="followup", verdict="rejected" if problems else "queued",
                        exp=parent.exp, recipe=parent.recipe, job_id=job.id, problems=problems))
    return job


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
    checkpoint = latest_checkpoint(db, parent.id)
    created: list[str] = []
    for action in actions:
        if not runs_action(recipe, spec, action):
            continue
        child, problems = followup_child(db, settings, parent=parent, spec=spec, recipe=recipe, owner=owner,
                                         action=action, catalog=catalog)
        created.append(add_followup(db, parent=parent, child=child, action=action, checkpoint=checkpoint,
                                    problems=problems).id)
    return created

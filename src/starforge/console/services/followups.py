"""Follow-up jobs: `spec.lifecycle.on_success` actions of a successful run, queued as jobs linked to it."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...contract import parse_or_raise
from ..store.models import Artifact, Job
from .jobs import new_run_id, set_status

__all__ = ["create_followups", "latest_checkpoint"]


def latest_checkpoint(db: Session, run_id: str) -> str:
    """Return the path of the run's checkpoint with the highest step ("" when it registered none)."""
    rows = list(db.scalars(select(Artifact).where(Artifact.run_id == run_id, Artifact.kind == "checkpoint")))
    if not rows:
        return ""
    rows.sort(key=lambda a: (a.step if a.step is not None else -1, a.id))
    return rows[-1].path


def create_followups(db: Session, job: Job, catalog: Any) -> list[str]:
    """Queue one job per on_success action the recipe declares; each starts from the run's latest checkpoint."""
    spec = json.loads(job.spec_json)
    actions = spec.get("spec", {}).get("lifecycle", {}).get("on_success", [])
    recipe = catalog.get(spec["spec"]["recipe"]["name"])
    if not actions or recipe is None:
        return []
    pools = spec["spec"]["resources"]["pools"]
    series = pools[0].get("series") or job.profile
    checkpoint = latest_checkpoint(db, job.id)
    created: list[str] = []
    for action in actions:
        if action not in recipe.lifecycle:
            continue
        gpus = max(1, int(recipe.lifecycle_resources.get(action, 1)))
        child = copy.deepcopy(spec)
        child["spec"].pop("lifecycle", None)
        child["spec"]["resources"] = {"pools": [{"name": "lifecycle", "nodes": 1, "gpus_per_node": gpus,
                                                 "series": series}]}
        child_spec = parse_or_raise(child)
        run_id = new_run_id()
        while db.get(Job, run_id) is not None:
            run_id = new_run_id()
        row = Job(
            id=run_id, user_id=job.user_id, username=job.username, name=job.name, exp=job.exp, project=job.project,
            profile=job.profile, recipe=job.recipe, status="", requested_gpus=gpus,
            series_gpus=json.dumps({series: gpus}), priority=job.priority,
            spec_json=json.dumps(child_spec.to_dict(), ensure_ascii=False), meta_json=job.meta_json,
            package_sha=job.package_sha, resolved_json=json.dumps({"init_from": checkpoint}),
            parent_id=job.id, action=action, submitted_at=time.time(),
        )
        db.add(row)
        set_status(db, row, "queued", reason=f"{action} step of {job.id}", waiting_for="capacity")
        created.append(run_id)
    return created

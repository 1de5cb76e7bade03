"""Follow-ups on request: one export or eval job on a succeeded run of the caller (`sf export`, `sf eval`,
`POST /api/jobs/{ref}/followups`, and the official client's `POST /api/post`), made exactly as `--then` makes them.

Tier: use case (one write transaction per request, then the scheduler is woken). The child is built, checked and
added by `followups.followup_child` and `followups.add_followup`, the functions `create_followups` uses; what is
new here is only which run it follows, which action, and the refusals a request can meet: a run that is not the
caller's (404), not succeeded or itself a follow-up (409), without a checkpoint (409), an action its recipe does
not declare (422 at `action`), or a follow-up the follow-up checks refuse (400/403 with every problem; nothing is
created).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import Problem, check_safe_segment, parse_or_raise, profile_name
from ....recipes import runs_action
from ...store.models import Artifact, Job
from ..accounts.credentials import UserView
from ..admission.envelope import Envelope, open_envelope
from ..audit import decision_row
from ..context import Runtime
from ..errors import Conflict, NotFound, Rejected
from ..outcome import Outcome
from ..registries.artifacts import shown_path
from .followups import add_followup, followup_child, latest_checkpoint
from .queries import JobFilter, visible_jobs
from .submissions import require_writable

__all__ = ["FollowupAsk", "followup_from_body", "post_followup", "read_ask", "request_followup"]

_TITLE = "The follow-up request was rejected"
_POST_LOOKUP = 200  # succeeded runs of an experiment searched by `POST /api/post`, newest first


@dataclass(frozen=True)
class FollowupAsk:
    """What a request asks for: the lifecycle action, the eval suites (None: the run's own), a profile ("": the
    run's), and a checkpoint path or suffix ("": the run's latest)."""

    action: str
    suites: tuple[str, ...] | None = None
    profile: str = ""
    checkpoint: str = ""


def read_ask(body: Any) -> FollowupAsk:
    """Return the ask of a `{"action", "benchmarks"?, "profile"?}` body; raise Rejected (422) with every problem."""
    problems: list[Problem] = []
    if not isinstance(body, dict):
        raise Rejected(_TITLE, [Problem("<body>", "not_an_object", "the body must be a JSON object",
                                        'send {"action": "export"} or {"action": "eval", "benchmarks": [...]}')],
                       status=422)
    action, profile, benchmarks = body.get("action"), body.get("profile", ""), body.get("benchmarks")
    if not isinstance(action, str) or not action.strip():
        problems.append(Problem("action", "invalid_request", "action must be a non-empty string",
                                "a lifecycle action of the run's recipe: export or eval"))
    if not isinstance(profile, str):
        problems.append(Problem("profile", "not_a_string", "profile must be a string", "a profile name, e.g. cpu"))
    suites: tuple[str, ...] | None = None
    if benchmarks is not None:
        if not isinstance(benchmarks, list) or not all(isinstance(b, str) for b in benchmarks):
            problems.append(Problem("benchmarks", "not_a_list", "benchmarks must be a list of strings",
                                    'e.g. ["gsm8k", "mmlu"]'))
        else:
            names = list(dict.fromkeys(b.strip() for b in benchmarks if b.strip()))
            for i, name in enumerate(names):
                problems.extend(check_safe_segment(name, f"benchmarks[{i}]", "benchmark"))
            suites = tuple(names)
    if suites is not None and isinstance(action, str) and action.strip() != "eval":
        problems.append(Problem("benchmarks", "invalid_request", "only the eval action takes benchmarks",
                                "drop benchmarks, or ask for the eval action"))
    if problems:
        raise Rejected(_TITLE, problems, status=422)
    assert isinstance(action, str) and isinstance(profile, str)
    return FollowupAsk(action.strip(), suites, profile_name(profile))


def followup_from_body(rt: Runtime, *, user: UserView, ref: str, body: Any) -> Outcome:
    """Serve `POST /api/jobs/{ref}/followups`: `request_followup` with the ask `read_ask` finds in `body`.
    Blocking: call it in the threadpool. A job that is not the caller's is a 404 whatever the body holds."""
    try:
        ask = read_ask(body)
    except Rejected:
        with rt.db.read() as db:  # a bad body on another account's job tells nothing: 404 first
            _own_job(db, user, ref)
        raise
    return request_followup(rt, user=user, ref=ref, ask=ask)


def request_followup(rt: Runtime, *, user: UserView, ref: str, ask: FollowupAsk,
                     meta: dict[str, Any] | None = None) -> Outcome:
    """Create the follow-up `ask` names on the caller's run `ref` and answer like a submission (202, queued: it waits
    for capacity as a `--then` step does); raise NotFound, Conflict or Rejected with a hint otherwise."""
    require_writable(user, rt)
    refused: list[Problem] = []
    with rt.db.write() as db:
        parent = _own_job(db, user, ref)
        outcome = _create(rt, db, user, parent, ask, meta or {}, refused)
    if outcome is None:
        raise Rejected(_TITLE, refused, status=403 if any(p.code == "profile_not_allowed" for p in refused) else 400)  # as admission
    rt.wake()
    return outcome


def _own_job(db: Session, user: UserView, ref: str) -> Job:
    job = db.get(Job, (ref or "").strip())
    if job is None or job.user_id != user.id:
        raise NotFound(f"no job {ref!r} of yours (see `sf job ls`)")
    return job


def _conflict(message: str, code: str, field: str, hint: str) -> Conflict:
    return Conflict(_TITLE, [Problem(field, code, message, hint)])


def _create(rt: Runtime, db: Session, user: UserView, parent: Job, ask: FollowupAsk, meta: dict[str, Any],
            refused: list[Problem]) -> Outcome | None:
    if parent.action:
        raise _conflict(f"job {parent.id} is itself the {parent.action} step of {parent.parent_id}",
                        "followup_parent_unfinished", "job", f"ask on the training run: `sf {ask.action} "
                                                             f"{parent.parent_id}`")
    if parent.status != "succeeded":
        raise _conflict(f"job {parent.id} is {parent.status}; {ask.action} needs a run that succeeded",
                        "followup_parent_unfinished", "job",
                        f"see where it stands with `sf job status {parent.id}`; ask again once it has succeeded")
    spec = parse_or_raise(json.loads(parent.spec_json))
    recipe = rt.catalog.get(spec.spec.recipe.name)
    declared = sorted(recipe.lifecycle) if recipe is not None else []
    if recipe is None or not runs_action(recipe, spec, ask.action, ask.suites):
        have = f"it declares: {', '.join(declared)}" if declared else "it declares no lifecycle action"
        raise Rejected(_TITLE, [Problem("action", "lifecycle_action_unknown",
                                        f"recipe {spec.spec.recipe.name} has no {ask.action!r} action ({have})",
                                        f"ask for one of: {', '.join(declared)}" if declared
                                        else "this run's recipe cannot be exported or evaluated by the platform",
                                        {"got": ask.action, "allowed": declared})], status=422)
    checkpoint = _checkpoint(db, parent, ask)
    child, problems = followup_child(db, rt.settings, parent=parent, spec=spec, recipe=recipe, owner=user,
                                     action=ask.action, profile=ask.profile, suites=ask.suites, catalog=rt.catalog)
    if problems:
        db.add(decision_row(user_id=user.id, source="followup", verdict="rejected", exp=parent.exp,
                            recipe=parent.recipe, problems=problems))
        refused.extend(problems)
        return None
    job = add_followup(db, parent=parent, child=child, action=ask.action, checkpoint=checkpoint, problems=[],
                       profile=ask.profile, meta=meta)
    return Outcome(202, {
        "job_id": job.id, "run_id": job.id, "queued": True, "status": job.status,
        "message": f"{ask.action} step of {parent.id}, queued for capacity on {job.profile}",
        "requested_gpus": child.total_gpus, "dry_run": False, "warnings": [], "parent": parent.id,
        "action": ask.action, "checkpoint": _shown(rt, parent, checkpoint),
    })


def _shown(rt: Runtime, parent: Job, checkpoint: str) -> str:
    """Return the checkpoint's path as the parent's job saw it (never the console machine's)."""
    job_out = rt.job_paths(Path(parent.run_dir), parent.executor_ref).out if parent.run_dir else ""
    return shown_path(checkpoint, run_dir=parent.run_dir, job_out=job_out)


def _checkpoint(db: Session, parent: Job, ask: FollowupAsk) -> str:
    if not ask.checkpoint:
        found = latest_checkpoint(db, parent.id)
        if not found:
            raise _conflict(f"run {parent.id} has no checkpoint to start the {ask.action} from",
                            "followup_no_checkpoint", "job",
                            f"`sf job artifacts {parent.id}` lists what it registered; `sf clean` deletes them")
        return found
    match = _matching_checkpoint(db, parent.id, ask.checkpoint)
    if not match:
        raise _conflict(f"run {parent.id} registered no checkpoint {ask.checkpoint!r}", "followup_no_checkpoint",
                        "flags.--checkpoint", f"`sf job artifacts {parent.id}` lists its checkpoints")
    return match


def _matching_checkpoint(db: Session, run_id: str, wanted: str) -> str:
    """Return the run's checkpoint (the latest step first) whose path is `wanted`, ends with `/<wanted>`, or has the
    same place in the run's output folder (`…/<run_id>/out/<rest>`, as the job saw it); "" when none does."""
    rows = db.scalars(select(Artifact).where(Artifact.run_id == run_id, Artifact.kind == "checkpoint"))
    ordered = sorted(rows, key=lambda a: (a.step if a.step is not None else -1, a.id), reverse=True)
    wanted = wanted.rstrip("/")
    marker = f"/{run_id}/out/"
    inside = wanted.split(marker, 1)[1] if marker in wanted else None
    for row in ordered:
        path = row.path.rstrip("/")
        if path == wanted or path.endswith("/" + wanted.lstrip("/")):
            return row.path
        if inside is not None and marker in path and path.split(marker, 1)[1] == inside:
            return row.path
    return ""


def _flag(flags: Any, name: str) -> str:
    """Return the value of `--name V` or `--name=V` in an argv list ("" when absent)."""
    items = [f for f in flags if isinstance(f, str)] if isinstance(flags, list) else []
    for i, item in enumerate(items):
        if item == name and i + 1 < len(items):
            return items[i + 1]
        if item.startswith(name + "="):
            return item[len(name) + 1:]
    return ""


def post_followup(rt: Runtime, *, user: UserView, envelope: Envelope) -> Outcome:
    """Serve the official client's `POST /api/post`: the follow-up `action` of the caller's newest succeeded run of
    the meta's `exp` (with `--checkpoint P` among `flags`: the newest that registered P, which the child starts
    from), on the meta's profile. The uploaded bundle and spec are read and checked (stage A) but not run: the child
    runs its parent's stored bundle, as a `--then` step does. Blocking: call it in the threadpool."""
    opened = open_envelope(envelope)
    meta = opened.meta
    action, flags = meta.extra.get("action"), meta.extra.get("flags", [])
    if not isinstance(action, str) or not action.strip():
        raise Rejected(_TITLE, [Problem("X-Forge-Meta.action", "meta_invalid", "action must be export or eval",
                                        "send it with `sf export` or `sf eval`")])
    if not isinstance(flags, list):
        raise Rejected(_TITLE, [Problem("X-Forge-Meta.flags", "meta_invalid", "flags must be a list of strings")])
    ask = FollowupAsk(action.strip(), profile=profile_name(meta.profile),
                      checkpoint=_flag(flags, "--checkpoint"))
    with rt.db.read() as db:
        parent = _newest_succeeded(db, user, meta.exp, ask)
    outcome = request_followup(rt, user=user, ref=parent, ask=ask, meta={"flags": [str(f) for f in flags]})
    warnings = [str(w) for w in opened.warnings]
    return Outcome(outcome.status_code, {**outcome.body, "warnings": outcome.body["warnings"] + warnings})


def _newest_succeeded(db: Session, user: UserView, exp: str, ask: FollowupAsk) -> str:
    runs = [j for j in visible_jobs(db, user, limit=_POST_LOOKUP, where=JobFilter(exp=exp.strip().strip("/")))
            if not j.action]
    if not runs:
        raise NotFound(f"no job of experiment {exp!r} of yours (see `sf job ls`)")
    done = [j for j in runs if j.status == "succeeded"]
    if not done:
        raise _conflict(f"no run of {exp} has succeeded (newest: {runs[0].id}, {runs[0].status})",
                        "followup_parent_unfinished", "X-Forge-Meta.exp",
                        f"see where it stands with `sf job status {runs[0].id}`")
    if not ask.checkpoint:
        return done[0].id
    for job in done:
        if _matching_checkpoint(db, job.id, ask.checkpoint):
            return job.id
    raise _conflict(f"no succeeded run of {exp} registered a checkpoint {ask.checkpoint!r}",
                    "followup_no_checkpoint", "X-Forge-Meta.flags",
                    f"`sf job artifacts {done[0].id}` lists the newest run's checkpoints")

"""Sweeps as one decision: `submit` admits every point of a sweep through the submission's admission and commits
all of its jobs in one transaction (or refuses the sweep whole, storing nothing); `stop` stops a sweep's jobs.

Tier: use case (owns its transactions). The request (`POST /api/sweeps`, multipart) carries one bundle and a `sweep`
JSON part: the envelope fields every point shares (`exp`, `profile`, `git_commit`, `git_dirty`, `config_sha`,
`project`, `allow_pending`), `max_parallel` (0: no limit of its own) and `points: [{params, spec}]`. Each point is
checked as a `POST /api/jobs` envelope of its own (meta `sweep_params`, the official client's shape) and admitted
by the same pipeline; a problem of point i is reported at `points[i].<field>`, its message naming the point's values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import Problem
from ...store.models import Job
from ..accounts import roles
from ..accounts.credentials import UserView
from ..admission import AdmissionRequest, Decision, Meta, read_meta
from ..admission.checks.bundle import bundle_problems
from ..admission.envelope import Parts, bundle_part, small_part
from ..admission.meta import restarts_problem
from ..context import Runtime
from ..errors import Forbidden, Rejected
from ..jobs.bundles import store_bundle
from ..jobs.rows import TERMINAL, stop_job
from ..jobs.submission_writer import Admitted, GroupRefused
from ..jobs.submissions import admit_request, record_rejection, require_writable
from ..outcome import Outcome
from ..quota.policy import reserved_hours
from .rows import find_sweep, new_sweep

__all__ = ["MAX_POINTS", "stop", "submit"]

MAX_POINTS = 256  # as `sf sweep` sends at most (lab.sweep_points.MAX_POINTS): one decision stays one transaction
_SHARED = ("exp", "profile", "git_commit", "git_dirty", "config_sha", "project", "allow_pending",
           "max_restarts")
_TITLE = "The sweep was rejected"


def _invalid(field: str, message: str, hint: str) -> Rejected:
    return Rejected("Invalid request", [Problem(field, "invalid_request", message, hint)], status=422)


def _read_request(parts: Parts) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """Return the sweep document, its points and its parallel limit; raise Rejected (422) on a malformed request."""
    from ..json_text import load_json

    raw = small_part(parts, "sweep")
    if raw is None:
        raise _invalid("sweep", "the multipart body needs a `sweep` part (JSON)",
                       "send {exp, profile, max_parallel, points: [{params, spec}]} as the part named sweep, "
                       "the bundle as a file named bundle")
    doc, problems = load_json(raw, "sweep")
    if problems:
        raise Rejected("Invalid request", problems, status=422)
    if not isinstance(doc, dict):
        raise _invalid("sweep", "the sweep part must be a JSON object", "send {exp, profile, points: [...]}")
    points = doc.get("points")
    if not isinstance(points, list) or not points or len(points) > MAX_POINTS:
        raise _invalid("sweep.points", f"points must be a list of 1 to {MAX_POINTS} points",
                       "send one {params, spec} object per point; split a larger search into several sweeps")
    for index, point in enumerate(points):
        if not isinstance(point, dict) or not isinstance(point.get("params"), dict) or not isinstance(
                point.get("spec"), dict):
            raise _invalid(f"points[{index}]", "a point must be {\"params\": {...}, \"spec\": {...}}",
                           "params: the point's values as typed; spec: its JobSpec")
    limit = doc.get("max_parallel", 0)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= MAX_POINTS:
        raise _invalid("sweep.max_parallel", f"max_parallel must be an integer from 0 (no limit) to {MAX_POINTS}",
                       "send the most runs of the sweep that may be active at once")
    return doc, points, limit


def _values(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in params.items()) or "no values"


def _at_point(index: int, params: Mapping[str, Any], problem: Problem) -> Problem:
    field = problem.field.removeprefix("X-Forge-Meta.")
    return Problem(f"points[{index}].{field}", problem.code, f"point {index} ({_values(params)}): {problem.message}",
                   problem.hint, problem.data)


def _admit_points(rt: Runtime, user: UserView, doc: dict[str, Any], points: list[dict[str, Any]],
                  bundle: bytes | None) -> list[tuple[Meta, Decision]]:
    """Admit every point, each seeing the GPU hours the points before it reserve; raise Rejected (422) with every
    problem of every refused point (each refusal audited)."""
    admitted: list[tuple[Meta, Decision]] = []
    problems: list[Problem] = bundle_problems(rt.settings, bundle) if bundle is not None else []
    if problems:  # one bundle for every point: inspected once, and its problems are no point's own
        record_rejection(rt, user, points[0]["spec"] if points else None, problems, [])
        raise Rejected(f"{_TITLE}: the bundle was refused, so nothing was submitted", problems, status=422)
    shared = {key: doc[key] for key in _SHARED if key in doc}
    too_many = restarts_problem(shared, rt.settings.restarts.max_restarts)
    if too_many is not None:
        raise Rejected(f"{_TITLE}: nothing was submitted", [too_many], status=422)
    quota = rt.accounts.quota(user, rt.settings.quota)
    reserved = 0.0  # GPU hours the admitted points before this one reserve of the daily budget
    for index, point in enumerate(points):
        meta, meta_problems, warnings = read_meta({**shared, "sweep_params": point["params"], "spec": point["spec"]})
        if meta is None:
            record_rejection(rt, user, point["spec"], meta_problems, warnings)
            problems += [_at_point(index, point["params"], p) for p in meta_problems]
            continue
        decision = admit_request(rt, AdmissionRequest(user, meta.spec, meta.profile, None, tuple(warnings),
                                                      allow_pending=meta.extra.get("allow_pending") is True,
                                                      reserved_before=reserved))
        if not decision.ok or decision.spec is None:
            record_rejection(rt, user, meta.spec, decision.problems, decision.warnings)
            problems += [_at_point(index, point["params"], p) for p in decision.problems]
            continue
        reserved += reserved_hours(gpus=decision.spec.total_gpus, profile=meta.profile, quota=quota,
                              profile_max_hours=rt.settings.profile_max_hours)
        admitted.append((meta, decision))
    if problems:
        refused = len(points) - len(admitted)
        raise Rejected(f"{_TITLE}: {refused} of {len(points)} points were refused, so nothing was submitted",
                       problems, status=422)
    return admitted


def submit(rt: Runtime, *, user: UserView, parts: Parts) -> dict[str, Any]:
    """Admit every point of a sweep and commit all of its jobs in one transaction; return `{sweep_id, exp, profile,
    max_parallel, jobs: [{job_id, run_id, params, status, queued, message, warnings}]}`, or raise Rejected (422)
    naming each refused point's problems (nothing stored). The caller's role was checked before the parts were
    read (`require_writable`, by the route). Blocking: call it in the threadpool."""
    doc, points, limit = _read_request(parts)
    require_writable(user, rt)
    found = bundle_part(parts)
    bundle = found if found is None or isinstance(found, bytes) else found.read_bytes()
    admitted = _admit_points(rt, user, doc, points, bundle)
    package_sha = store_bundle(rt.settings.state_dir, bundle) if bundle else ""
    first = admitted[0][0]
    items = [Admitted(user, decision.spec, decision, exp=meta.exp, profile=meta.profile, meta=dict(meta.extra),
                      package_sha=package_sha, idempotency_key=None)
             for meta, decision in admitted if decision.spec is not None]
    made: list[str] = []

    def add_sweep(db: Session) -> None:
        sweep = new_sweep(db, user_id=user.id, exp=first.exp, profile=first.profile, max_parallel=limit,
                          points=[point["params"] for point in points])
        made.append(sweep.id)
        for item in items:
            item.meta["sweep_id"] = sweep.id

    try:
        outcomes = rt.submissions.commit_group(items, add_sweep)
    except GroupRefused as refused:  # the budget moved between admission and the commit: nothing was stored
        point = points[refused.index]
        record_rejection(rt, user, point["spec"], [refused.problem], [])
        raise Rejected(f"{_TITLE}: point {refused.index} no longer fits the daily budget, so nothing was submitted",
                       [_at_point(refused.index, point["params"], refused.problem)], status=422) from None
    return {"sweep_id": made[0], "exp": first.exp, "profile": first.profile, "max_parallel": limit,
            "jobs": [_job_answer(point["params"], outcome) for point, outcome in zip(points, outcomes, strict=True)]}


def _job_answer(params: Mapping[str, Any], outcome: Outcome) -> dict[str, Any]:
    body = outcome.body
    return {"job_id": body.get("job_id"), "run_id": body.get("run_id"), "params": dict(params),
            "status": body.get("status"), "queued": body.get("queued"), "message": body.get("message"),
            "warnings": body.get("warnings", [])}


def stop(rt: Runtime, *, user: UserView, sweep_id: str) -> dict[str, Any]:
    """Stop every unfinished job of a sweep the caller may see (404 otherwise); answer `{sweep_id, stopped,
    failed: [{id, error}]}` (the official client's shape)."""
    if not roles.can_stop(user):
        raise Forbidden("viewers cannot stop jobs")
    with rt.db.write() as db:
        sweep = find_sweep(db, user, sweep_id)
        jobs = list(db.scalars(select(Job).where(Job.user_id == sweep.user_id, Job.sweep_id == sweep.id,
                                                 Job.status.not_in(TERMINAL))))
        stopped = sum(1 for job in jobs if stop_job(db, job, f"stopped by {user.username} (sweep {sweep.id})"))
    rt.wake()
    return {"sweep_id": sweep.id, "stopped": stopped, "failed": []}

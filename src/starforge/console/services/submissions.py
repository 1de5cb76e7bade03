"""Submissions: admit, then commit the job, its quota reservation and its audit row in one transaction."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from ...contract import Problem, dumps
from ..runtime import Runtime
from ..store.models import Admission, Idempotency, Job
from .accounts import UserView
from .admission import AdmissionRequest, Decision, admit
from .bundles import store_bundle
from .capacity import Fit, decide, demand_of, take_snapshot
from .errors import Forbidden, Rejected, Unavailable
from .jobs import new_run_id, set_status
from .quota import get_quota

__all__ = ["MAX_IDEMPOTENCY_KEY", "SubmitOutcome", "check", "first_pool_series", "record_rejection", "submit"]

MAX_IDEMPOTENCY_KEY = 255  # idempotency.key column; a longer key is refused, never cut (cut keys would collide)


@dataclass(frozen=True)
class SubmitOutcome:
    """The HTTP status and body to answer a submission with (200 started, 202 queued)."""

    status_code: int
    body: dict[str, Any]


def _writable(user: UserView, rt: Runtime) -> None:
    if rt.settings.maintenance:
        raise Unavailable(rt.settings.maintenance_note or "the console is in maintenance mode: submissions are paused")
    if user.role == "viewer":
        raise Forbidden("viewers can read but not submit jobs")


def check(rt: Runtime, user: UserView, doc: Any, profile: str) -> dict[str, Any]:
    """Return the full verdict for a spec (stages B–E, no bundle); nothing is stored or scheduled."""
    with rt.db.read() as db:
        decision = admit(db, rt.settings, rt.catalog, AdmissionRequest(user, doc, profile or first_pool_series(doc)))
    body: dict[str, Any] = {
        "ok": decision.ok,
        "problems": [p.to_dict() for p in decision.problems],
        "warnings": [w.to_dict() for w in decision.warnings],
    }
    if decision.spec is not None:
        body["requested_gpus"] = decision.spec.total_gpus
        body["spec"] = decision.spec.to_dict()
    return body


def first_pool_series(doc: Any) -> str:
    """Return the series of the spec's first pool (the default profile of a tool submission), or ""."""
    try:
        return str(doc["spec"]["resources"]["pools"][0].get("series") or "")
    except (KeyError, IndexError, TypeError, AttributeError):
        return ""


def record_rejection(rt: Runtime, user: UserView, doc: Any, problems: list[Problem], warnings: list[Problem]) -> None:
    """Write a rejected decision to the admission audit log."""
    exp = recipe = ""
    if isinstance(doc, dict) and isinstance(doc.get("spec"), dict):
        exp = str(doc["spec"].get("source", {}).get("exp", "") if isinstance(doc["spec"].get("source"), dict) else "")
        recipe_obj = doc["spec"].get("recipe")
        recipe = str(recipe_obj.get("name", "")) if isinstance(recipe_obj, dict) else ""
    with rt.db.write() as db:
        db.add(Admission(user_id=user.id, at=time.time(), source="submit", verdict="rejected", exp=exp[:1000],
                         recipe=recipe[:255], problems_json=json.dumps([p.to_dict() for p in problems]),
                         warnings_json=json.dumps([w.to_dict() for w in warnings])))


def _check_idempotency_key(key: str | None) -> None:
    hint = f"send at most {MAX_IDEMPOTENCY_KEY} printable characters, such as a UUID (36)"
    if key is not None and len(key) > MAX_IDEMPOTENCY_KEY:
        raise Rejected("The submission was rejected", [Problem(
            "Idempotency-Key", "value_too_long",
            f"the Idempotency-Key header is {len(key)} characters long; at most {MAX_IDEMPOTENCY_KEY} are kept", hint)])
    if key is not None and not key.isprintable():
        raise Rejected("The submission was rejected", [Problem(
            "Idempotency-Key", "invalid_request", "the Idempotency-Key header holds a control character", hint)])


def _replay(rt: Runtime, user: UserView, key: str | None) -> SubmitOutcome | None:
    if not key:
        return None
    with rt.db.read() as db:
        row = db.scalar(select(Idempotency).where(Idempotency.user_id == user.id, Idempotency.key == key))
        return None if row is None else SubmitOutcome(row.status_code, json.loads(row.response_json))


def submit(
    rt: Runtime,
    user: UserView,
    *,
    doc: Any,
    exp: str,
    profile: str,
    bundle: bytes | None,
    meta: dict[str, Any],
    warnings: list[Problem],
    idempotency_key: str | None = None,
) -> SubmitOutcome:
    """Admit a submission and commit it; raise Rejected with every problem, or return the response to send."""
    _check_idempotency_key(idempotency_key)
    _writable(user, rt)
    replayed = _replay(rt, user, idempotency_key)
    if replayed is not None:
        return replayed
    with rt.db.read() as db:
        decision = admit(db, rt.settings, rt.catalog, AdmissionRequest(user, doc, profile, bundle, tuple(warnings)))
    if not decision.ok or decision.spec is None:
        record_rejection(rt, user, doc, decision.problems, decision.warnings)
        raise Rejected("The JobSpec was rejected", decision.problems, status=decision.status,
                       warnings=decision.warnings)
    package_sha = store_bundle(rt.settings.state_dir, bundle) if bundle else ""
    return _commit(rt, user, decision, exp=exp, profile=profile, meta=meta, package_sha=package_sha,
                   idempotency_key=idempotency_key)


def _series_gpus(decision: Decision, profile: str) -> dict[str, int]:
    assert decision.spec is not None
    out: dict[str, int] = {}
    for pool in decision.spec.spec.resources.pools:
        series = pool.series or profile
        out[series] = out.get(series, 0) + pool.gpus
    return out


def _commit(
    rt: Runtime, user: UserView, decision: Decision, *, exp: str, profile: str, meta: dict[str, Any],
    package_sha: str, idempotency_key: str | None,
) -> SubmitOutcome:
    spec = decision.spec
    assert spec is not None
    warnings = [str(w) for w in decision.warnings]
    resolved = {
        "init_from": decision.resolutions.init_from.path if decision.resolutions.init_from else "",
        "assets": {k: (v.path if v else "") for k, v in decision.resolutions.assets.items()},
        "plugins": [p.path if p else "" for p in decision.resolutions.plugins],
    }
    with rt.db.write() as db:
        rt.db.lock_capacity(db)
        if idempotency_key:
            row = db.scalar(
                select(Idempotency).where(Idempotency.user_id == user.id, Idempotency.key == idempotency_key)
            )
            if row is not None:
                return SubmitOutcome(row.status_code, json.loads(row.response_json))
        quota = get_quota(db, user, rt.settings.quota)
        run_id = new_run_id()
        while db.get(Job, run_id) is not None:
            run_id = new_run_id()
        job = Job(
            id=run_id, user_id=user.id, username=user.username, name=spec.metadata.name, exp=exp,
            project=spec.metadata.project, profile=profile, recipe=spec.spec.recipe.name, status="",
            requested_gpus=spec.total_gpus, series_gpus=json.dumps(_series_gpus(decision, profile)),
            priority=quota.priority, spec_json=json.dumps(spec.to_dict(), ensure_ascii=False),
            meta_json=json.dumps(meta, ensure_ascii=False, default=str), warnings_json=json.dumps(warnings),
            package_sha=package_sha, resolved_json=json.dumps(resolved), submitted_at=time.time(),
        )
        db.add(job)
        fit, reason = decide(take_snapshot(db, rt.capacity),
                             demand_of(job, quota.max_concurrent_gpus, quota.max_concurrent_jobs))
        set_status(db, job, fit.status, reason=reason or "admitted", waiting_for=fit.waiting_for)
        if fit is Fit.FITS:
            job.reason = ""
        queued = fit is not Fit.FITS
        status_code = 202 if queued else 200
        message = reason if queued else f"admitted; starting on {profile}"
        body = {
            "job_id": run_id, "run_id": run_id, "queued": queued, "status": job.status, "message": message,
            "requested_gpus": spec.total_gpus, "dry_run": False, "warnings": warnings,
        }
        db.add(Admission(user_id=user.id, at=time.time(), source="submit",
                         verdict="queued" if queued else "accepted", job_id=run_id, exp=exp[:1000],
                         recipe=spec.spec.recipe.name, warnings_json=json.dumps([w.to_dict() for w in decision.warnings])))
        if idempotency_key:
            db.add(Idempotency(user_id=user.id, key=idempotency_key, status_code=status_code,
                               response_json=json.dumps(body), created_at=time.time()))
    rt.write_jobspec(run_id, dumps(spec))
    rt.wake()
    return SubmitOutcome(status_code, body)

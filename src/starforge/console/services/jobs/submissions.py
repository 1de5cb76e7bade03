"""Submissions: stage A, admission, then one transaction that writes the job, its first status (its quota and
capacity decision), its audit row and its idempotency record.

Tier: use case (owns its transactions: reads for the replay and admission, one write under the capacity lock for
the commit). The JobSpec admission parsed is the one committed: it is handed along, never parsed again. Admission
screens the document once, in memory, and only then knows whether its policy checks read the store; nothing is
checked twice.
"""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread
from sqlalchemy import select

from ....contract import Problem
from ...store.models import Idempotency
from ..accounts import roles
from ..accounts.credentials import UserView
from ..admission import AdmissionRequest, Decision, Screened, judge, screen
from ..admission.envelope import Envelope, first_pool_series, open_envelope
from ..admission.meta import restarts_problem
from ..audit import decision_row
from ..context import Runtime
from ..errors import Forbidden, Rejected
from ..observability.timing import observed_submission
from ..outcome import Outcome
from .bundles import store_bundle
from .submission_writer import Admitted

__all__ = [
    "MAX_IDEMPOTENCY_KEY", "admit_request", "check", "check_soon", "record_rejection", "require_writable", "submit",
]

MAX_IDEMPOTENCY_KEY = 255  # idempotency.key column; a longer key is refused, never cut (cut keys would collide)


def require_writable(user: UserView, rt: Runtime) -> None:
    """Raise unless `user` may create jobs now (not a viewer; the console not in maintenance)."""
    rt.maintenance.require_open()
    if not roles.can_submit(user):
        raise Forbidden("viewers can read but not submit jobs")


def _check_request(user: UserView, body: Any) -> AdmissionRequest:
    if not isinstance(body, dict) or "spec" not in body:
        raise Rejected("Invalid request", [Problem("spec", "invalid_request", "the body must be {\"spec\": {...}}")],
                       status=422)
    doc, profile, allow_pending = body["spec"], body.get("profile"), body.get("allow_pending", False)
    if not isinstance(allow_pending, bool):
        raise Rejected("Invalid request", [Problem("allow_pending", "invalid_request",
                                                   "allow_pending must be true or false")], status=422)
    return AdmissionRequest(user, doc, profile if isinstance(profile, str) and profile else first_pool_series(doc),
                            allow_pending=allow_pending)


def _verdict(decision: Decision) -> dict[str, Any]:
    verdict: dict[str, Any] = {
        "ok": decision.ok,
        "problems": [p.to_dict() for p in decision.problems],
        "warnings": [w.to_dict() for w in decision.warnings],
    }
    if decision.spec is not None:
        verdict["requested_gpus"] = decision.spec.total_gpus
        verdict["spec"] = decision.spec.to_dict()
    return verdict


def check(rt: Runtime, *, user: UserView, body: Any) -> dict[str, Any]:
    """Return the full verdict for `{spec, profile?, allow_pending?}` (stages B–E, no bundle); nothing is stored or
    scheduled.

    A body without a `spec` is a 422 naming `spec`. Blocking (it may read the store): call it in the threadpool."""
    return _verdict(admit_request(rt, _check_request(user, body)))


def admit_request(rt: Runtime, request: AdmissionRequest) -> Decision:
    """Admit `request`: screen its document once, then judge it in memory when nothing else is needed, else with
    the store's reads (blocking)."""
    screened = screen(rt.catalog, request)
    if isinstance(screened, Decision):
        return screened
    cached = rt.accounts.cached_quota(request.user)
    if not screened.needs_store(cached):
        return judge(None, rt.settings, rt.catalog, screened, cached, rt.capacity)
    return _judge_from_store(rt, screened)


def _judge_from_store(rt: Runtime, screened: Screened) -> Decision:
    quota = rt.accounts.quota(screened.request.user, rt.settings.quota)
    with rt.db.read() as db:
        return judge(db, rt.settings, rt.catalog, screened, quota, rt.capacity)


async def check_soon(*, rt: Runtime, user: UserView, body: Any) -> dict[str, Any]:
    """Return what `check` does, on the event loop when the verdict needs nothing but memory (a fraction of a
    millisecond: a thread hop would cost more), else from a worker thread (a reference to resolve, the day's usage,
    a quota not cached yet); the document is screened once, on the event loop, either way."""
    screened = screen(rt.catalog, _check_request(user, body))
    if isinstance(screened, Decision):
        return _verdict(screened)
    cached = rt.accounts.cached_quota(user)
    if not screened.needs_store(cached):
        return _verdict(judge(None, rt.settings, rt.catalog, screened, cached, rt.capacity))
    return _verdict(await anyio.to_thread.run_sync(_judge_from_store, rt, screened))


def record_rejection(rt: Runtime, user: UserView, doc: Any, problems: list[Problem], warnings: list[Problem]) -> None:
    """Write the audit row of a refused submission (its own transaction: nothing else of it is stored)."""
    exp = recipe = ""
    if isinstance(doc, dict) and isinstance(doc.get("spec"), dict):
        exp = str(doc["spec"].get("source", {}).get("exp", "") if isinstance(doc["spec"].get("source"), dict) else "")
        recipe_obj = doc["spec"].get("recipe")
        recipe = str(recipe_obj.get("name", "")) if isinstance(recipe_obj, dict) else ""
    with rt.db.write() as db:
        db.add(decision_row(user_id=user.id, source="submit", verdict="rejected", exp=exp, recipe=recipe,
                            problems=problems, warnings=warnings))


def _check_idempotency_key(key: str | None) -> None:
    hint = f"send at most {MAX_IDEMPOTENCY_KEY} printable characters, such as a UUID (36)"
    if key is not None and len(key) > MAX_IDEMPOTENCY_KEY:
        raise Rejected("The submission was rejected", [Problem(
            "Idempotency-Key", "value_too_long",
            f"the Idempotency-Key header is {len(key)} characters long; at most {MAX_IDEMPOTENCY_KEY} are kept", hint)])
    if key is not None and not key.isprintable():
        raise Rejected("The submission was rejected", [Problem(
            "Idempotency-Key", "invalid_request", "the Idempotency-Key header holds a control character", hint)])


def _replay(rt: Runtime, user: UserView, key: str | None) -> Outcome | None:
    if not key:
        return None
    with rt.db.read() as db:
        row = db.scalar(select(Idempotency).where(Idempotency.user_id == user.id, Idempotency.key == key))
        return None if row is None else Outcome(row.status_code, json.loads(row.response_json))


@observed_submission
def submit(rt: Runtime, *, user: UserView, envelope: Envelope, idempotency_key: str | None = None) -> Outcome:
    """Admit a submission and commit it; raise Rejected with every problem, or return the answer (200 started,
    202 queued). Blocking (database, bundle file): call it in the threadpool, while the spooled body is open.

    Order of refusals: the envelope (stage A), the Idempotency-Key header, maintenance mode and the caller's role,
    then a replay of a repeated key, then admission.
    """
    opened = open_envelope(envelope)
    _check_idempotency_key(idempotency_key)
    require_writable(user, rt)
    replayed = _replay(rt, user, idempotency_key)
    if replayed is not None:
        return replayed
    meta = opened.meta
    too_many = restarts_problem(meta.extra, rt.settings.restarts.max_restarts)
    if too_many is not None:
        raise Rejected("The submission was rejected", [too_many])
    bundle = opened.bundle_bytes()
    decision = admit_request(rt, AdmissionRequest(user, meta.spec, meta.profile, bundle, tuple(opened.warnings),
                                           allow_pending=meta.extra.get("allow_pending") is True))
    if not decision.ok or decision.spec is None:
        record_rejection(rt, user, meta.spec, decision.problems, decision.warnings)
        raise Rejected("The JobSpec was rejected", decision.problems, status=decision.status,
                       warnings=decision.warnings)
    package_sha = store_bundle(rt.settings.state_dir, bundle) if bundle else ""
    return rt.submissions.commit(Admitted(user, decision.spec, decision, exp=meta.exp, profile=meta.profile,
                                          meta=meta.extra, package_sha=package_sha, idempotency_key=idempotency_key))
